/* parse.h - parsers and formatters for the values users write into the tree
 * and into the configuration. Every parser is strict: the whole input must be
 * consumed; garbage, overflow, empty input and embedded NUL bytes are
 * rejected with -EINVAL (-ERANGE for numbers out of range). Output
 * parameters are written only on success.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define NAME_MAX_LEN 63

/* A name of a box, volume, snapshot or exec job:
 * [a-z0-9][a-z0-9._-]{0,62}. */
bool name_valid(const char *s);

/* Turns the raw bytes of one control-file write into a single value:
 * one trailing "\n" (or "\r\n") is dropped; an empty value, a NUL byte,
 * an interior newline or more than max bytes is -EINVAL. The result is
 * copied NUL-terminated into out (outsz must be > max). */
int value_from_write(const char *buf, size_t len, size_t max, char *out, size_t outsz);

/* Decimal unsigned integer, no sign, no spaces, at most max. */
int parse_uint64(const char *s, uint64_t max, uint64_t *ret);

/* Size in bytes: "123", "64K", "2M", "10G", "1T" (powers of 1024; a
 * trailing "B" or "iB" is accepted: "2GiB", "2GB"). */
int parse_size(const char *s, uint64_t *ret);

/* Formats a size the way the types files show it: the largest exact unit
 * ("2G", "512M", "1000"). */
void format_size(uint64_t v, char *buf, size_t bufsz);

/* CPU count in thousandths: "1" -> 1000, "0.5" -> 500, "2.25" -> 2250.
 * 0 is refused; at most 3 decimals; at most 1024 CPUs. */
int parse_cpus(const char *s, unsigned *ret_millicpus);
void format_cpus(unsigned millicpus, char *buf, size_t bufsz);

/* Duration in seconds: "3600", "30s", "15m", "2h", "1d", or "none"
 * (returns -1 in *ret). */
int parse_ttl(const char *s, int64_t *ret);

/* RFC 3339 UTC with seconds: "2026-11-29T22:40:00Z". bufsz >= 21. */
void format_rfc3339(time_t t, char *buf, size_t bufsz);
/* Now, RFC 3339 UTC with milliseconds: "2026-11-29T22:40:00.123Z" (the
 * agents' events). bufsz >= 25. */
void format_rfc3339_ms_now(char *buf, size_t bufsz);

/* Strict UTF-8 over s[0..len): no overlong forms, no surrogates, nothing
 * above U+10FFFF. A NUL byte is a valid (control) character here. */
bool utf8_valid(const char *s, size_t len);

/* The length of the valid UTF-8 character at s (n > 0 bytes left) and its
 * code point in *cp; 0 (and *cp untouched) if the bytes there are not one,
 * by the rules of utf8_valid(). */
size_t utf8_char(const unsigned char *s, size_t n, uint32_t *cp);

/* Text any reader can take, whatever bytes it came from (a box, a client):
 * copies in[0..len) into out, keeping valid UTF-8 characters except the
 * control characters (U+0000-U+001F, U+007F-U+009F) and the backslash,
 * which are written as "\xHH" per byte ("\x5c" for the backslash), as is
 * every byte that is not part of a valid UTF-8 character. So the result is
 * valid UTF-8 without control characters (fit for a JSON string, a line of
 * a listing), and different inputs give different results: a name made of
 * the byte 0xff shows as \xff, one spelt with the four characters \xff as
 * \x5cxff. For names and paths, which must not be confused; sanitize raw
 * bytes once (text that went through it is changed again: \x5c becomes
 * \x5cx5c). A character that does not fit whole is left out with everything
 * after it. out is always NUL-terminated (outsz must be > 0). Returns the
 * bytes written, without the NUL. */
size_t text_sanitize(const char *in, size_t len, char *out, size_t outsz);

/* text_sanitize() that lets the backslash through: for messages a person
 * reads (an `error` line, a label, an HTTP error's text), which may quote
 * text already made printable and must stay as they are then (text that
 * went through it comes back unchanged). Two inputs may give the same
 * text (the byte 0xff and the characters \xff): never for names. */
size_t text_printable(const char *in, size_t len, char *out, size_t outsz);

/* Builds the list "a, b, c" an error text names valid values with. Start
 * with buf[0] = '\0' and *len = 0; each call appends name. A name that
 * does not fit with room left for ", ..." ends the list with ", ..."
 * ("..." when it is the first) and returns false: add no more. bufsz must
 * be at least TEXT_LIST_MIN. */
#define TEXT_LIST_MIN 8
bool text_list_add(char *buf, size_t bufsz, size_t *len, const char *name);
