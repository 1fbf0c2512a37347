/* url.h — worker URL normalisation: the stable worker ID.
 *
 * A worker is identified everywhere (configuration, the state plane's workers
 * table, decision headers, the statebus control socket) by its normalised URL
 * (DESIGN.md §3):
 *   - the scheme is http or https, lower-cased;
 *   - the host is lower-cased (ASCII); an IPv6 literal keeps its brackets;
 *   - a port, when given, is written in decimal without leading zeros (1..65535);
 *   - the path is kept byte for byte, minus every trailing '/';
 *   - user information, a query or a fragment are refused (they cannot name a
 *     worker), and so are spaces and control bytes.
 * Default ports are NOT dropped: "http://a:80" and "http://a" are two IDs.
 * Examples: "HTTP://Worker-1.LAN:030001/" → "http://worker-1.lan:30001",
 *           "https://[::1]:8000/v1//"     → "https://[::1]:8000/v1".
 */
#ifndef SY_COMMON_URL_H
#define SY_COMMON_URL_H

#include <stddef.h>

#define SY_URL_MAX 2048 /* bytes of a worker URL, excluding the NUL */

/* Normalises the `len` bytes at `url` into `out` (capacity `cap`, always
 * NUL-terminated when cap > 0). Pure function: no allocation, no globals.
 * Returns the length written (excluding NUL, ≥ 0), SY_EINVAL when `url` is
 * not an acceptable worker URL (then *why, when why != NULL, points to a
 * static reason such as "must start with http:// or https://"), or
 * SY_ENOSPC when `out` is too small (the result is never longer than `len`,
 * so cap = len + 1 always suffices). */
int sy_url_normalize(const char *url, size_t len, char *out, size_t cap, const char **why);

#endif
