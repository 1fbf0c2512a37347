/* picohttp.h — picohttpparser as bundled in and exported by libh2o-evloop
 * (Debian ships no header for it): the parts the router calls or
 * interposes. The decoder's public fields come first; the spare bytes
 * cover private fields of any later version. */
#ifndef SY_ROUTER_HTTP_PICOHTTP_H
#define SY_ROUTER_HTTP_PICOHTTP_H

#include <stddef.h>
#include <sys/types.h>

/* One header of a parsed head: spans into the parsed buffer. */
struct phr_header {
	const char *name;
	size_t name_len;
	const char *value;
	size_t value_len;
};

/* State of a chunked-body decoder; zero it (and set consume_trailer)
 * before the first call. */
struct phr_chunked_decoder {
	size_t bytes_left_in_chunk; /* bytes of the current chunk still to come */
	char consume_trailer;       /* whether the trailer part is consumed too */
	char hex_count_;
	char state_;
	char spare_[64];
};

/* Parses an HTTP/1 request head in buf[0..len): the head's length, -1
 * (malformed) or -2 (incomplete). */
int phr_parse_request(const char *buf, size_t len, const char **method, size_t *method_len,
		      const char **path, size_t *path_len, int *minor_version,
		      struct phr_header *headers, size_t *num_headers, size_t last_len);

/* Parses an HTTP/1 response head; returns as phr_parse_request. */
int phr_parse_response(const char *buf, size_t len, int *minor_version, int *status,
		       const char **msg, size_t *msg_len, struct phr_header *headers,
		       size_t *num_headers, size_t last_len);

/* Decodes chunked data in place: *bufsz in = bytes given, out = decoded
 * bytes; returns the bytes left after the body (complete), -2 (more
 * needed) or -1 (malformed). */
ssize_t phr_decode_chunked(struct phr_chunked_decoder *decoder, char *buf, size_t *bufsz);

#endif
