/* fuzz.h — the libFuzzer entry point every target in tests/fuzz/ defines.
 *
 * Each fuzz_<name>.c defines LLVMFuzzerTestOneInput(). It is linked either
 * with libFuzzer (tests/fuzz/run-libfuzzer, clang) or with replay_main.c,
 * which feeds it every file of a corpus directory so corpora replay as
 * ordinary meson tests (gcc, and the ASan/UBSan 'sanitize' suite). A target
 * signals a broken invariant by abort(): both drivers report it.
 */
#ifndef SY_TESTS_FUZZ_H
#define SY_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
