/* bind.c — binding the statebus's control and query sockets.
 *
 * An ipc:// endpoint is a socket file in a shared directory (default
 * /dev/shm, next to the region), so it follows the region's ownership rule
 * (DESIGN §9): a symlink or a file of another owner at the path is refused,
 * never replaced; the socket is created under umask 0117, i.e. mode 0660
 * (connecting needs write permission: only the daemons' user and group can
 * send requests), and chgrp'd to state.group when one is configured. The
 * umask is process-wide: binds happen at start-up, before any other thread
 * of the daemon runs. tcp:// and inproc:// endpoints bind unchanged.
 */
#include <string.h>
#include <sys/stat.h>

#include <zmq.h>

#include "common/fsperm.h"
#include "sbd.h"

int sbd_bind(struct sbd *d, void *s, const char *ep, const char *what, char *err, size_t cap)
{
	bool ipc = strncmp(ep, "ipc://", 6) == 0;
	const char *path = ep + 6;
	gid_t gid = (gid_t)-1;
	if (ipc) {
		const char *group = d->cfg.state.group;
		int rc = sy_socket_path_check(path, what, err, cap);
		if (rc == SY_OK && group != NULL)
			rc = sy_group_gid(group, &gid, err, cap);
		if (rc != SY_OK)
			return rc;
	}
	mode_t old = ipc ? umask(0117) : 0;
	int brc = zmq_bind(s, ep);
	int zerr = zmq_errno();
	if (ipc)
		umask(old);
	if (brc != 0) {
		snprintf(err, cap, "%s %s: %s", what, ep, zmq_strerror(zerr));
		return SY_EIO;
	}
	if (ipc) {
		int rc = sy_socket_path_secure(path, gid, what, err, cap);
		if (rc != SY_OK) {
			(void)zmq_unbind(s, ep);
			return rc;
		}
	}
	return SY_OK;
}
