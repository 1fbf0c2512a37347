/* sy_check.h — the tail every Check test program shares: run a suite in
 * CK_NORMAL mode and turn the failure count into the exit status.
 * Header-only, test use. */
#ifndef SY_TESTS_SY_CHECK_H
#define SY_TESTS_SY_CHECK_H

#include <check.h>
#include <stdlib.h>

/* Runs every test of s (the runner takes s), frees the runner;
 * returns EXIT_SUCCESS when no test failed, EXIT_FAILURE otherwise. */
static inline int sy_check_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

#endif
