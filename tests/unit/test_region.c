/* test_region.c — region create/attach, validation of a hostile header,
 * layout-version mismatch, incarnation, liveness and bounds-checked offsets;
 * ownership: exclusive create 0640, refusal of planted symlinks, FIFOs,
 * hard links, files of other owners or writable by group/other, the
 * optional group and read-only attach. Cases that need another owner run
 * only as root (they chown to nobody, uid/gid 65534). */
#include <check.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "sb_test.h"
#include "statebus/sb-int.h"
#include "sy_check.h"

START_TEST(test_create_then_attach_sees_same_capacities)
{
	char path[64];
	struct statebus_region *a = sbt_create_small(path, sizeof(path));
	struct statebus_region *b = NULL;
	char err[256];
	ck_assert_int_eq(statebus_region_open(path, NULL, STATEBUS_ATTACH_ONLY, &b, err, sizeof(err)), SY_OK);
	struct statebus_header_info ia, ib;
	statebus_region_info(a, &ia);
	statebus_region_info(b, &ib);
	ck_assert_uint_eq(ia.magic, STATEBUS_MAGIC);
	ck_assert_uint_eq(ib.layout_version, STATEBUS_LAYOUT_VERSION);
	ck_assert_uint_eq(ib.params.max_workers, 8);
	ck_assert_uint_eq(ib.params.max_dp_ranks, 4);
	ck_assert_uint_eq(ib.params.max_procs, 8);
	ck_assert_uint_eq(ib.params.load_fresh_ns, STATEBUS_LOAD_FRESH_NS);
	ck_assert_uint_eq(ia.total_size, ib.total_size);
	/* a second CREATE attaches and ignores its params */
	struct statebus_params other = {.max_workers = 99};
	struct statebus_region *c = sbt_create(path, &other);
	ck_assert_uint_eq(statebus_workers_capacity(c), 8);
	statebus_region_close(a);
	statebus_region_close(b);
	statebus_region_close(c);
	ck_assert_int_eq(statebus_region_destroy(path), SY_OK);
	ck_assert_int_eq(statebus_region_destroy(path), SY_ENOENT);
}
END_TEST

START_TEST(test_attach_only_missing_region_is_enoent)
{
	char path[64], err[256] = "";
	sbt_path(path, sizeof(path));
	struct statebus_region *r = NULL;
	ck_assert_int_eq(statebus_region_open(path, NULL, STATEBUS_ATTACH_ONLY, &r, err, sizeof(err)), SY_ENOENT);
	ck_assert_ptr_null(r);
	ck_assert(strlen(err) > 0);
}
END_TEST

START_TEST(test_region_survives_creator_exit)
{
	char path[64];
	sbt_path(path, sizeof(path));
	pid_t pid = fork();
	if (pid == 0) {
		struct statebus_region *r = NULL;
		struct statebus_params p = sbt_small();
		if (statebus_region_open(path, &p, STATEBUS_CREATE, &r, NULL, 0) != SY_OK)
			_exit(1);
		if (statebus_writer_lock(r, true) != SY_OK)
			_exit(2);
		struct statebus_worker w = sbt_worker("http://a:1", 1);
		uint32_t s, g;
		if (statebus_worker_add(r, &w, &s, &g) != SY_OK)
			_exit(3);
		_exit(0); /* no close: the process just ends */
	}
	int st;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	struct statebus_region *r = NULL;
	ck_assert_int_eq(statebus_region_open(path, NULL, STATEBUS_ATTACH_ONLY, &r, NULL, 0), SY_OK);
	uint32_t slot, gen;
	ck_assert_int_eq(statebus_worker_find(r, "http://a:1", &slot, &gen), SY_OK);
	/* the dead creator's writer lock was released by the kernel */
	ck_assert_int_eq(statebus_writer_lock(r, false), SY_OK);
	sbt_destroy(r, path);
}
END_TEST

/* Rewrites bytes of the region file directly, as a corrupting process would. */
static void poke(const char *path, off_t off, const void *v, size_t n)
{
	int fd = open(path, O_RDWR);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, v, n, off), (ssize_t)n);
	close(fd);
}

START_TEST(test_other_layout_version_is_eversion_with_destroy_hint)
{
	char path[64], err[256] = "";
	sbt_path(path, sizeof(path));
	struct statebus_params p = sbt_small();
	statebus_region_close(sbt_create(path, &p));
	uint32_t v = STATEBUS_LAYOUT_VERSION + 7;
	poke(path, offsetof(struct statebus_hdr, layout_version), &v, sizeof(v));
	struct statebus_region *r = NULL;
	ck_assert_int_eq(statebus_region_open(path, NULL, STATEBUS_CREATE, &r, err, sizeof(err)), SY_EVERSION);
	ck_assert_ptr_null(r);
	char want[96];
	snprintf(want, sizeof(want), "has layout version %u, this build knows %u",
		 STATEBUS_LAYOUT_VERSION + 7, STATEBUS_LAYOUT_VERSION);
	ck_assert_msg(strstr(err, want) != NULL, "%s", err);
	ck_assert_ptr_nonnull(strstr(err, "syctl destroy"));
	statebus_region_destroy(path);
}
END_TEST

START_TEST(test_corrupt_header_fields_are_emalformed_not_crash)
{
	struct { off_t off; uint64_t val; size_t n; } cases[] = {
		{offsetof(struct statebus_hdr, magic), 0x1234, 8},
		{offsetof(struct statebus_hdr, total_size), 1u << 30, 8},
		{offsetof(struct statebus_hdr, header_size), 17, 4},
		{offsetof(struct statebus_hdr, max_workers), 0, 4},
		{offsetof(struct statebus_hdr, max_workers), 9, 4},
		{offsetof(struct statebus_hdr, affinity_entries), 100, 4},
		{offsetof(struct statebus_hdr, tables[SB_T_LOAD].off), UINT64_C(1) << 40, 8},
		{offsetof(struct statebus_hdr, tables[SB_T_INODES].off), 4096 + 64, 8},
		{offsetof(struct statebus_hdr, tables[SB_T_IOVF].size), UINT64_C(1) << 40, 8},
		{offsetof(struct statebus_hdr, tables[SB_T_WORKERS].stride), 8, 4},
		{offsetof(struct statebus_hdr, global_epoch), 0, 8},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char path[64], err[256] = "";
		sbt_path(path, sizeof(path));
		struct statebus_params p = sbt_small();
		statebus_region_close(sbt_create(path, &p));
		poke(path, cases[i].off, &cases[i].val, cases[i].n);
		struct statebus_region *r = NULL;
		int rc = statebus_region_open(path, NULL, STATEBUS_ATTACH_ONLY, &r, err, sizeof(err));
		ck_assert_msg(rc == SY_EMALFORMED, "case %zu: rc %d (%s)", i, rc, err);
		ck_assert_ptr_null(r);
		ck_assert_msg(strstr(err, path) != NULL, "case %zu: message names the region: %s", i, err);
		statebus_region_destroy(path);
	}
}
END_TEST

START_TEST(test_truncated_file_is_emalformed)
{
	char path[64], err[256] = "";
	sbt_path(path, sizeof(path));
	struct statebus_params p = sbt_small();
	statebus_region_close(sbt_create(path, &p));
	ck_assert_int_eq(truncate(path, 8192), 0);
	struct statebus_region *r = NULL;
	ck_assert_int_eq(statebus_region_open(path, NULL, STATEBUS_ATTACH_ONLY, &r, err, sizeof(err)), SY_EMALFORMED);
	ck_assert_int_eq(truncate(path, 100), 0);
	ck_assert_int_eq(statebus_region_open(path, NULL, STATEBUS_ATTACH_ONLY, &r, err, sizeof(err)), SY_EMALFORMED);
	statebus_region_destroy(path);
}
END_TEST

START_TEST(test_uninitialised_file_is_initialised_by_create_refused_by_attach)
{
	char path[64];
	sbt_path(path, sizeof(path));
	int fd = open(path, O_RDWR | O_CREAT, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 65536), 0); /* a creator died before the magic */
	close(fd);
	struct statebus_region *r = NULL;
	ck_assert_int_eq(statebus_region_open(path, NULL, STATEBUS_ATTACH_ONLY, &r, NULL, 0), SY_EBUSY);
	struct statebus_params p = sbt_small();
	r = sbt_create(path, &p);
	ck_assert_uint_eq(statebus_workers_capacity(r), 8);
	sbt_destroy(r, path);
}
END_TEST

START_TEST(test_params_over_limits_are_erange)
{
	char path[64];
	sbt_path(path, sizeof(path));
	struct statebus_params p = sbt_small();
	p.affinity_entries = 100; /* not a power of two */
	struct statebus_region *r = NULL;
	ck_assert_int_eq(statebus_region_open(path, &p, STATEBUS_CREATE, &r, NULL, 0), SY_ERANGE);
	ck_assert_int_eq(access(path, F_OK), -1);
}
END_TEST

START_TEST(test_incarnation_bump_is_seen_by_other_handles)
{
	char path[64];
	struct statebus_region *w = sbt_create_small(path, sizeof(path));
	struct statebus_region *rd = sbt_create(path, NULL);
	uint64_t before = statebus_region_incarnation(rd);
	ck_assert_int_eq(statebus_writer_lock(w, true), SY_OK);
	ck_assert_uint_eq(statebus_region_bump_incarnation(w), before + 1);
	ck_assert_uint_eq(statebus_region_incarnation(rd), before + 1);
	/* the writer lock excludes a second handle, even in the same process */
	ck_assert_int_eq(statebus_writer_lock(rd, false), SY_EBUSY);
	statebus_writer_unlock(w);
	ck_assert_int_eq(statebus_writer_lock(rd, false), SY_OK);
	statebus_region_close(w);
	sbt_destroy(rd, path);
}
END_TEST

START_TEST(test_daemon_liveness_follows_pid_and_heartbeat)
{
	char path[64];
	sbt_path(path, sizeof(path));
	struct statebus_region *r = sbt_create(path, NULL);
	uint64_t now = sy_mono_ns();
	ck_assert(!statebus_daemon_live(r, now, 3000000000ull));
	statebus_daemon_announce(r, now);
	ck_assert(statebus_daemon_live(r, now + 1000, 3000000000ull));
	ck_assert(!statebus_daemon_live(r, now + 4000000000ull, 3000000000ull));
	statebus_daemon_heartbeat(r, now + 4000000000ull);
	ck_assert(statebus_daemon_live(r, now + 4000000000ull, 3000000000ull));
	statebus_daemon_withdraw(r);
	ck_assert(!statebus_daemon_live(r, now, 3000000000ull));
	sbt_destroy(r, path);
}
END_TEST

/* statebus.index as the header says it: unknown until a statebus sets it,
 * seen by every handle, kept when the statebus withdraws, an unknown value
 * read as unknown (nothing in the region is trusted). */
START_TEST(test_index_mode_word)
{
	char path[64];
	sbt_path(path, sizeof(path));
	struct statebus_region *r = sbt_create(path, NULL);
	struct statebus_region *r2 = NULL;
	char err[256];
	ck_assert_int_eq(statebus_region_open(path, NULL, STATEBUS_ATTACH_ONLY, &r2, err, sizeof(err)),
			 SY_OK);
	ck_assert_int_eq(statebus_index_mode(r2), STATEBUS_INDEX_MODE_UNKNOWN);
	statebus_index_mode_set(r, STATEBUS_INDEX_MODE_OFF);
	ck_assert_int_eq(statebus_index_mode(r2), STATEBUS_INDEX_MODE_OFF);
	statebus_daemon_announce(r, sy_mono_ns());
	statebus_daemon_withdraw(r);
	ck_assert_int_eq(statebus_index_mode(r2), STATEBUS_INDEX_MODE_OFF);
	struct statebus_header_info h;
	statebus_region_info(r2, &h);
	ck_assert_uint_eq(h.index_mode, STATEBUS_INDEX_MODE_OFF);
	ck_assert_uint_gt(h.cursors_size, 0);
	ck_assert_uint_ge(h.cursors_off, h.health_off + h.health_size);
	r->hdr->daemon.index_mode = 77; /* a scribbled word */
	ck_assert_int_eq(statebus_index_mode(r2), STATEBUS_INDEX_MODE_UNKNOWN);
	statebus_region_close(r2);
	sbt_destroy(r, path);
}
END_TEST

START_TEST(test_ptr_rejects_out_of_region_offsets)
{
	char path[64];
	sbt_path(path, sizeof(path));
	struct statebus_region *r = sbt_create(path, NULL);
	struct statebus_header_info h;
	statebus_region_info(r, &h);
	ck_assert_ptr_nonnull(statebus_ptr(r, h.index_nodes_off, 256));
	ck_assert_ptr_null(statebus_ptr(r, 0, 8));
	ck_assert_ptr_null(statebus_ptr(r, h.total_size, 1));
	ck_assert_ptr_null(statebus_ptr(r, h.total_size - 8, 16));
	ck_assert_ptr_null(statebus_ptr(r, UINT64_MAX - 4, 8));
	ck_assert_ptr_nonnull(statebus_ptr(r, h.total_size - 8, 8));
	statebus_counter_add(r, 3, 5);
	statebus_counter_add(r, STATEBUS_COUNTERS_MAX, 5);
	ck_assert_uint_eq(statebus_counter_get(r, 3), 5);
	ck_assert_uint_eq(statebus_counter_get(r, STATEBUS_COUNTERS_MAX), 0);
	sbt_destroy(r, path);
}
END_TEST

/* ---- ownership (region_file.c) ------------------------------------------ */

#define NOBODY 65534

/* A fresh empty directory under /dev/shm for one ownership case. */
static void own_dir(char *dir, size_t cap)
{
	static unsigned n;
	snprintf(dir, cap, "/dev/shm/sy-test-own-%d-%u", (int)getpid(), n++);
	ck_assert_int_eq(mkdir(dir, 0755), 0);
}

static void rm_dir(const char *dir)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

static int open_rc(const char *path, int flags, char *err, size_t cap)
{
	struct statebus_region *r = NULL;
	struct statebus_params p = sbt_small();
	err[0] = '\0';
	int rc = statebus_region_open(path, flags == STATEBUS_CREATE ? &p : NULL, flags, &r, err, cap);
	if (rc == SY_OK)
		statebus_region_close(r);
	else
		ck_assert_ptr_null(r);
	return rc;
}

START_TEST(test_create_makes_a_0640_file_owned_by_the_caller_despite_umask)
{
	char path[64];
	sbt_path(path, sizeof(path));
	mode_t old = umask(0077);
	struct statebus_params p = sbt_small();
	struct statebus_region *r = sbt_create(path, &p);
	umask(old);
	struct stat st;
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_uint_eq(st.st_mode & 07777, 0640);
	ck_assert_uint_eq(st.st_uid, geteuid());
	sbt_destroy(r, path);
}
END_TEST

START_TEST(test_symlink_at_the_path_is_refused_and_its_target_untouched)
{
	char dir[64], path[96], target[96], dangling[96], err[512];
	own_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/region", dir);
	snprintf(target, sizeof(target), "%s/precious", dir);
	snprintf(dangling, sizeof(dangling), "%s/absent", dir);
	FILE *f = fopen(target, "w");
	ck_assert_ptr_nonnull(f);
	fputs("precious", f);
	fclose(f);
	ck_assert_int_eq(symlink(target, path), 0);
	int flags[] = {STATEBUS_CREATE, STATEBUS_ATTACH_ONLY, STATEBUS_READ_ONLY};
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(open_rc(path, flags[i], err, sizeof(err)), SY_EPERM);
		ck_assert_msg(strstr(err, "symlink") != NULL, "%s", err);
	}
	struct stat st;
	ck_assert_int_eq(stat(target, &st), 0);
	ck_assert_int_eq(st.st_size, 8);
	ck_assert_uint_eq(st.st_mode & 07777, 0644);
	/* a dangling link: its target is not created */
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(symlink(dangling, path), 0);
	ck_assert_int_eq(open_rc(path, STATEBUS_CREATE, err, sizeof(err)), SY_EPERM);
	ck_assert_int_eq(access(dangling, F_OK), -1);
	rm_dir(dir);
}
END_TEST

/* A symlinked directory on the way is followed only when root owns the link. */
START_TEST(test_symlinked_directory_not_owned_by_root_is_refused)
{
	char dir[64], real[96], link[96], path[128], err[512];
	own_dir(dir, sizeof(dir));
	snprintf(real, sizeof(real), "%s/real", dir);
	snprintf(link, sizeof(link), "%s/link", dir);
	snprintf(path, sizeof(path), "%s/region", link);
	ck_assert_int_eq(mkdir(real, 0755), 0);
	ck_assert_int_eq(symlink(real, link), 0);
	if (geteuid() == 0) {
		/* root's own link is a system link: followed */
		ck_assert_int_eq(open_rc(path, STATEBUS_CREATE, err, sizeof(err)), SY_OK);
		ck_assert_int_eq(unlink(path), 0);
		ck_assert_int_eq(lchown(link, NOBODY, NOBODY), 0);
	}
	ck_assert_int_eq(open_rc(path, STATEBUS_CREATE, err, sizeof(err)), SY_EPERM);
	ck_assert_msg(strstr(err, "is a symlink owned by uid") != NULL, "%s", err);
	char inside[128];
	snprintf(inside, sizeof(inside), "%s/region", real);
	ck_assert_int_eq(access(inside, F_OK), -1);
	rm_dir(dir);
}
END_TEST

START_TEST(test_fifo_at_the_path_is_refused_without_blocking)
{
	char path[64], err[512];
	sbt_path(path, sizeof(path));
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	ck_assert_int_eq(open_rc(path, STATEBUS_CREATE, err, sizeof(err)), SY_EPERM);
	ck_assert_msg(strstr(err, "not a regular file") != NULL, "%s", err);
	ck_assert_int_eq(open_rc(path, STATEBUS_READ_ONLY, err, sizeof(err)), SY_EPERM);
	unlink(path);
}
END_TEST

START_TEST(test_hard_linked_file_is_refused)
{
	char path[64], other[64], err[512];
	struct statebus_region *r = sbt_create_small(path, sizeof(path));
	statebus_region_close(r);
	sbt_path(other, sizeof(other));
	ck_assert_int_eq(link(path, other), 0);
	ck_assert_int_eq(open_rc(path, STATEBUS_CREATE, err, sizeof(err)), SY_EPERM);
	ck_assert_msg(strstr(err, "hard links") != NULL, "%s", err);
	ck_assert_int_eq(unlink(other), 0);
	ck_assert_int_eq(open_rc(path, STATEBUS_ATTACH_ONLY, err, sizeof(err)), SY_OK);
	statebus_region_destroy(path);
}
END_TEST

START_TEST(test_group_or_other_writable_file_is_refused_with_chmod_hint)
{
	char path[64], err[512];
	struct statebus_region *r = sbt_create_small(path, sizeof(path));
	statebus_region_close(r);
	mode_t modes[] = {0660, 0602, 0666};
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(chmod(path, modes[i]), 0);
		ck_assert_int_eq(open_rc(path, STATEBUS_CREATE, err, sizeof(err)), SY_EPERM);
		ck_assert_msg(strstr(err, "writable by group or others") != NULL, "%s", err);
		ck_assert_msg(strstr(err, "chmod 0640") != NULL, "%s", err);
		ck_assert_int_eq(open_rc(path, STATEBUS_ATTACH_ONLY, err, sizeof(err)), SY_EPERM);
		ck_assert_int_eq(open_rc(path, STATEBUS_READ_ONLY, err, sizeof(err)), SY_EPERM);
	}
	ck_assert_int_eq(chmod(path, 0640), 0);
	ck_assert_int_eq(open_rc(path, STATEBUS_ATTACH_ONLY, err, sizeof(err)), SY_OK);
	statebus_region_destroy(path);
}
END_TEST

START_TEST(test_unknown_group_is_refused_and_leaves_no_file)
{
	char path[64], err[512] = "";
	sbt_path(path, sizeof(path));
	struct statebus_params p = sbt_small();
	p.group = "sy-no-such-group-x";
	struct statebus_region *r = NULL;
	ck_assert_int_eq(statebus_region_open(path, &p, STATEBUS_CREATE, &r, err, sizeof(err)), SY_ENOENT);
	ck_assert_msg(strstr(err, "group 'sy-no-such-group-x' does not exist") != NULL, "%s", err);
	ck_assert_int_eq(access(path, F_OK), -1);
}
END_TEST

START_TEST(test_read_only_attach_reads_and_refuses_slot_and_writer_lock)
{
	char path[64], err[256];
	struct statebus_region *w = sbt_create_small(path, sizeof(path));
	ck_assert_int_eq(statebus_writer_lock(w, true), SY_OK);
	struct statebus_worker wk = sbt_worker("http://a:1", 1);
	uint32_t slot, gen;
	ck_assert_int_eq(statebus_worker_add(w, &wk, &slot, &gen), SY_OK);
	struct statebus_region *r = NULL;
	ck_assert_int_eq(statebus_region_open(path, NULL, STATEBUS_READ_ONLY, &r, err, sizeof(err)), SY_OK);
	uint32_t s2, g2;
	ck_assert_int_eq(statebus_worker_find(r, "http://a:1", &s2, &g2), SY_OK);
	ck_assert_uint_eq(s2, slot);
	ck_assert_int_eq(statebus_proc_claim(r, STATEBUS_PROC_TOOL, NULL), SY_EPERM);
	ck_assert_int_eq(statebus_writer_lock(r, false), SY_EPERM);
	statebus_region_close(r);
	ck_assert_int_eq(statebus_region_open(path, NULL, STATEBUS_CREATE | STATEBUS_READ_ONLY, &r,
					      err, sizeof(err)), SY_EINVAL);
	sbt_destroy(w, path);
}
END_TEST

/* [root] The attack: an empty 0666 file planted by nobody at the path. */
START_TEST(test_file_planted_by_another_user_is_refused_and_untouched)
{
	char path[64], err[512];
	sbt_path(path, sizeof(path));
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fchown(fd, NOBODY, NOBODY), 0);
	ck_assert_int_eq(fchmod(fd, 0666), 0);
	close(fd);
	int flags[] = {STATEBUS_CREATE, STATEBUS_ATTACH_ONLY};
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(open_rc(path, flags[i], err, sizeof(err)), SY_EPERM);
		ck_assert_msg(strstr(err, "owned by uid 65534") != NULL, "%s", err);
		ck_assert_msg(strstr(err, "syctl destroy") != NULL, "%s", err);
	}
	struct stat st;
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert_int_eq(st.st_size, 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0666);
	ck_assert_uint_eq(st.st_uid, NOBODY);
	/* 0640 does not make it ours */
	ck_assert_int_eq(chmod(path, 0640), 0);
	ck_assert_int_eq(open_rc(path, STATEBUS_CREATE, err, sizeof(err)), SY_EPERM);
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert_int_eq(st.st_size, 0);
	unlink(path);
}
END_TEST

/* [root] state.group: the file gets the group and 0640; a member attaches
 * read-only (not read-write), a non-member cannot open it at all. */
START_TEST(test_group_member_attaches_read_only)
{
	char path[64], err[512];
	sbt_path(path, sizeof(path));
	struct group *g = getgrgid(NOBODY);
	ck_assert_ptr_nonnull(g);
	char gname[64];
	snprintf(gname, sizeof(gname), "%s", g->gr_name);
	struct statebus_params p = sbt_small();
	p.group = gname;
	struct statebus_region *r = sbt_create(path, &p);
	struct stat st;
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_gid, NOBODY);
	ck_assert_uint_eq(st.st_mode & 07777, 0640);
	statebus_region_close(r);
	for (int member = 1; member >= 0; member--) {
		pid_t pid = fork();
		if (pid == 0) {
			gid_t gid = member ? NOBODY : NOBODY - 1;
			if (setgroups(0, NULL) != 0 || setresgid(gid, gid, gid) != 0 ||
			    setresuid(NOBODY, NOBODY, NOBODY) != 0)
				_exit(10);
			if (open_rc(path, STATEBUS_ATTACH_ONLY, err, sizeof(err)) != SY_EPERM)
				_exit(11);
			int rc = open_rc(path, STATEBUS_READ_ONLY, err, sizeof(err));
			_exit(member ? (rc == SY_OK ? 0 : 12) : (rc == SY_EPERM ? 0 : 13));
		}
		int ws;
		ck_assert_int_eq(waitpid(pid, &ws, 0), pid);
		ck_assert_msg(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "member %d: status %d", member, ws);
	}
	/* a region made without the group gets it from a creator that owns it */
	ck_assert_int_eq(chown(path, 0, 0), 0);
	r = sbt_create(path, &p);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_gid, NOBODY);
	sbt_destroy(r, path);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("region");
	TCase *tc = tcase_create("region");
	tcase_add_test(tc, test_create_then_attach_sees_same_capacities);
	tcase_add_test(tc, test_attach_only_missing_region_is_enoent);
	tcase_add_test(tc, test_region_survives_creator_exit);
	tcase_add_test(tc, test_other_layout_version_is_eversion_with_destroy_hint);
	tcase_add_test(tc, test_corrupt_header_fields_are_emalformed_not_crash);
	tcase_add_test(tc, test_truncated_file_is_emalformed);
	tcase_add_test(tc, test_uninitialised_file_is_initialised_by_create_refused_by_attach);
	tcase_add_test(tc, test_params_over_limits_are_erange);
	tcase_add_test(tc, test_incarnation_bump_is_seen_by_other_handles);
	tcase_add_test(tc, test_create_makes_a_0640_file_owned_by_the_caller_despite_umask);
	tcase_add_test(tc, test_symlink_at_the_path_is_refused_and_its_target_untouched);
	tcase_add_test(tc, test_symlinked_directory_not_owned_by_root_is_refused);
	tcase_add_test(tc, test_fifo_at_the_path_is_refused_without_blocking);
	tcase_add_test(tc, test_hard_linked_file_is_refused);
	tcase_add_test(tc, test_group_or_other_writable_file_is_refused_with_chmod_hint);
	tcase_add_test(tc, test_unknown_group_is_refused_and_leaves_no_file);
	tcase_add_test(tc, test_read_only_attach_reads_and_refuses_slot_and_writer_lock);
	if (geteuid() == 0) {
		tcase_add_test(tc, test_file_planted_by_another_user_is_refused_and_untouched);
		tcase_add_test(tc, test_group_member_attaches_read_only);
	} else {
		fprintf(stderr, "test_region: not root: the other-owner cases are not run\n");
	}
	tcase_add_test(tc, test_daemon_liveness_follows_pid_and_heartbeat);
	tcase_add_test(tc, test_ptr_rejects_out_of_region_offsets);
	tcase_add_test(tc, test_index_mode_word);
	suite_add_tcase(s, tc);
	return sy_check_run(s);
}
