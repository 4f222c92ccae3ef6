/* The main of every unit test: run one Check suite, exit non-zero on any
 * failure.  force_fork makes exit tests work whatever CK_FORK says. */
#ifndef CDN_RUN_SUITE_H
#define CDN_RUN_SUITE_H

#include <check.h>
#include <stdlib.h>

static inline int cdn_run_suite(Suite *suite, int force_fork)
{
    SRunner *sr = srunner_create(suite);
    if (force_fork)
        srunner_set_fork_status(sr, CK_FORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

#endif
