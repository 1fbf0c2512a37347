/* region.c — create, attach and validate the shared-memory region.
 *
 * Create-or-attach protocol (one file per host, DESIGN §3):
 *   open (region_file.c: exclusive create 0640 or a trusted existing file,
 *   never through a symlink) → flock(LOCK_EX) → fstat. An empty file, or one whose
 *   magic is still zero (a creator died mid-initialisation), is initialised:
 *   ftruncate to the total size, mmap, write header and zero tables, then
 *   publish the magic last behind a write barrier. A file with a magic is
 *   validated instead. Attach-only takes LOCK_SH, so it waits for a creator
 *   in progress, then validates.
 * Validation never trusts the file: magic, then layout version (another
 * version → SY_EVERSION, before anything else is interpreted), then header
 * size, total size == file size, capacities within limits, and each table's
 * descriptor: 64-byte aligned, after the previous table, count and stride as
 * this build computes them, inside the file. Only then are pointers formed.
 *
 * The writer lock is an OFD byte-range lock on byte 0 (independent of the
 * flock above, released by the kernel when the holder dies, per open file
 * description so two handles in one process also exclude each other).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "sb-int.h"

void sb_errf(char *err, size_t cap, const char *fmt, ...)
{
	if (err == NULL || cap == 0)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, cap, fmt, ap);
	va_end(ap);
}

void statebus_params_default(struct statebus_params *p)
{
	p->max_workers = STATEBUS_DEFAULT_MAX_WORKERS;
	p->max_dp_ranks = STATEBUS_DEFAULT_MAX_DP_RANKS;
	p->max_procs = STATEBUS_DEFAULT_MAX_PROCS;
	p->load_fresh_ns = STATEBUS_LOAD_FRESH_NS;
	p->index_nodes = STATEBUS_DEFAULT_INDEX_NODES;
	p->index_overflow = STATEBUS_DEFAULT_INDEX_NODES / 4;
	p->affinity_entries = STATEBUS_DEFAULT_AFFINITY_ENTRIES;
}

/* Hash buckets of the index: the power of two ≥ index_nodes. */
static uint32_t index_buckets(uint32_t nodes)
{
	uint32_t b = 1;
	while (b < nodes)
		b <<= 1;
	return b;
}

static uint64_t round64(uint64_t n) { return (n + SB_LINE - 1) & ~(uint64_t)(SB_LINE - 1); }

/* Element count and stride of each table for capacities p. */
static void layout_shape(const struct statebus_params *p, uint32_t count[SB_T_COUNT_],
			 uint32_t stride[SB_T_COUNT_])
{
	count[SB_T_PROCS] = p->max_procs;
	stride[SB_T_PROCS] = sizeof(struct sb_proc);
	count[SB_T_WORKERS] = p->max_workers;
	stride[SB_T_WORKERS] = sizeof(struct sb_worker_rec);
	count[SB_T_LOAD] = p->max_workers * p->max_dp_ranks;
	stride[SB_T_LOAD] = sizeof(struct sb_load_rec);
	count[SB_T_INFLIGHT] = p->max_procs * p->max_workers;
	stride[SB_T_INFLIGHT] = sizeof(struct sb_inflight);
	count[SB_T_INODES] = p->index_nodes + 1; /* node 0 = root */
	stride[SB_T_INODES] = sizeof(struct sb_index_node);
	count[SB_T_IBUCKETS] = index_buckets(p->index_nodes);
	stride[SB_T_IBUCKETS] = sizeof(uint32_t);
	count[SB_T_IOVF] = p->index_overflow + 1; /* record 0 = none */
	stride[SB_T_IOVF] = sizeof(struct sb_index_ovf);
	count[SB_T_STREAMS] = p->max_workers * p->max_dp_ranks;
	stride[SB_T_STREAMS] = sizeof(struct sb_stream_rec);
	count[SB_T_AFFINITY] = p->affinity_entries;
	stride[SB_T_AFFINITY] = sizeof(struct sb_affinity_entry);
	count[SB_T_AFFLOCKS] = SB_AFFINITY_LOCKS;
	stride[SB_T_AFFLOCKS] = sizeof(struct sb_affinity_lock);
	count[SB_T_PRINGS] = p->max_procs;
	stride[SB_T_PRINGS] = sizeof(struct sb_pring);
	count[SB_T_PENTRIES] = sb_pred_entries_for(p->index_nodes) + 1; /* entry 0 = none */
	stride[SB_T_PENTRIES] = sizeof(struct sb_pred_entry);
	count[SB_T_PBUCKETS] = index_buckets(sb_pred_entries_for(p->index_nodes));
	stride[SB_T_PBUCKETS] = sizeof(uint32_t);
	count[SB_T_PWORKERS] = p->max_workers;
	stride[SB_T_PWORKERS] = sizeof(struct sb_pred_worker);
	count[SB_T_HEALTH] = p->max_workers;
	stride[SB_T_HEALTH] = sizeof(struct sb_health_rec);
	count[SB_T_CURSORS] = STATEBUS_CURSORS;
	stride[SB_T_CURSORS] = sizeof(struct sb_cursor_rec);
	count[SB_T_QUEUE] = p->max_procs + 1; /* + the writer's row */
	stride[SB_T_QUEUE] = sizeof(struct sb_queue_rec);
}

static int check_params(const struct statebus_params *p, char *err, size_t cap)
{
	if (p->max_workers == 0 || p->max_workers > STATEBUS_MAX_WORKERS_LIMIT ||
	    p->max_dp_ranks == 0 || p->max_dp_ranks > STATEBUS_MAX_DP_RANKS_LIMIT ||
	    p->max_procs == 0 || p->max_procs > STATEBUS_MAX_PROCS_LIMIT ||
	    p->load_fresh_ns == 0 ||
	    p->index_nodes < STATEBUS_INDEX_NODES_MIN || p->index_nodes > STATEBUS_INDEX_NODES_MAX ||
	    p->index_overflow > STATEBUS_INDEX_NODES_MAX || p->max_dp_ranks > SB_INDEX_RANK_MAX + 1 ||
	    p->affinity_entries < STATEBUS_AFFINITY_ENTRIES_MIN ||
	    p->affinity_entries > STATEBUS_AFFINITY_ENTRIES_MAX ||
	    (p->affinity_entries & (p->affinity_entries - 1)) != 0) {
		sb_errf(err, cap, "capacities out of range (workers %u, dp ranks %u, procs %u, "
			"index nodes %u, overflow %u, affinity entries %u: a power of two from "
			"%u to %u)", p->max_workers, p->max_dp_ranks, p->max_procs, p->index_nodes, p->index_overflow, p->affinity_entries,
			STATEBUS_AFFINITY_ENTRIES_MIN, STATEBUS_AFFINITY_ENTRIES_MAX);
		return SY_ERANGE;
	}
	return SY_OK;
}

static void hdr_params(const struct statebus_hdr *h, struct statebus_params *p)
{
	p->max_workers = h->max_workers;
	p->max_dp_ranks = h->max_dp_ranks;
	p->max_procs = h->max_procs;
	p->load_fresh_ns = h->load_fresh_ns;
	p->index_nodes = h->index_nodes;
	p->index_overflow = h->index_overflow;
	p->affinity_entries = h->affinity_entries;
}

/* Lays out the tables after the header; returns the total size. */
static uint64_t layout(const struct statebus_params *p, struct sb_table t[SB_T_COUNT_])
{
	uint32_t count[SB_T_COUNT_], stride[SB_T_COUNT_];
	layout_shape(p, count, stride);
	uint64_t off = SB_HDR_SIZE;
	for (int i = 0; i < SB_T_COUNT_; i++) {
		t[i].off = off;
		t[i].count = count[i];
		t[i].stride = stride[i];
		t[i].size = round64((uint64_t)count[i] * stride[i]);
		off += t[i].size;
	}
	return off;
}

/* Validates a mapped header against the file size (see file-top comment). */
static int validate(const struct statebus_hdr *h, uint64_t file_size, const char *path,
		    char *err, size_t cap)
{
	if (h->magic != STATEBUS_MAGIC) {
		sb_errf(err, cap, "region %s: bad magic %#llx", path, (unsigned long long)h->magic);
		return SY_EMALFORMED;
	}
	if (h->layout_version != STATEBUS_LAYOUT_VERSION) {
		sb_errf(err, cap, "region %s has layout version %u, this build knows %u; "
			"run `syctl destroy`", path, h->layout_version, STATEBUS_LAYOUT_VERSION);
		return SY_EVERSION;
	}
	if (h->header_size != SB_HDR_SIZE || h->total_size != file_size) {
		sb_errf(err, cap, "region %s: header size %u / total size %llu disagree with "
			"%u / file size %llu", path, h->header_size,
			(unsigned long long)h->total_size, SB_HDR_SIZE,
			(unsigned long long)file_size);
		return SY_EMALFORMED;
	}
	struct statebus_params p;
	hdr_params(h, &p);
	if (check_params(&p, err, cap) != SY_OK) {
		size_t n = err ? strnlen(err, cap) : 0;
		if (err && n + 1 < cap)
			sb_errf(err + n, cap - n, " in region %s", path);
		return SY_EMALFORMED;
	}
	uint32_t count[SB_T_COUNT_], stride[SB_T_COUNT_];
	layout_shape(&p, count, stride);
	uint64_t end = SB_HDR_SIZE;
	for (int i = 0; i < SB_T_COUNT_; i++) {
		const struct sb_table *t = &h->tables[i];
		if (t->off % SB_LINE || t->off < end || t->count != count[i] ||
		    t->stride != stride[i] || t->size != round64((uint64_t)count[i] * stride[i]) ||
		    t->off > file_size || t->size > file_size - t->off) {
			sb_errf(err, cap, "region %s: table %d descriptor out of bounds "
				"(offset %llu size %llu count %u stride %u, file %llu bytes)",
				path, i, (unsigned long long)t->off, (unsigned long long)t->size,
				t->count, t->stride, (unsigned long long)file_size);
			return SY_EMALFORMED;
		}
		end = t->off + t->size;
	}
	if (h->index_buckets != index_buckets(h->index_nodes)) {
		sb_errf(err, cap, "region %s: index buckets %u disagree with %u nodes", path,
			h->index_buckets, h->index_nodes);
		return SY_EMALFORMED;
	}
	if (h->global_epoch == 0) {
		sb_errf(err, cap, "region %s: global epoch is zero", path);
		return SY_EMALFORMED;
	}
	return SY_OK;
}

/* Initialises a freshly truncated (zeroed) mapping; magic published last. */
static void initialise(struct statebus_hdr *h, const struct statebus_params *p)
{
	h->layout_version = STATEBUS_LAYOUT_VERSION;
	h->header_size = SB_HDR_SIZE;
	h->total_size = layout(p, h->tables);
	h->max_workers = p->max_workers;
	h->max_dp_ranks = p->max_dp_ranks;
	h->max_procs = p->max_procs;
	h->load_fresh_ns = p->load_fresh_ns;
	h->index_nodes = p->index_nodes;
	h->index_overflow = p->index_overflow;
	h->affinity_entries = p->affinity_entries;
	h->index_buckets = index_buckets(p->index_nodes);
	/* index pools start empty: node_hw/ovf_hw hand out never-used entries */
	h->created_wall_ns = sy_wall_ns();
	h->global_epoch = 1;
	h->index_incarnation = 1;
	cmm_smp_wmb();
	CMM_STORE_SHARED(h->magic, STATEBUS_MAGIC);
	cmm_smp_mb();
}

static int map_region(int fd, uint64_t size, bool read_only, uint8_t **base, const char *path,
		      char *err, size_t cap)
{
	void *m = mmap(NULL, size, read_only ? PROT_READ : PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		sb_errf(err, cap, "mmap %s (%llu bytes): %s", path, (unsigned long long)size,
			strerror(errno));
		return SY_EIO;
	}
	*base = m;
	return SY_OK;
}

int statebus_region_open(const char *path, const struct statebus_params *params, int flags,
			 struct statebus_region **out, char *err, size_t errcap)
{
	size_t path_cap = sizeof(((struct statebus_region *)0)->path);
	if (path != NULL && strlen(path) >= path_cap) {
		sb_errf(err, errcap, "region path too long (%zu bytes, at most %zu)", strlen(path),
			path_cap - 1);
		return SY_EINVAL;
	}
	if (path == NULL || out == NULL || (flags & ~(STATEBUS_CREATE | STATEBUS_READ_ONLY)) != 0 ||
	    flags == (STATEBUS_CREATE | STATEBUS_READ_ONLY)) {
		sb_errf(err, errcap, "invalid arguments to statebus_region_open");
		return SY_EINVAL;
	}
	*out = NULL;
	bool create = (flags & STATEBUS_CREATE) != 0;
	bool read_only = (flags & STATEBUS_READ_ONLY) != 0;
	struct statebus_params p;
	statebus_params_default(&p);
	if (create && params) {
		if (params->max_workers) p.max_workers = params->max_workers;
		if (params->max_dp_ranks) p.max_dp_ranks = params->max_dp_ranks;
		if (params->max_procs) p.max_procs = params->max_procs;
		if (params->load_fresh_ns) p.load_fresh_ns = params->load_fresh_ns;
		if (params->index_nodes) {
			p.index_nodes = params->index_nodes;
			p.index_overflow = params->index_nodes / 4;
		}
		if (params->index_overflow) p.index_overflow = params->index_overflow;
		if (params->affinity_entries) p.affinity_entries = params->affinity_entries;
	}
	int rc = check_params(&p, err, errcap);
	if (rc != SY_OK)
		return rc;

	int fd = -1;
	rc = sb_region_file_open(path, flags, create && params ? params->group : NULL, &fd, err,
				 errcap);
	if (rc != SY_OK)
		return rc;
	if (flock(fd, create ? LOCK_EX : LOCK_SH) != 0) {
		sb_errf(err, errcap, "flock %s: %s", path, strerror(errno));
		close(fd);
		return SY_EIO;
	}
	uint8_t *base = NULL;
	uint64_t size = 0;
	struct stat st;
	if (fstat(fd, &st) != 0) {
		sb_errf(err, errcap, "fstat %s: %s", path, strerror(errno));
		rc = SY_EIO;
		goto fail;
	}
	uint64_t magic = 0;
	if (st.st_size >= (off_t)sizeof(magic) && pread(fd, &magic, sizeof(magic), 0) != sizeof(magic)) {
		sb_errf(err, errcap, "read %s: %s", path, strerror(errno));
		rc = SY_EIO;
		goto fail;
	}
	if (magic == 0) {
		if (!create) {
			sb_errf(err, errcap, "region %s is not initialised", path);
			rc = SY_EBUSY;
			goto fail;
		}
		struct sb_table t[SB_T_COUNT_];
		size = layout(&p, t);
		/* Drop any half-initialised contents, then size the file. */
		if (ftruncate(fd, 0) != 0 || ftruncate(fd, (off_t)size) != 0) {
			sb_errf(err, errcap, "ftruncate %s to %llu bytes: %s", path,
				(unsigned long long)size, strerror(errno));
			rc = SY_EIO;
			goto fail;
		}
		rc = map_region(fd, size, read_only, &base, path, err, errcap);
		if (rc != SY_OK)
			goto fail;
		initialise((struct statebus_hdr *)base, &p);
	} else {
		size = (uint64_t)st.st_size;
		if (size < SB_HDR_SIZE) {
			sb_errf(err, errcap, "region %s: %llu bytes, smaller than its header", path,
				(unsigned long long)size);
			rc = SY_EMALFORMED;
			goto fail;
		}
		rc = map_region(fd, size, read_only, &base, path, err, errcap);
		if (rc != SY_OK)
			goto fail;
		rc = validate((const struct statebus_hdr *)base, size, path, err, errcap);
		if (rc != SY_OK)
			goto fail;
	}
	flock(fd, LOCK_UN);

	struct statebus_region *r = calloc(1, sizeof(*r));
	if (r == NULL) {
		sb_errf(err, errcap, "out of memory");
		rc = SY_ENOMEM;
		goto fail;
	}
	r->base = base;
	r->size = size;
	r->fd = fd;
	r->hdr = (struct statebus_hdr *)base;
	r->global_epoch = &r->hdr->global_epoch;
	r->self_epoch = NULL;
	r->self_slot = -1;
	r->fresh_ns = r->hdr->load_fresh_ns;
	r->read_only = read_only;
	snprintf(r->path, sizeof(r->path), "%s", path);
	*out = r;
	return SY_OK;
fail:
	if (base)
		munmap(base, size);
	close(fd); /* also drops the flock */
	return rc;
}

void statebus_region_close(struct statebus_region *r)
{
	if (r == NULL)
		return;
	statebus_proc_release(r);
	if (r->writer_locked)
		statebus_writer_unlock(r);
	munmap(r->base, r->size);
	close(r->fd);
	free(r);
}

int statebus_region_destroy(const char *path)
{
	if (path == NULL)
		return SY_EINVAL;
	if (unlink(path) != 0)
		return errno == ENOENT ? SY_ENOENT : SY_EIO;
	return SY_OK;
}

void statebus_region_info(const struct statebus_region *r, struct statebus_header_info *out)
{
	const struct statebus_hdr *h = r->hdr;
	memset(out, 0, sizeof(*out));
	out->magic = h->magic;
	out->layout_version = h->layout_version;
	out->total_size = h->total_size;
	hdr_params(h, &out->params);
	out->created_wall_ns = h->created_wall_ns;
	out->global_epoch = CMM_LOAD_SHARED(h->global_epoch);
	out->index_incarnation = CMM_LOAD_SHARED(h->index_incarnation);
	out->daemon_pid = CMM_LOAD_SHARED(h->daemon.pid);
	out->daemon_start_time = CMM_LOAD_SHARED(h->daemon.start_time);
	out->daemon_heartbeat_ns = CMM_LOAD_SHARED(h->daemon.heartbeat_ns);
	out->index_mode = CMM_LOAD_SHARED(h->daemon.index_mode);
	out->procs_off = h->tables[SB_T_PROCS].off;
	out->procs_size = h->tables[SB_T_PROCS].size;
	out->workers_off = h->tables[SB_T_WORKERS].off;
	out->workers_size = h->tables[SB_T_WORKERS].size;
	out->load_off = h->tables[SB_T_LOAD].off;
	out->load_size = h->tables[SB_T_LOAD].size;
	out->inflight_off = h->tables[SB_T_INFLIGHT].off;
	out->inflight_size = h->tables[SB_T_INFLIGHT].size;
	out->index_nodes_off = h->tables[SB_T_INODES].off;
	out->index_nodes_size = h->tables[SB_T_INODES].size;
	out->index_buckets_off = h->tables[SB_T_IBUCKETS].off;
	out->index_buckets_size = h->tables[SB_T_IBUCKETS].size;
	out->index_overflow_off = h->tables[SB_T_IOVF].off;
	out->index_overflow_size = h->tables[SB_T_IOVF].size;
	out->streams_off = h->tables[SB_T_STREAMS].off;
	out->streams_size = h->tables[SB_T_STREAMS].size;
	out->affinity_off = h->tables[SB_T_AFFINITY].off;
	out->affinity_size = h->tables[SB_T_AFFINITY].size;
	out->affinity_locks_off = h->tables[SB_T_AFFLOCKS].off;
	out->affinity_locks_size = h->tables[SB_T_AFFLOCKS].size;
	out->predict_rings_off = h->tables[SB_T_PRINGS].off;
	out->predict_rings_size = h->tables[SB_T_PRINGS].size;
	out->predict_entries_off = h->tables[SB_T_PENTRIES].off;
	out->predict_entries_size = h->tables[SB_T_PENTRIES].size + h->tables[SB_T_PBUCKETS].size +
				    h->tables[SB_T_PWORKERS].size;
	out->health_off = h->tables[SB_T_HEALTH].off;
	out->health_size = h->tables[SB_T_HEALTH].size;
	out->cursors_off = h->tables[SB_T_CURSORS].off;
	out->cursors_size = h->tables[SB_T_CURSORS].size;
	out->queue_off = h->tables[SB_T_QUEUE].off;
	out->queue_size = h->tables[SB_T_QUEUE].size;
}

uint64_t statebus_region_incarnation(const struct statebus_region *r)
{
	return CMM_LOAD_SHARED(r->hdr->index_incarnation);
}

uint64_t statebus_region_bump_incarnation(struct statebus_region *r)
{
	sb_assert_writer(r);
	return uatomic_add_return(&r->hdr->index_incarnation, 1);
}

uint64_t statebus_streams_incarnation(const struct statebus_region *r)
{
	return CMM_LOAD_SHARED(r->hdr->streams_incarnation);
}

void statebus_streams_set_incarnation(struct statebus_region *r, uint64_t inc)
{
	sb_assert_writer(r);
	CMM_STORE_SHARED(r->hdr->streams_incarnation, inc);
}

void statebus_region_set_fresh_ns(struct statebus_region *r, uint64_t fresh_ns)
{
	r->fresh_ns = fresh_ns ? fresh_ns : r->hdr->load_fresh_ns;
}

void *statebus_ptr(const struct statebus_region *r, uint64_t off, uint64_t size)
{
	if (off == 0 || off > r->size || size > r->size - off)
		return NULL;
	return r->base + off;
}

int statebus_writer_lock(struct statebus_region *r, bool wait)
{
	if (r->writer_locked)
		return SY_OK;
	if (r->read_only)
		return SY_EPERM;
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
	while (fcntl(r->fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &fl) != 0) {
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EACCES)
			return SY_EBUSY;
		return SY_EIO;
	}
	r->writer_locked = true;
	/* A previous writer may have died between odd and even. */
	int n = sb_load_repair(r) + sb_workers_repair(r) + sb_index_repair(r) +
		sb_streams_repair(r);
	if (n > 0)
		sy_warn("region %s: repaired %d record(s) left mid-write by a dead writer",
			r->path, n);
	return SY_OK;
}

void statebus_writer_unlock(struct statebus_region *r)
{
	if (!r->writer_locked)
		return;
	struct flock fl = {.l_type = F_UNLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
	(void)fcntl(r->fd, F_OFD_SETLK, &fl);
	r->writer_locked = false;
}

void statebus_daemon_announce(struct statebus_region *r, uint64_t now_ns)
{
	uint64_t st = 0;
	(void)sb_proc_stat(0, &st);
	CMM_STORE_SHARED(r->hdr->daemon.pid, 0);
	cmm_smp_wmb();
	CMM_STORE_SHARED(r->hdr->daemon.start_time, st);
	CMM_STORE_SHARED(r->hdr->daemon.heartbeat_ns, now_ns);
	cmm_smp_wmb();
	CMM_STORE_SHARED(r->hdr->daemon.pid, (int32_t)getpid());
}

void statebus_daemon_heartbeat(struct statebus_region *r, uint64_t now_ns)
{
	CMM_STORE_SHARED(r->hdr->daemon.heartbeat_ns, now_ns);
}

void statebus_daemon_withdraw(struct statebus_region *r)
{
	CMM_STORE_SHARED(r->hdr->daemon.pid, 0);
}

void statebus_index_mode_set(struct statebus_region *r, enum statebus_index_mode mode)
{
	if (!r->read_only)
		CMM_STORE_SHARED(r->hdr->daemon.index_mode, (uint32_t)mode);
}

enum statebus_index_mode statebus_index_mode(const struct statebus_region *r)
{
	uint32_t m = CMM_LOAD_SHARED(r->hdr->daemon.index_mode);
	return m <= STATEBUS_INDEX_MODE_OFF ? (enum statebus_index_mode)m : STATEBUS_INDEX_MODE_UNKNOWN;
}

bool statebus_daemon_live(const struct statebus_region *r, uint64_t now_ns, uint64_t max_age_ns)
{
	int32_t pid = CMM_LOAD_SHARED(r->hdr->daemon.pid);
	cmm_smp_rmb();
	uint64_t st = CMM_LOAD_SHARED(r->hdr->daemon.start_time);
	uint64_t hb = CMM_LOAD_SHARED(r->hdr->daemon.heartbeat_ns);
	if (pid <= 0)
		return false;
	uint64_t cur = 0;
	if (sb_proc_stat(pid, &cur) != SY_OK || cur != st)
		return false;
	return now_ns < hb || now_ns - hb <= max_age_ns;
}

void statebus_counter_add(struct statebus_region *r, unsigned idx, uint64_t delta)
{
	if (idx < STATEBUS_COUNTERS_MAX)
		(void)uatomic_add_return(&r->hdr->counters[idx], delta);
}

uint64_t statebus_counter_get(const struct statebus_region *r, unsigned idx)
{
	return idx < STATEBUS_COUNTERS_MAX ? CMM_LOAD_SHARED(r->hdr->counters[idx]) : 0;
}
