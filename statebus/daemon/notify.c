/* notify.c — systemd integration, isolated (Knot DNS style): READY=1 after
 * start-up, STOPPING=1 on shutdown, STATUS= lines. No-ops outside systemd
 * (NOTIFY_SOCKET unset). */
#include <stdarg.h>
#include <stdio.h>

#include <systemd/sd-daemon.h>

#include "sbd.h"

void sbd_notify_ready(void) { (void)sd_notify(0, "READY=1"); }

void sbd_notify_stopping(void) { (void)sd_notify(0, "STOPPING=1"); }

void sbd_notify_status(const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	(void)sd_notifyf(0, "STATUS=%s", buf);
}
