/* rfb-filter.c - the client's RFB stream, message by message
 * (rfb-filter.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "web/rfb-filter.h"

enum {
	S_VERSION,  /* ProtocolVersion, 12 bytes */
	S_SECURITY, /* the security type chosen, 1 byte */
	S_INIT,	    /* ClientInit, 1 byte */
	S_HEAD,	    /* a message's fixed part */
	S_BODY,	    /* its variable part */
	S_FAILED,
};

static const char rfb_version[] = "RFB 003.008\n";

static int fail(struct rfb_filter *f, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(f->why, sizeof f->why, fmt, ap);
	va_end(ap);
	f->state = S_FAILED;
	return -EPROTO;
}

void rfb_filter_init(struct rfb_filter *f, bool view_only)
{
	memset(f, 0, sizeof *f);
	f->view_only = view_only;
	f->state = S_VERSION;
	f->head_need = sizeof rfb_version - 1;
}

static uint32_t be16(const uint8_t *p)
{
	return (uint32_t)p[0] << 8 | p[1];
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The message's fixed length from what of its head is in (at least the
 * type; for QEMU, its subtype too). 0: not known yet; -1: refused. */
static int fixed_len(struct rfb_filter *f)
{
	switch (f->head[0]) {
	case 0: /* SetPixelFormat */
		return 20;
	case 2: /* SetEncodings */
		return 4;
	case 3: /* FramebufferUpdateRequest */
		return 10;
	case 4: /* KeyEvent */
		return 8;
	case 5: /* PointerEvent */
		return 6;
	case 6: /* ClientCutText */
		return 8;
	case 150: /* EnableContinuousUpdates */
		return 10;
	case 248: /* ClientFence */
		return 9;
	case 250: /* xvp */
		return 4;
	case 251: /* SetDesktopSize */
		return 8;
	case 255: /* QEMU: the subtype says */
		if (f->head_len < 2)
			return 2;
		if (f->head[1] == 0) /* extended key event */
			return 12;
		fail(f, "QEMU client message subtype %u is not accepted", f->head[1]);
		return -1;
	default:
		fail(f, "client message type %u is not accepted", f->head[0]);
		return -1;
	}
}

/* The head is complete: decides whether the message passes and how long
 * its body is. */
static int head_done(struct rfb_filter *f)
{
	const uint8_t *h = f->head;
	bool acts = false;

	f->body_left = 0;
	switch (h[0]) {
	case 2: {
		uint32_t n = be16(h + 2);
		if (n > RFB_ENCODINGS_MAX)
			return fail(f, "SetEncodings with %u encodings (at most %u)", n,
				    RFB_ENCODINGS_MAX);
		f->body_left = 4ull * n;
		break;
	}
	case 6: {
		/* A negative length is the extended clipboard's form
		 * (|len| bytes follow); INT32_MIN has no positive. */
		int32_t len = (int32_t)be32(h + 4);
		uint64_t abs_len = len < 0 ? (uint64_t)(-(int64_t)len) : (uint64_t)len;
		if (abs_len > RFB_CUT_MAX)
			return fail(f, "ClientCutText of %llu bytes (at most %u)",
				    (unsigned long long)abs_len, RFB_CUT_MAX);
		f->body_left = abs_len;
		acts = true;
		break;
	}
	case 248:
		if (h[8] > RFB_FENCE_MAX)
			return fail(f, "ClientFence with %u bytes (at most %u)", h[8],
				    RFB_FENCE_MAX);
		f->body_left = h[8];
		break;
	case 251:
		if (h[6] < 1 || h[6] > RFB_SCREENS_MAX)
			return fail(f, "SetDesktopSize with %u screens (1 to %u)", h[6],
				    RFB_SCREENS_MAX);
		f->body_left = 16ull * h[6];
		acts = true;
		break;
	case 4:
	case 5:
	case 250:
	case 255:
		acts = true;
		break;
	}
	f->drop = acts && f->view_only;
	if (f->drop)
		f->dropped++;
	return 0;
}

int rfb_filter_feed(struct rfb_filter *f, const uint8_t *in, size_t n, uint8_t *out,
		    size_t *out_len)
{
	size_t o = 0, i = 0;

	*out_len = 0;
	if (f->state == S_FAILED)
		return -EPROTO;
	while (i < n) {
		switch (f->state) {
		case S_VERSION: {
			uint8_t c = in[i++];
			if (c != (uint8_t)rfb_version[f->head_len]) {
				*out_len = o;
				return fail(f, "the client's ProtocolVersion is not %.11s",
					    rfb_version);
			}
			out[o++] = c;
			if (++f->head_len == f->head_need) {
				f->head_len = 0;
				f->state = S_SECURITY;
			}
			break;
		}
		case S_SECURITY:
			if (in[i] != 1) {
				*out_len = o;
				return fail(f,
					    "security type %u chosen (only None, 1, is spoken "
					    "to the box)",
					    in[i]);
			}
			out[o++] = in[i++];
			f->state = S_INIT;
			break;
		case S_INIT:
			/* ClientInit: shared, whatever the client asked. */
			i++;
			out[o++] = 1;
			f->state = S_HEAD;
			f->head_len = 0;
			f->head_need = 1;
			break;
		case S_HEAD: {
			size_t take = f->head_need - f->head_len;
			if (take > n - i)
				take = n - i;
			memcpy(f->head + f->head_len, in + i, take);
			f->head_len += take;
			i += take;
			if (f->head_len < f->head_need)
				break;
			int len = fixed_len(f);
			if (len < 0) {
				*out_len = o;
				return -EPROTO;
			}
			if ((size_t)len > f->head_len) {
				f->head_need = (size_t)len;
				break;
			}
			if (head_done(f) < 0) {
				*out_len = o;
				return -EPROTO;
			}
			if (!f->drop) {
				memcpy(out + o, f->head, f->head_len);
				o += f->head_len;
			}
			f->head_len = 0;
			f->head_need = 1;
			if (f->body_left)
				f->state = S_BODY;
			break;
		}
		case S_BODY: {
			size_t take = n - i;
			if (take > f->body_left)
				take = (size_t)f->body_left;
			if (!f->drop) {
				memcpy(out + o, in + i, take);
				o += take;
			}
			i += take;
			f->body_left -= take;
			if (!f->body_left)
				f->state = S_HEAD;
			break;
		}
		default:
			*out_len = o;
			return -EPROTO;
		}
	}
	*out_len = o;
	return 0;
}
