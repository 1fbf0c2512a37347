/* pd.h — PD disaggregation bootstrap handshake between two mock engines.
 *
 * Stands in for SGLang's KV transfer: the decode engine must not start a
 * request before the prefill engine with the same bootstrap_room has
 * finished its prefill (sglang-wire.md §15).
 *
 * Protocol (plain TCP, ASCII lines, one request per connection):
 *   prefill mock listens on --disaggregation-bootstrap-port (its advertised
 *   disaggregation_bootstrap_port);
 *   decode → prefill:  "WAIT <room>\n"
 *   prefill → decode:  "READY <room>\n" as soon as the prefill of that room
 *                      has completed (at once if it already has; the last
 *                      MOCK_PD_READY_ROOMS rooms are remembered), then closes.
 * The decode mock connects to the request's bootstrap_host:bootstrap_port,
 * retries a refused connection every 20 ms, and fails the request with 500
 * after --pd-timeout-ms (the "decode times out on the room" case). A host
 * name is resolved off the event loop (h2o's getaddrinfo thread), once per
 * request; the deadline includes the resolution time.
 */
#ifndef SY_MOCK_PD_H
#define SY_MOCK_PD_H

#define MOCK_PD_READY_ROOMS 4096
#define MOCK_PD_RETRY_US 20000

#endif
