/* check_rfb_filter.c - the client half of RFB, message by message
 * (web/rfb-filter.h): a session of every message noVNC 1.3 sends passes
 * whole with control and loses exactly its input messages in view-only
 * mode, whether it comes in one piece, cut in two at every byte, or byte by
 * byte; bad handshakes, unknown types and lengths beyond their bounds fail
 * the stream; ClientInit is forced shared. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "web/rfb-filter.h"
#include "check-tap.h"

struct stream {
	uint8_t b[4096];
	size_t n;
};

static void put(struct stream *s, const void *p, size_t n)
{
	ck_assert_uint_le(s->n + n, sizeof s->b);
	memcpy(s->b + s->n, p, n);
	s->n += n;
}

/* A message: bytes given as ints. */
#define MSG(s, ...)                                                                                \
	do {                                                                                       \
		const uint8_t m_[] = {__VA_ARGS__};                                                \
		put(s, m_, sizeof m_);                                                             \
	} while (0)

static void handshake(struct stream *s, uint8_t shared)
{
	put(s, "RFB 003.008\n", 12);
	MSG(s, 1);	/* security None */
	MSG(s, shared); /* ClientInit */
}

/* Every message kind noVNC sends; `all` gets all of them, `view` only
 * those a view-only viewer keeps. */
static void session(struct stream *all, struct stream *view)
{
	struct stream *both[] = {all, view};
	uint8_t cut_ext[8 + 12] = {6, 0, 0, 0, 0xff, 0xff, 0xff, 0xf4}; /* len -12 */
	uint8_t cut[8 + 5] = {6, 0, 0, 0, 0, 0, 0, 5, 'h', 'e', 'l', 'l', 'o'};
	uint8_t enc[4 + 4 * 3] = {2, 0, 0, 3, 0, 0, 0, 7, 0xff, 0xff, 0xff, 0x21, 0, 0, 0, 0};
	uint8_t pf[20] = {0, 0, 0, 0, 32, 24, 0, 1, 0, 255, 0, 255, 0, 255, 0, 8, 16};
	uint8_t fence[9 + 3] = {248, 0, 0, 0, 0x80, 0, 0, 3, 3, 'a', 'b', 'c'};
	uint8_t size[8 + 16] = {251, 0, 5, 0, 3, 32, 1, 0};

	for (size_t i = 0; i < 2; i++) {
		handshake(both[i], 1);
		put(both[i], pf, sizeof pf);
		put(both[i], enc, sizeof enc);
		MSG(both[i], 3, 0, 0, 0, 0, 0, 5, 0, 3, 32);   /* FramebufferUpdateRequest */
		MSG(both[i], 150, 1, 0, 0, 0, 0, 5, 0, 3, 32); /* EnableContinuousUpdates */
		put(both[i], fence, sizeof fence);
	}
	MSG(all, 4, 1, 0, 0, 0, 0, 0, 0x61);		    /* KeyEvent */
	MSG(all, 5, 1, 0, 10, 0, 20);			    /* PointerEvent */
	put(all, cut, sizeof cut);			    /* ClientCutText */
	put(all, cut_ext, sizeof cut_ext);		    /* extended clipboard */
	put(all, size, sizeof size);			    /* SetDesktopSize */
	MSG(all, 250, 0, 1, 2);				    /* xvp reboot */
	MSG(all, 255, 0, 0, 1, 0, 0, 0, 0x61, 0, 0, 0, 30); /* QEMU key */
	MSG(view, 3, 1, 0, 0, 0, 0, 5, 0, 3, 32);
	MSG(all, 3, 1, 0, 0, 0, 0, 5, 0, 3, 32);
}

/* Feeds s cut at the given points (sorted, within s->n) and returns what
 * came out; asserts the result code. */
static struct stream feed_cut(bool view_only, const struct stream *s, const size_t *cuts,
			      size_t n_cuts, int want, struct rfb_filter *ret)
{
	struct rfb_filter f;
	struct stream out = {0};
	size_t from = 0;
	int k = 0;

	rfb_filter_init(&f, view_only);
	for (size_t c = 0; c <= n_cuts && k == 0; c++) {
		size_t to = c < n_cuts ? cuts[c] : s->n;
		uint8_t buf[sizeof s->b + RFB_FILTER_SLACK];
		size_t got;
		k = rfb_filter_feed(&f, s->b + from, to - from, buf, &got);
		ck_assert_uint_le(got, to - from + RFB_FILTER_SLACK);
		put(&out, buf, got);
		from = to;
	}
	ck_assert_int_eq(k, want);
	if (ret)
		*ret = f;
	return out;
}

static void same(const struct stream *a, const struct stream *b)
{
	ck_assert_uint_eq(a->n, b->n);
	ck_assert(memcmp(a->b, b->b, a->n) == 0);
}

START_TEST(test_whole)
{
	struct stream all = {0}, view = {0}, out;
	struct rfb_filter f;

	session(&all, &view);
	out = feed_cut(false, &all, NULL, 0, 0, &f);
	same(&out, &all);
	ck_assert_uint_eq(f.dropped, 0);
	out = feed_cut(true, &all, NULL, 0, 0, &f);
	same(&out, &view);
	ck_assert_uint_eq(f.dropped, 7);
}
END_TEST

START_TEST(test_every_cut)
{
	struct stream all = {0}, view = {0}, out;

	session(&all, &view);
	for (size_t i = 0; i <= all.n; i++) {
		out = feed_cut(false, &all, &i, 1, 0, NULL);
		same(&out, &all);
		out = feed_cut(true, &all, &i, 1, 0, NULL);
		same(&out, &view);
	}
	/* and in two places, every pair near the messages' ends */
	for (size_t i = 0; i <= all.n; i += 3)
		for (size_t j = i; j <= all.n; j += 5) {
			size_t cuts[] = {i, j};
			out = feed_cut(true, &all, cuts, 2, 0, NULL);
			same(&out, &view);
		}
}
END_TEST

START_TEST(test_byte_by_byte)
{
	struct stream all = {0}, view = {0}, out;
	size_t cuts[sizeof all.b];

	session(&all, &view);
	for (size_t i = 0; i < all.n; i++)
		cuts[i] = i;
	out = feed_cut(false, &all, cuts, all.n, 0, NULL);
	same(&out, &all);
	out = feed_cut(true, &all, cuts, all.n, 0, NULL);
	same(&out, &view);
}
END_TEST

START_TEST(test_shared_forced)
{
	struct stream s = {0}, out;

	handshake(&s, 0);
	out = feed_cut(false, &s, NULL, 0, 0, NULL);
	ck_assert_uint_eq(out.n, 14);
	ck_assert_uint_eq(out.b[13], 1);
}
END_TEST

/* bad: a stream that must fail; the bytes before the bad message pass. */
static void bad(const struct stream *s, size_t good, const char *why)
{
	struct rfb_filter f;

	for (int v = 0; v < 2; v++) {
		struct stream out = feed_cut(v, s, NULL, 0, -EPROTO, &f);
		ck_assert_msg(strstr(f.why, why), "why \"%s\" lacks \"%s\"", f.why, why);
		if (!v)
			ck_assert_uint_eq(out.n, good);
		/* and it stays failed */
		uint8_t b[RFB_FILTER_SLACK + 1];
		size_t got;
		ck_assert_int_eq(rfb_filter_feed(&f, (const uint8_t *)"\3", 1, b, &got), -EPROTO);
		ck_assert_uint_eq(got, 0);
	}
	/* cut byte by byte too */
	size_t cuts[sizeof s->b];
	for (size_t i = 0; i < s->n; i++)
		cuts[i] = i;
	feed_cut(true, s, cuts, s->n, -EPROTO, NULL);
}

START_TEST(test_refused)
{
	struct stream s;

	s = (struct stream){0};
	put(&s, "RFB 003.003\n", 12);
	bad(&s, 10, "ProtocolVersion");

	s = (struct stream){0};
	put(&s, "RFB 003.008\n", 12);
	MSG(&s, 2); /* VNC authentication */
	bad(&s, 12, "security type 2");

	s = (struct stream){0};
	handshake(&s, 1);
	MSG(&s, 3, 0, 0, 0, 0, 0, 5, 0, 3, 32);
	MSG(&s, 7, 0, 0, 0); /* no such type */
	bad(&s, 24, "type 7");

	s = (struct stream){0};
	handshake(&s, 1);
	MSG(&s, 255, 1, 0, 0); /* QEMU audio */
	bad(&s, 14, "subtype 1");

	s = (struct stream){0};
	handshake(&s, 1);
	MSG(&s, 2, 0, 0x04, 0x01); /* 1025 encodings */
	bad(&s, 14, "1025 encodings");

	s = (struct stream){0};
	handshake(&s, 1);
	MSG(&s, 6, 0, 0, 0, 0, 0x10, 0, 1); /* 1 MiB + 1 of text */
	bad(&s, 14, "1048577 bytes");

	s = (struct stream){0};
	handshake(&s, 1);
	MSG(&s, 6, 0, 0, 0, 0x80, 0, 0, 0); /* INT32_MIN, extended form */
	bad(&s, 14, "2147483648 bytes");

	s = (struct stream){0};
	handshake(&s, 1);
	MSG(&s, 6, 0, 0, 0, 0xff, 0xef, 0xff, 0xff); /* -(1 MiB + 1) */
	bad(&s, 14, "1048577 bytes");

	s = (struct stream){0};
	handshake(&s, 1);
	MSG(&s, 248, 0, 0, 0, 0, 0, 0, 0, 65);
	bad(&s, 14, "65 bytes");

	s = (struct stream){0};
	handshake(&s, 1);
	MSG(&s, 251, 0, 5, 0, 3, 32, 0, 0); /* no screen */
	bad(&s, 14, "0 screens");

	s = (struct stream){0};
	handshake(&s, 1);
	MSG(&s, 251, 0, 5, 0, 3, 32, 17, 0);
	bad(&s, 14, "17 screens");
}
END_TEST

/* Bodies at their bounds pass, in pieces, without being held. */
START_TEST(test_big_bodies)
{
	static uint8_t text[RFB_CUT_MAX];
	uint8_t head[8] = {6, 0, 0, 0, 0, 0x10, 0, 0}, out[8192 + RFB_FILTER_SLACK];
	struct rfb_filter f;
	size_t got, total = 0;
	struct stream s = {0};

	for (int v = 0; v < 2; v++) {
		rfb_filter_init(&f, v);
		s.n = 0;
		handshake(&s, 1);
		ck_assert_int_eq(rfb_filter_feed(&f, s.b, s.n, out, &got), 0);
		ck_assert_int_eq(rfb_filter_feed(&f, head, sizeof head, out, &got), 0);
		total = got;
		for (size_t i = 0; i < sizeof text; i += 8192) {
			ck_assert_int_eq(rfb_filter_feed(&f, text + i, 8192, out, &got), 0);
			ck_assert_uint_le(got, 8192);
			total += got;
		}
		ck_assert_uint_eq(total, v ? 0 : sizeof head + sizeof text);
		/* back at a message boundary */
		uint8_t req[10] = {3, 1, 0, 0, 0, 0, 0, 1, 0, 1};
		ck_assert_int_eq(rfb_filter_feed(&f, req, sizeof req, out, &got), 0);
		ck_assert_uint_eq(got, 10);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("rfb_filter");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_whole);
	tcase_add_test(tc, test_every_cut);
	tcase_add_test(tc, test_byte_by_byte);
	tcase_add_test(tc, test_shared_forced);
	tcase_add_test(tc, test_refused);
	tcase_add_test(tc, test_big_bodies);
	suite_add_tcase(s, tc);
	return check_tap_run(s);
}
