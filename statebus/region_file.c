/* region_file.c — opening the region file without trusting its directory.
 *
 * The region lives in a world-writable directory (/dev/shm), so the name can
 * be planted by any local user before a daemon starts. Invariants:
 * - The parent directory is reached component by component with
 *   O_NOFOLLOW; a symlinked component is followed only when root owns the
 *   link (system links such as /var/run → /run), never one another user
 *   planted. The file itself is opened relative to that directory.
 * - A creator makes the file with O_CREAT | O_EXCL | O_NOFOLLOW, mode 0640,
 *   then fchmod/fchown on the descriptor (no window where the name points
 *   elsewhere). An existing file is opened with O_NOFOLLOW | O_NONBLOCK (a
 *   symlink fails, a planted FIFO does not block) and judged by fstat of
 *   that descriptor: a regular file with one link, not writable by group
 *   or other, owned by the effective uid (read-write) — or, read-only, by
 *   the caller, root, or in one of the caller's groups, or read by root.
 *   Anything else is SY_EPERM with a message naming the fix; nothing is
 *   written to a refused file.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fsperm.h"
#include "sb-int.h"

/* Opens the directory holding `path`'s last component; *base points at that
 * component inside path. Returns a directory fd (O_PATH) or a negative sy_err. */
static int open_parent(const char *path, const char **base, char *err, size_t cap)
{
	const char *slash = strrchr(path, '/');
	*base = slash ? slash + 1 : path;
	if (**base == '\0' || strcmp(*base, ".") == 0 || strcmp(*base, "..") == 0) {
		sb_errf(err, cap, "region path %s does not name a file", path);
		return SY_EINVAL;
	}
	int dfd = open(path[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		sb_errf(err, cap, "open %s: %s", path[0] == '/' ? "/" : ".", strerror(errno));
		return SY_EIO;
	}
	const char *p = path;
	while (slash != NULL && p < slash) {
		const char *e = memchr(p, '/', (size_t)(slash - p) + 1);
		size_t n = (size_t)(e - p);
		char comp[256];
		if (n == 0 || (n == 1 && p[0] == '.')) {
			p = e + 1;
			continue;
		}
		if (n >= sizeof(comp)) {
			close(dfd);
			sb_errf(err, cap, "region path %s: component too long", path);
			return SY_EINVAL;
		}
		memcpy(comp, p, n);
		comp[n] = '\0';
		int fd = openat(dfd, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		struct stat st;
		if (fd >= 0 && fstat(fd, &st) == 0 && S_ISLNK(st.st_mode)) {
			close(fd);
			fd = -1;
			if (st.st_uid != 0) {
				close(dfd);
				sb_errf(err, cap, "region path %s: %.*s is a symlink owned by uid %u; "
					"refusing to follow it (give a path without symlinks)", path,
					(int)(e - path), path, (unsigned)st.st_uid);
				return SY_EPERM;
			}
			fd = openat(dfd, comp, O_PATH | O_DIRECTORY | O_CLOEXEC);
		} else if (fd >= 0 && !S_ISDIR(st.st_mode)) {
			close(fd);
			fd = -1;
			errno = ENOTDIR;
		}
		if (fd < 0) {
			int e2 = errno;
			close(dfd);
			sb_errf(err, cap, "region directory %.*s: %s", (int)(e - path), path,
				strerror(e2));
			return e2 == ENOENT ? SY_ENOENT : SY_EIO;
		}
		close(dfd);
		dfd = fd;
		p = e + 1;
	}
	return dfd;
}

static bool in_my_groups(gid_t gid)
{
	if (gid == getegid())
		return true;
	gid_t g[256];
	int n = getgroups(256, g);
	for (int i = 0; i < n; i++)
		if (g[i] == gid)
			return true;
	return false;
}

/* Judges an opened existing file (see the file-top comment). */
static int trust(int fd, const char *path, bool read_only, char *err, size_t cap)
{
	struct stat st;
	if (fstat(fd, &st) != 0) {
		sb_errf(err, cap, "fstat %s: %s", path, strerror(errno));
		return SY_EIO;
	}
	uid_t me = geteuid();
	if (!S_ISREG(st.st_mode)) {
		sb_errf(err, cap, "region %s is not a regular file; refusing it (remove it as "
			"its owner or root: `syctl destroy --shm %s`)", path, path);
		return SY_EPERM;
	}
	if (st.st_nlink != 1) {
		sb_errf(err, cap, "region %s has %ju hard links; refusing it (remove it as its "
			"owner or root: `syctl destroy --shm %s`)", path, (uintmax_t)st.st_nlink,
			path);
		return SY_EPERM;
	}
	bool owner_ok = st.st_uid == me ||
			(read_only && (st.st_uid == 0 || me == 0 || in_my_groups(st.st_gid)));
	if (!owner_ok) {
		sb_errf(err, cap, "region %s is owned by uid %u, not by this process's user "
			"(uid %u); refusing to adopt it: remove it as its owner or root "
			"(`syctl destroy --shm %s`) and let the daemons create it, or "
			"`chown %u %s` if it is yours", path, (unsigned)st.st_uid, (unsigned)me,
			path, (unsigned)me, path);
		return SY_EPERM;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		sb_errf(err, cap, "region %s is writable by group or others (mode %04o); "
			"refusing it: `chmod 0640 %s`, or remove it (`syctl destroy --shm %s`)",
			path, (unsigned)(st.st_mode & 07777), path, path);
		return SY_EPERM;
	}
	return SY_OK;
}

/* Gives a file this process owns its group and mode 0640. */
static int set_group(int fd, const char *path, const char *group, char *err, size_t cap)
{
	gid_t gid;
	int rc = sy_group_gid(group, &gid, err, cap);
	if (rc != SY_OK)
		return rc;
	if (fchown(fd, (uid_t)-1, gid) != 0) {
		sb_errf(err, cap, "chgrp %s %s: %s (the daemons' user must be a member of "
			"group %s)", group, path, strerror(errno), group);
		return SY_EPERM;
	}
	if (fchmod(fd, 0640) != 0) {
		sb_errf(err, cap, "chmod 0640 %s: %s", path, strerror(errno));
		return SY_EIO;
	}
	return SY_OK;
}

int sb_region_file_open(const char *path, int flags, const char *group, int *fd_out,
			char *err, size_t cap)
{
	bool create = (flags & STATEBUS_CREATE) != 0;
	bool read_only = (flags & STATEBUS_READ_ONLY) != 0;
	const char *base;
	int dfd = open_parent(path, &base, err, cap);
	if (dfd < 0)
		return dfd;
	int fd = -1;
	bool made = false;
	if (create) {
		fd = openat(dfd, base, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
		if (fd >= 0)
			made = true;
		else if (errno != EEXIST) {
			int e = errno;
			close(dfd);
			sb_errf(err, cap, "create %s: %s", path, strerror(e));
			return e == EACCES ? SY_EPERM : SY_EIO;
		}
	}
	if (fd < 0) {
		fd = openat(dfd, base, (read_only ? O_RDONLY : O_RDWR) | O_NOFOLLOW | O_NONBLOCK |
					       O_CLOEXEC);
		if (fd < 0) {
			int e = errno;
			close(dfd);
			if (e == ELOOP) {
				sb_errf(err, cap, "region %s is a symlink; refusing to follow it "
					"(remove it: `syctl destroy --shm %s`)", path, path);
				return SY_EPERM;
			}
			sb_errf(err, cap, "open %s: %s", path, strerror(e));
			return e == ENOENT ? SY_ENOENT : e == EACCES ? SY_EPERM : SY_EIO;
		}
		int fl = fcntl(fd, F_GETFL);
		if (fl >= 0)
			(void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	}
	int rc = SY_OK;
	if (made) {
		/* the umask may have narrowed 0640 */
		if (fchmod(fd, 0640) != 0) {
			sb_errf(err, cap, "chmod 0640 %s: %s", path, strerror(errno));
			rc = SY_EIO;
		}
	} else {
		rc = trust(fd, path, read_only, err, cap);
	}
	if (rc == SY_OK && create && group != NULL && group[0] != '\0')
		rc = set_group(fd, path, group, err, cap);
	if (rc != SY_OK) {
		if (made)
			(void)unlinkat(dfd, base, 0);
		close(fd);
		close(dfd);
		return rc;
	}
	close(dfd);
	*fd_out = fd;
	return SY_OK;
}
