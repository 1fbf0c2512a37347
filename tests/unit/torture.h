/* torture.h — the fork/pipe/report plumbing shared by the multi-process
 * torture tests (test_torture.c, test_index_torture.c). Header-only.
 *
 * Shape: the parent (single writer) forks NREADERS children with
 * torture_fork(); each child attaches with torture_attach(), works until a
 * deadline and ends with torture_report(), which writes its fixed-size
 * report struct (carrying a message on failure) to its pipe and _exits.
 * The parent then calls torture_collect() per child: it reads the report,
 * reaps the child and asserts that a whole report came and the child
 * exited 0 (else it fails with the child's message). */
#ifndef SY_TESTS_TORTURE_H
#define SY_TESTS_TORTURE_H

#include <check.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sb_test.h"
#include "sy_check.h"

/* Seconds to run: SY_TORTURE_SECONDS (meson option torture_seconds),
 * 2 when unset, at least 1. */
static inline unsigned torture_seconds(void)
{
	const char *s = getenv("SY_TORTURE_SECONDS");
	unsigned v = s ? (unsigned)atoi(s) : 2;
	return v ? v : 1;
}

/* Child side: attaches to the region at path and claims a router slot.
 * Returns false (r may be left NULL) when either fails. */
static inline bool torture_attach(const char *path, struct statebus_region **r)
{
	return statebus_region_open(path, NULL, STATEBUS_ATTACH_ONLY, r, NULL, 0) == SY_OK &&
	       statebus_proc_claim(*r, STATEBUS_PROC_ROUTER, NULL) == SY_OK;
}

/* Child side: writes the report (size bytes) to fd and exits with rc, or
 * with 2 when the report could not be written whole. */
static inline void __attribute__((noreturn)) torture_report(int fd, const void *rep, size_t size,
							     int rc)
{
	if (write(fd, rep, size) != (ssize_t)size)
		rc = 2;
	_exit(rc);
}

/* Parent side: forks one reader with its own pipe. In the child returns
 * the pipe's write end (the child then works and ends in torture_report);
 * in the parent fills *pid and *fd (the read end) and returns -1. */
static inline int torture_fork(pid_t *pid, int *fd)
{
	int pfd[2];
	ck_assert_int_eq(pipe(pfd), 0);
	*pid = fork();
	ck_assert_int_ge(*pid, 0);
	if (*pid == 0) {
		close(pfd[0]);
		return pfd[1];
	}
	close(pfd[1]);
	*fd = pfd[0];
	return -1;
}

/* Parent side: reads reader i's report (size bytes at rep) from fd, closes
 * fd, reaps pid; asserts a whole report came and the reader exited 0,
 * failing with msg (the report's message, inside rep) otherwise. */
static inline void torture_collect(int i, pid_t pid, int fd, void *rep, size_t size,
				   const char *msg)
{
	ssize_t n = read(fd, rep, size);
	close(fd);
	int st;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(n == (ssize_t)size, "reader %d sent no report", i);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "reader %d failed: %s", i, msg);
}

/* Runs one test in a suite and tcase both called name, with a timeout of
 * 4 × torture_seconds() + 20 s. */
static inline int torture_run(const char *name, const TTest *test)
{
	Suite *s = suite_create(name);
	TCase *tc = tcase_create(name);
	tcase_set_timeout(tc, (double)torture_seconds() * 4 + 20);
	tcase_add_test(tc, test);
	suite_add_tcase(s, tc);
	return sy_check_run(s);
}

#endif
