/* check_shot.c - xwd grabs to PNG (engine/shot.h): real grabs (Xvnc with
 * one visual; an XFCE desktop, whose grab is 24 bits a pixel in rows
 * sized for 32), generated ones in every layout taken, decoded back with
 * libpng and compared pixel by pixel; and hostile headers: every size out
 * of range, every cut, overflowing products, masks that are not runs. */
#include <errno.h>
#include <fcntl.h>
#include <png.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check-tap.h"
#include "common/buf.h"
#include "common/desktop.h"
#include "common/error.h"
#include "common/util.h"
#include "engine/shot.h"

/* The header's words, as in X11's XWDFile.h. */
enum {
	W_HEADER_SIZE,
	W_FILE_VERSION,
	W_PIXMAP_FORMAT,
	W_PIXMAP_DEPTH,
	W_WIDTH,
	W_HEIGHT,
	W_XOFFSET,
	W_BYTE_ORDER,
	W_BITMAP_UNIT,
	W_BITMAP_BIT_ORDER,
	W_BITMAP_PAD,
	W_BITS_PER_PIXEL,
	W_BYTES_PER_LINE,
	W_VISUAL_CLASS,
	W_RED_MASK,
	W_GREEN_MASK,
	W_BLUE_MASK,
	W_BITS_PER_RGB,
	W_COLORMAP_ENTRIES,
	W_NCOLORS,
	W_WORDS = 25,
};

/* What a generated grab looks like. */
struct layout {
	unsigned width, height;
	unsigned bpp;		 /* 32 or 24 */
	unsigned bytes_per_line; /* 0: width * bpp / 8 */
	unsigned msb_first;
	uint32_t red, green, blue; /* masks */
	unsigned ncolors;
	unsigned visual;
	const char *name;
};

static const struct layout xvnc = {
    .width = 64,
    .height = 40,
    .bpp = 32,
    .red = 0xff0000,
    .green = 0xff00,
    .blue = 0xff,
    .ncolors = 256,
    .visual = 4,
    .name = "xwdump",
};

/* The colour the generator puts at (x, y): every channel value occurs. */
static void colour_at(unsigned x, unsigned y, unsigned char rgb[3])
{
	rgb[0] = (unsigned char)(x * 7 + y * 3);
	rgb[1] = (unsigned char)(x * 5 + y * 11 + 17);
	rgb[2] = (unsigned char)(x ^ (y * 13));
}

static uint32_t place(unsigned char v, uint32_t mask)
{
	unsigned shift = (unsigned)__builtin_ctz(mask), bits = (unsigned)__builtin_popcount(mask);
	uint32_t x = bits >= 8 ? (uint32_t)v << (bits - 8) : (uint32_t)v >> (8 - bits);
	return (x << shift) & mask;
}

static void put_be32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

/* A grab of the generator's picture in layout l; *ret_len its size. The
 * header words can be changed afterwards with set_word(). */
static unsigned char *make_xwd(const struct layout *l, size_t *ret_len)
{
	size_t name_len = strlen(l->name) + 1;
	unsigned bypp = l->bpp / 8;
	size_t bpl = l->bytes_per_line ? l->bytes_per_line : (size_t)l->width * bypp;
	size_t header = W_WORDS * 4 + name_len;
	size_t off = header + (size_t)l->ncolors * 12;
	size_t len = off + bpl * l->height;
	unsigned char *b = calloc(1, len);
	uint32_t h[W_WORDS] = {0};

	ck_assert_ptr_nonnull(b);
	h[W_HEADER_SIZE] = (uint32_t)header;
	h[W_FILE_VERSION] = 7;
	h[W_PIXMAP_FORMAT] = 2;
	h[W_PIXMAP_DEPTH] = 24;
	h[W_WIDTH] = l->width;
	h[W_HEIGHT] = l->height;
	h[W_BYTE_ORDER] = l->msb_first;
	h[W_BITMAP_UNIT] = 32;
	h[W_BITMAP_PAD] = 32;
	h[W_BITS_PER_PIXEL] = l->bpp;
	h[W_BYTES_PER_LINE] = (uint32_t)bpl;
	h[W_VISUAL_CLASS] = l->visual;
	h[W_RED_MASK] = l->red;
	h[W_GREEN_MASK] = l->green;
	h[W_BLUE_MASK] = l->blue;
	h[W_BITS_PER_RGB] = 8;
	h[W_COLORMAP_ENTRIES] = 256;
	h[W_NCOLORS] = l->ncolors;
	for (size_t i = 0; i < W_WORDS; i++)
		put_be32(b + 4 * i, h[i]);
	memcpy(b + W_WORDS * 4, l->name, name_len);
	/* Colour entries: what xwd writes, which the converter skips; make
	 * them loud so that reading them as pixels would show. */
	memset(b + header, 0xa5, (size_t)l->ncolors * 12);
	for (unsigned y = 0; y < l->height; y++) {
		unsigned char *row = b + off + (size_t)y * bpl;
		/* Padding at the end of the row: noise the converter must skip. */
		memset(row, 0x5a, bpl);
		for (unsigned x = 0; x < l->width; x++) {
			unsigned char rgb[3], *p = row + (size_t)x * bypp;
			uint32_t v;

			colour_at(x, y, rgb);
			v = place(rgb[0], l->red) | place(rgb[1], l->green) |
			    place(rgb[2], l->blue);
			for (unsigned i = 0; i < bypp; i++) {
				unsigned shift = l->msb_first ? 8 * (bypp - 1 - i) : 8 * i;
				p[i] = (unsigned char)(v >> shift);
			}
		}
	}
	*ret_len = len;
	return b;
}

static void set_word(unsigned char *xwd, unsigned word, uint32_t v)
{
	put_be32(xwd + 4 * word, v);
}

/* Decodes a PNG with libpng's simplified reader; checks it is 8-bit RGB
 * without alpha. Returns the RGB bytes (malloc'd). */
static unsigned char *decode_png(const struct pd_buf *png, unsigned *w, unsigned *h)
{
	png_image img;
	unsigned char *rgb;

	memset(&img, 0, sizeof(img));
	img.version = PNG_IMAGE_VERSION;
	ck_assert_msg(png_image_begin_read_from_memory(&img, png->data, png->len), "libpng: %s",
		      img.message);
	ck_assert_uint_eq(img.format, PNG_FORMAT_RGB);
	img.format = PNG_FORMAT_RGB;
	rgb = malloc(PNG_IMAGE_SIZE(img));
	ck_assert_ptr_nonnull(rgb);
	ck_assert_msg(png_image_finish_read(&img, NULL, rgb, 0, NULL), "libpng: %s", img.message);
	*w = img.width;
	*h = img.height;
	return rgb;
}

/* The value a mask of `bits` bits keeps of v, scaled back to 8 bits the
 * way the converter does (the top bits, or a rounded scale-up). */
static unsigned char through_mask(unsigned char v, uint32_t mask)
{
	unsigned bits = (unsigned)__builtin_popcount(mask);
	unsigned max, x;

	if (bits >= 8)
		return v;
	max = (1u << bits) - 1;
	x = v >> (8 - bits);
	return (unsigned char)((x * 255 + max / 2) / max);
}

/* Converts layout l and checks every pixel against the generator. */
static void round_trip(const struct layout *l)
{
	_cleanup_pd_buf_ struct pd_buf png = {0};
	_cleanup_free_ unsigned char *xwd = NULL, *rgb = NULL;
	pd_error err = {0};
	unsigned w = 0, h = 0, pw, ph;
	size_t len;

	xwd = make_xwd(l, &len);
	ck_assert_msg(eng_shot_xwd_to_png(xwd, len, &png, &w, &h, &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(w, l->width);
	ck_assert_uint_eq(h, l->height);
	ck_assert(png.len > 8 && memcmp(png.data, "\x89PNG\r\n\x1a\n", 8) == 0);
	rgb = decode_png(&png, &pw, &ph);
	ck_assert_uint_eq(pw, l->width);
	ck_assert_uint_eq(ph, l->height);
	for (unsigned y = 0; y < ph; y++)
		for (unsigned x = 0; x < pw; x++) {
			unsigned char want[3], *got = rgb + ((size_t)y * pw + x) * 3;

			colour_at(x, y, want);
			want[0] = through_mask(want[0], l->red);
			want[1] = through_mask(want[1], l->green);
			want[2] = through_mask(want[2], l->blue);
			ck_assert_msg(memcmp(got, want, 3) == 0,
				      "pixel %u,%u: got %u,%u,%u, want %u,%u,%u", x, y, got[0],
				      got[1], got[2], want[0], want[1], want[2]);
		}
}

START_TEST(test_xvnc_layout)
{
	round_trip(&xvnc);
}
END_TEST

START_TEST(test_msb_first)
{
	struct layout l = xvnc;
	l.msb_first = 1;
	round_trip(&l);
}
END_TEST

START_TEST(test_bgr_masks_both_orders)
{
	struct layout l = xvnc;
	l.red = 0xff;
	l.blue = 0xff0000;
	round_trip(&l);
	l.msb_first = 1;
	round_trip(&l);
	/* Red in the top byte, nothing in the low one. */
	l.red = 0xff000000;
	l.green = 0xff0000;
	l.blue = 0xff00;
	round_trip(&l);
}
END_TEST

START_TEST(test_narrow_and_wide_masks)
{
	struct layout l = xvnc;
	/* 5-6-5 in a 32-bit pixel: scaled up. */
	l.red = 0xf800;
	l.green = 0x7e0;
	l.blue = 0x1f;
	round_trip(&l);
	/* 10 bits a channel: the top 8 kept. */
	l.red = 0x3ff00000;
	l.green = 0xffc00;
	l.blue = 0x3ff;
	round_trip(&l);
}
END_TEST

START_TEST(test_padded_rows)
{
	struct layout l = xvnc;
	l.width = 37;
	l.bytes_per_line = 37 * 4 + 20;
	round_trip(&l);
}
END_TEST

/* The multi-visual grab: 24 bits a pixel, 3 bytes each, rows sized for 4,
 * DirectColor; and a packed one with rows just long enough. */
START_TEST(test_24_bits_packed)
{
	struct layout l = xvnc;
	l.bpp = 24;
	l.visual = 5;
	l.bytes_per_line = l.width * 4;
	round_trip(&l);
	l.msb_first = 1;
	round_trip(&l);
	l.width = 33;
	l.bytes_per_line = 33 * 3 + 1;
	round_trip(&l);
}
END_TEST

START_TEST(test_one_pixel)
{
	struct layout l = xvnc;
	l.width = l.height = 1;
	l.ncolors = 0;
	round_trip(&l);
}
END_TEST

/* The largest screen is taken (a flat grab: fast under the sanitizers). */
START_TEST(test_largest)
{
	_cleanup_pd_buf_ struct pd_buf png = {0};
	size_t off = W_WORDS * 4 + 1,
	       len = off + (size_t)DESKTOP_WIDTH_MAX * DESKTOP_HEIGHT_MAX * 4;
	_cleanup_free_ unsigned char *xwd = calloc(1, len);
	_cleanup_free_ unsigned char *rgb = NULL;
	pd_error err = {0};
	unsigned w, h;

	ck_assert_ptr_nonnull(xwd);
	set_word(xwd, W_HEADER_SIZE, (uint32_t)off);
	set_word(xwd, W_FILE_VERSION, 7);
	set_word(xwd, W_PIXMAP_FORMAT, 2);
	set_word(xwd, W_PIXMAP_DEPTH, 24);
	set_word(xwd, W_WIDTH, DESKTOP_WIDTH_MAX);
	set_word(xwd, W_HEIGHT, DESKTOP_HEIGHT_MAX);
	set_word(xwd, W_BITS_PER_PIXEL, 32);
	set_word(xwd, W_BYTES_PER_LINE, DESKTOP_WIDTH_MAX * 4);
	set_word(xwd, W_VISUAL_CLASS, 4);
	set_word(xwd, W_RED_MASK, 0xff0000);
	set_word(xwd, W_GREEN_MASK, 0xff00);
	set_word(xwd, W_BLUE_MASK, 0xff);
	/* One white pixel at the far corner. */
	memset(xwd + len - 4, 0xff, 4);
	ck_assert_msg(eng_shot_xwd_to_png(xwd, len, &png, &w, &h, &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(w, DESKTOP_WIDTH_MAX);
	ck_assert_uint_eq(h, DESKTOP_HEIGHT_MAX);
	rgb = decode_png(&png, &w, &h);
	ck_assert_uint_eq(rgb[(size_t)w * h * 3 - 1], 255);
	ck_assert_uint_eq(rgb[(size_t)w * h * 3 - 4], 0);
}
END_TEST

/* A real grab from a file of tests/shot/. */
static unsigned char *read_fixture(const char *name, size_t *len)
{
	const char *top = getenv("TOP_SRCDIR");
	char path[4096];
	char *data = NULL;
	int r;

	snprintf(path, sizeof(path), "%s/tests/shot/%s", top && *top ? top : "..", name);
	r = read_file_at(AT_FDCWD, path, 1 << 20, &data, len);
	ck_assert_msg(r == 0, "%s: %s", path, strerror(-r));
	return (unsigned char *)data;
}

/* Converts a real grab and checks every pixel against a plain reading of
 * its bytes (b, g, r in the low bytes of each pixel: what both hold). */
static void real_grab(const char *name, unsigned bypp, const unsigned char *spot, unsigned sx,
		      unsigned sy)
{
	_cleanup_pd_buf_ struct pd_buf png = {0};
	_cleanup_free_ unsigned char *xwd = NULL, *rgb = NULL;
	pd_error err = {0};
	unsigned w, h;
	size_t len, off = 107 + 256 * 12, bpl = 64 * 4;

	xwd = read_fixture(name, &len);
	ck_assert_uint_eq(len, off + bpl * 40);
	ck_assert_msg(eng_shot_xwd_to_png(xwd, len, &png, &w, &h, &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(w, 64);
	ck_assert_uint_eq(h, 40);
	rgb = decode_png(&png, &w, &h);
	for (unsigned y = 0; y < 40; y++)
		for (unsigned x = 0; x < 64; x++) {
			const unsigned char *p = xwd + off + y * bpl + x * bypp;
			const unsigned char *q = rgb + (y * 64 + x) * 3;
			ck_assert_msg(q[0] == p[2] && q[1] == p[1] && q[2] == p[0], "pixel %u,%u",
				      x, y);
		}
	ck_assert_msg(memcmp(rgb + (sy * 64 + sx) * 3, spot, 3) == 0, "spot %u,%u", sx, sy);
}

/* Xvnc alone: TrueColor, 32 bits; xev's white window at 20,12. */
START_TEST(test_real_truecolor)
{
	static const unsigned char white[3] = {255, 255, 255};
	real_grab("truecolor-64x40.xwd", 4, white, 25, 15);
}
END_TEST

/* Cut from an XFCE desktop's grab: a Tk window's title bar over its red
 * button. */
START_TEST(test_real_xfce)
{
	static const unsigned char red[3] = {255, 0, 0};
	real_grab("xfce-64x40.xwd", 3, red, 40, 38);
}
END_TEST

/* The bad header words, each with what the reason must say. */
static const struct {
	unsigned word;
	uint32_t value;
	const char *says;
} bad_words[] = {
    {W_FILE_VERSION, 6, "file version 6"},
    {W_HEADER_SIZE, 0, "header size 0"},
    {W_HEADER_SIZE, 99, "header size 99"},
    {W_HEADER_SIZE, 0xffffffff, "header size 4294967295"},
    {W_PIXMAP_FORMAT, 1, "pixmap format 1"},
    {W_PIXMAP_DEPTH, 16, "depth 16"},
    {W_PIXMAP_DEPTH, 8, "depth 8"},
    {W_BITS_PER_PIXEL, 16, "16 bits per pixel"},
    {W_BITS_PER_PIXEL, 0, "0 bits per pixel"},
    {W_VISUAL_CLASS, 3, "visual class 3"},
    {W_BYTE_ORDER, 2, "byte order 2"},
    {W_XOFFSET, 5, "x offset 5"},
    {W_WIDTH, 0, "size 0x40"},
    {W_HEIGHT, 0, "size 64x0"},
    {W_WIDTH, DESKTOP_WIDTH_MAX + 1, "size 3841x40"},
    {W_HEIGHT, DESKTOP_HEIGHT_MAX + 1, "size 64x2161"},
    {W_WIDTH, 0xffffffff, "size 4294967295x40"},
    {W_BYTES_PER_LINE, 64 * 4 - 1, "255 bytes per line"},
    {W_BYTES_PER_LINE, 0, "0 bytes per line"},
    /* Products that overflow 32 bits: cut short, not wrapped. */
    {W_BYTES_PER_LINE, 0xffffffff, "cut short"},
    {W_NCOLORS, 0xffffffff, "4294967295 colours"},
    {W_NCOLORS, 65536, "cut short"},
    {W_NCOLORS, 257, "cut short"},
    {W_RED_MASK, 0, "red mask is 0"},
    {W_GREEN_MASK, 0xff00ff, "green mask 0x00ff00ff"},
    {W_BLUE_MASK, 0x1ffff, "blue mask 0x0001ffff"},
    {W_RED_MASK, 0xffffffff, "red mask 0xffffffff"},
};

START_TEST(test_bad_header)
{
	struct pd_buf png = {0};
	_cleanup_free_ unsigned char *xwd = NULL;
	pd_error err = {0};
	unsigned w = 7, h = 7;
	size_t len;

	xwd = make_xwd(&xvnc, &len);
	set_word(xwd, bad_words[_i].word, bad_words[_i].value);
	/* Whatever the output held stays. */
	ck_assert_int_eq(pd_buf_append(&png, "keep", 4), 0);
	ck_assert_int_eq(eng_shot_xwd_to_png(xwd, len, &png, &w, &h, &err), -EINVAL);
	ck_assert_int_eq(err.code, -EINVAL);
	ck_assert_msg(strstr(err.msg, bad_words[_i].says), "'%s' does not say '%s'", err.msg,
		      bad_words[_i].says);
	ck_assert_msg(strncmp(err.msg, "xwd: ", 5) == 0, "%s", err.msg);
	ck_assert_str_eq(png.data, "keep");
	ck_assert_uint_eq(w, 7);
	ck_assert_uint_eq(h, 7);
	pd_buf_free(&png);
}
END_TEST

/* Every cut of a grab, from nothing to one byte short, is refused. */
START_TEST(test_every_cut)
{
	_cleanup_free_ unsigned char *xwd = NULL;
	struct layout l = xvnc;
	size_t len;

	l.width = 8;
	l.height = 4;
	l.ncolors = 3;
	xwd = make_xwd(&l, &len);
	for (size_t n = 0; n < len; n++) {
		_cleanup_pd_buf_ struct pd_buf png = {0};
		/* A copy of exactly n bytes, so that reading past them is seen. */
		_cleanup_free_ unsigned char *cut = malloc(n ? n : 1);
		pd_error err = {0};
		unsigned w, h;

		memcpy(cut, xwd, n);
		ck_assert_int_eq(eng_shot_xwd_to_png(cut, n, &png, &w, &h, &err), -EINVAL);
		ck_assert_ptr_null(png.data);
	}
}
END_TEST

/* A header that claims the whole grab is its own (name up to the end): no
 * room for colours or pixels. */
START_TEST(test_header_eats_everything)
{
	_cleanup_pd_buf_ struct pd_buf png = {0};
	_cleanup_free_ unsigned char *xwd = NULL;
	pd_error err = {0};
	unsigned w, h;
	size_t len;

	xwd = make_xwd(&xvnc, &len);
	set_word(xwd, W_HEADER_SIZE, (uint32_t)len);
	ck_assert_int_eq(eng_shot_xwd_to_png(xwd, len, &png, &w, &h, &err), -EINVAL);
	ck_assert_msg(strstr(err.msg, "cut short"), "%s", err.msg);
	set_word(xwd, W_HEADER_SIZE, (uint32_t)len + 1);
	ck_assert_int_eq(eng_shot_xwd_to_png(xwd, len, &png, &w, &h, &err), -EINVAL);
	ck_assert_msg(strstr(err.msg, "header size"), "%s", err.msg);
}
END_TEST

/* Bytes after the image (a longer capture than the header says) are
 * ignored; the PNG replaces what the buffer held. */
START_TEST(test_trailing_bytes_and_replace)
{
	_cleanup_pd_buf_ struct pd_buf png = {0};
	_cleanup_free_ unsigned char *xwd = NULL, *longer = NULL, *rgb = NULL;
	pd_error err = {0};
	unsigned w, h;
	size_t len;

	xwd = make_xwd(&xvnc, &len);
	longer = malloc(len + 100);
	memcpy(longer, xwd, len);
	memset(longer + len, 0x77, 100);
	ck_assert_int_eq(pd_buf_append(&png, "old", 3), 0);
	ck_assert_int_eq(eng_shot_xwd_to_png(longer, len + 100, &png, &w, &h, &err), 0);
	ck_assert(memcmp(png.data, "\x89PNG", 4) == 0);
	rgb = decode_png(&png, &w, &h);
	ck_assert_uint_eq(w, 64);
}
END_TEST

static Suite *shot_suite(void)
{
	Suite *s = suite_create("shot");
	TCase *tc = tcase_create("core");
	TCase *real = tcase_create("real");
	TCase *bad = tcase_create("hostile");

	tcase_add_test(tc, test_xvnc_layout);
	tcase_add_test(tc, test_msb_first);
	tcase_add_test(tc, test_bgr_masks_both_orders);
	tcase_add_test(tc, test_narrow_and_wide_masks);
	tcase_add_test(tc, test_padded_rows);
	tcase_add_test(tc, test_24_bits_packed);
	tcase_add_test(tc, test_one_pixel);
	tcase_add_test(tc, test_largest);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	tcase_add_test(real, test_real_truecolor);
	tcase_add_test(real, test_real_xfce);
	suite_add_tcase(s, real);
	tcase_add_loop_test(bad, test_bad_header, 0, ELEMENTSOF(bad_words));
	tcase_add_test(bad, test_every_cut);
	tcase_add_test(bad, test_header_eats_everything);
	tcase_add_test(bad, test_trailing_bytes_and_replace);
	tcase_set_timeout(bad, 60);
	suite_add_tcase(s, bad);
	return s;
}

int main(void)
{
	return check_tap_run(shot_suite());
}
