/* flags.h — command-line flags of switchyard-mock-engine (docs/mock-engine.md). */
#ifndef SY_MOCK_FLAGS_H
#define SY_MOCK_FLAGS_H

#include "tools/mock-engine/engine.h"

/* Fills `c` with defaults, then parses argv. Returns 0, 1 when --help was
 * printed, or SY_EINVAL (message on stderr). Strings point into argv. */
int mock_flags_parse(struct mock_config *c, int argc, char **argv, const char **log_level);

#endif
