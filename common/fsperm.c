/* fsperm.c — ownership checks for files and sockets (see fsperm.h). */
#include "common/fsperm.h"
#include "common/errors.h"

#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int sy_group_gid(const char *name, gid_t *gid, char *err, size_t cap)
{
	struct group g, *res = NULL;
	long n = sysconf(_SC_GETGR_R_SIZE_MAX);
	size_t len = n > 0 ? (size_t)n : 16384;
	for (;;) {
		char *buf = malloc(len);
		if (buf == NULL) {
			snprintf(err, cap, "out of memory");
			return SY_ENOMEM;
		}
		int e = getgrnam_r(name, &g, buf, len, &res);
		if (e == ERANGE && len < (1u << 20)) {
			free(buf);
			len *= 2;
			continue;
		}
		if (res != NULL)
			*gid = g.gr_gid;
		free(buf);
		if (res != NULL)
			return SY_OK;
		if (e == 0 || e == ENOENT || e == ESRCH) {
			snprintf(err, cap, "group '%s' does not exist (create it, e.g. with "
				 "systemd-sysusers or groupadd)", name);
			return SY_ENOENT;
		}
		snprintf(err, cap, "looking up group '%s': %s", name, strerror(e));
		return SY_EIO;
	}
}

int sy_socket_path_check(const char *path, const char *what, char *err, size_t cap)
{
	struct stat st;
	if (lstat(path, &st) != 0) {
		if (errno == ENOENT)
			return SY_OK;
		snprintf(err, cap, "%s %s: %s", what, path, strerror(errno));
		return SY_EIO;
	}
	if (S_ISLNK(st.st_mode)) {
		snprintf(err, cap, "%s %s is a symlink; refusing to bind there (remove it)", what,
			 path);
		return SY_EPERM;
	}
	if (st.st_uid != geteuid()) {
		snprintf(err, cap, "%s %s is owned by uid %u, not by this process's user (uid %u); "
			 "refusing it (remove it as its owner or root)", what, path,
			 (unsigned)st.st_uid, (unsigned)geteuid());
		return SY_EPERM;
	}
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(err, cap, "%s %s exists and is not a socket; refusing to replace it", what,
			 path);
		return SY_EPERM;
	}
	return SY_OK;
}

int sy_socket_path_secure(const char *path, gid_t gid, const char *what, char *err, size_t cap)
{
	struct stat st;
	if (lstat(path, &st) != 0) {
		snprintf(err, cap, "%s %s: %s", what, path, strerror(errno));
		return SY_EIO;
	}
	if (!S_ISSOCK(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & S_IRWXO)) {
		snprintf(err, cap, "%s %s: not the socket just bound (mode %04o, uid %u); "
			 "refusing it", what, path, (unsigned)(st.st_mode & 07777),
			 (unsigned)st.st_uid);
		return SY_EPERM;
	}
	if (gid != (gid_t)-1 && st.st_gid != gid && lchown(path, (uid_t)-1, gid) != 0) {
		snprintf(err, cap, "chgrp %s: %s (the daemons' user must be a member of the "
			 "group)", path, strerror(errno));
		return SY_EPERM;
	}
	return SY_OK;
}
