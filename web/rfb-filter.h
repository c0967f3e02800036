/* rfb-filter.h - the client-to-server half of an RFB (VNC) stream, parsed
 * message by message, so that a view-only viewer's input never reaches the
 * box (web/vnc-proxy.c). Pure: no I/O, no allocation.
 *
 * The stream the filter accepts (RFC 6143, and the extensions noVNC 1.3
 * sends: core/rfb.js RFB.messages):
 *
 *   handshake  ProtocolVersion "RFB 003.008\n" (12 bytes: the version the
 *              box's Xvnc offers), the security type chosen (1 byte; only
 *              1, None: the box's server is reached only through the
 *              daemon, which authenticated the viewer), ClientInit (1 byte,
 *              the shared flag, forced to 1: a viewer never disconnects the
 *              others).
 *   messages   0 SetPixelFormat (20), 2 SetEncodings (4 + 4n, n <=
 *              RFB_ENCODINGS_MAX), 3 FramebufferUpdateRequest (10),
 *              4 KeyEvent (8), 5 PointerEvent (6), 6 ClientCutText (8 + len;
 *              a negative len is the extended clipboard's form, |len| bytes;
 *              |len| <= RFB_CUT_MAX), 150 EnableContinuousUpdates (10),
 *              248 ClientFence (9 + len, len <= 64), 250 xvp (4),
 *              251 SetDesktopSize (8 + 16n, 1 <= n <= RFB_SCREENS_MAX),
 *              255 QEMU with subtype 0, the extended key event (12).
 *
 * In view-only mode the messages that act on the box are dropped whole:
 * KeyEvent, PointerEvent, ClientCutText, SetDesktopSize, xvp (shutdown,
 * reboot) and the QEMU key event; the rest pass unchanged. Anything else
 * (another version or security type, an unknown message type or QEMU
 * subtype, a length beyond its bound) fails the stream: the proxy closes
 * the connection (fail closed). The stream may be cut anywhere: bytes are
 * fed as they come, and a message's bytes come out once the filter knows
 * it passes (its fixed head is buffered; a body streams).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RFB_ENCODINGS_MAX 1024
#define RFB_CUT_MAX (1u << 20) /* bytes of clipboard text in one message */
#define RFB_SCREENS_MAX 16
#define RFB_FENCE_MAX 64

struct rfb_filter {
	bool view_only;
	int state;	    /* enum in rfb-filter.c */
	uint8_t head[24];   /* the current message's fixed part */
	size_t head_len;    /* bytes of it in head */
	size_t head_need;   /* bytes of it known to be needed so far */
	uint64_t body_left; /* bytes of its variable part still to come */
	bool drop;	    /* the current message is dropped */
	uint64_t dropped;   /* messages dropped (view-only) */
	char why[160];	    /* why the stream failed */
};

void rfb_filter_init(struct rfb_filter *f, bool view_only);

/* Room out needs beyond the n bytes fed: a message's head held back from
 * earlier calls comes out with the byte that completes it. */
#define RFB_FILTER_SLACK 24

/* Feeds n bytes the client sent. Writes the bytes to pass on to the
 * server at out (room for n + RFB_FILTER_SLACK bytes) and
 * their number in *out_len. 0, or -EPROTO once the stream is refused (the
 * reason in f->why; every later call fails too; *out_len is what passed
 * before the offending message and may still be sent). */
int rfb_filter_feed(struct rfb_filter *f, const uint8_t *in, size_t n, uint8_t *out,
		    size_t *out_len);
