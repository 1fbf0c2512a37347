/* fsperm.h — ownership checks for the files and sockets the daemons put in
 * shared directories (DESIGN §9 "Region ownership").
 *
 * Functions return 0 or a negative sy_err and, on failure, write a one-line
 * message naming the fix into err (cap bytes, NUL-terminated when cap > 0).
 */
#ifndef SY_COMMON_FSPERM_H
#define SY_COMMON_FSPERM_H

#include <stddef.h>
#include <sys/types.h>

/* Group name → gid (getgrnam_r). Errors: SY_ENOENT (no such group),
 * SY_EIO, SY_ENOMEM. */
int sy_group_gid(const char *name, gid_t *gid, char *err, size_t cap);

/* Before binding a unix socket at `path`: absent is fine, and so is a
 * socket owned by the effective uid (a previous run's, replaced by the
 * bind). A symlink, a file of another owner or anything but a socket is
 * SY_EPERM; `what` names the socket in the message. Errors: SY_EPERM,
 * SY_EIO. */
int sy_socket_path_check(const char *path, const char *what, char *err, size_t cap);

/* After binding: the path must be a socket owned by the effective uid and
 * not accessible to others (SY_EPERM otherwise); with gid != (gid_t)-1
 * its group becomes gid (lchown, no symlink followed). Errors: SY_EPERM,
 * SY_EIO. */
int sy_socket_path_secure(const char *path, gid_t gid, const char *what, char *err, size_t cap);

#endif
