/* shot.c - xwd screen grab to PNG (see shot.h). The XWD layout is X11's
 * XWDFile.h: a header of 25 big-endian 32-bit words, the window's name
 * (up to header_size), ncolors colour entries of 12 bytes, then the image,
 * bytes_per_line per row.
 */
#include "engine/shot.h"

#include <errno.h>
#include <png.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/desktop.h"
#include "common/util.h"

enum {
	H_HEADER_SIZE,
	H_FILE_VERSION,
	H_PIXMAP_FORMAT,
	H_PIXMAP_DEPTH,
	H_PIXMAP_WIDTH,
	H_PIXMAP_HEIGHT,
	H_XOFFSET,
	H_BYTE_ORDER,
	H_BITMAP_UNIT,
	H_BITMAP_BIT_ORDER,
	H_BITMAP_PAD,
	H_BITS_PER_PIXEL,
	H_BYTES_PER_LINE,
	H_VISUAL_CLASS,
	H_RED_MASK,
	H_GREEN_MASK,
	H_BLUE_MASK,
	H_BITS_PER_RGB,
	H_COLORMAP_ENTRIES,
	H_NCOLORS,
	H_WORDS = 25, /* window_width... window_bdrwidth follow, unused */
};

#define XWD_FILE_VERSION 7
#define XWD_ZPIXMAP 2
#define XWD_LSB_FIRST 0
#define XWD_MSB_FIRST 1
#define XWD_TRUE_COLOR 4
#define XWD_DIRECT_COLOR 5
#define XWD_COLOR_SIZE 12
/* More colour entries than any visual has (a 16-bit DirectColor map). */
#define XWD_NCOLORS_MAX 65536

/* How one channel is taken out of a pixel value. */
struct channel {
	unsigned shift, bits;
};

struct grab {
	unsigned width, height;
	size_t bytes_per_line;
	unsigned bytes_per_pixel; /* 4, or 3 for packed 24-bit pixels */
	bool msb_first;
	struct channel red, green, blue;
	const unsigned char *pixels;
};

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

/* A mask of 1 to 16 contiguous bits. */
static int channel_from_mask(uint32_t mask, const char *name, struct channel *c, pd_error *err)
{
	unsigned shift, bits;

	if (mask == 0)
		return pd_error_set(err, -EINVAL, "xwd: the %s mask is 0", name);
	shift = (unsigned)__builtin_ctz(mask);
	bits = (unsigned)__builtin_popcount(mask);
	if (bits > 16 || (mask >> shift) != (bits == 32 ? UINT32_MAX : (1u << bits) - 1))
		return pd_error_set(err, -EINVAL,
				    "xwd: the %s mask 0x%08x is not 1 to 16 contiguous bits", name,
				    (unsigned)mask);
	c->shift = shift;
	c->bits = bits;
	return 0;
}

static int parse_xwd(const unsigned char *p, size_t len, struct grab *g, pd_error *err)
{
	uint32_t h[H_WORDS];
	uint64_t data_off, data_len;
	int r;

	if (len < H_WORDS * 4)
		return pd_error_set(err, -EINVAL, "xwd: %zu bytes, less than a header (%d)", len,
				    H_WORDS * 4);
	for (size_t i = 0; i < H_WORDS; i++)
		h[i] = be32(p + 4 * i);
	if (h[H_FILE_VERSION] != XWD_FILE_VERSION)
		return pd_error_set(err, -EINVAL, "xwd: file version %u, not %d",
				    (unsigned)h[H_FILE_VERSION], XWD_FILE_VERSION);
	if (h[H_HEADER_SIZE] < H_WORDS * 4 || h[H_HEADER_SIZE] > len)
		return pd_error_set(err, -EINVAL, "xwd: header size %u out of %d to %zu",
				    (unsigned)h[H_HEADER_SIZE], H_WORDS * 4, len);
	if (h[H_PIXMAP_FORMAT] != XWD_ZPIXMAP)
		return pd_error_set(err, -EINVAL, "xwd: pixmap format %u, not ZPixmap (%d)",
				    (unsigned)h[H_PIXMAP_FORMAT], XWD_ZPIXMAP);
	if (h[H_PIXMAP_DEPTH] != 24 && h[H_PIXMAP_DEPTH] != 32)
		return pd_error_set(err, -EINVAL, "xwd: depth %u, not 24 or 32",
				    (unsigned)h[H_PIXMAP_DEPTH]);
	if (h[H_BITS_PER_PIXEL] != 32 && h[H_BITS_PER_PIXEL] != 24)
		return pd_error_set(err, -EINVAL, "xwd: %u bits per pixel, not 24 or 32",
				    (unsigned)h[H_BITS_PER_PIXEL]);
	if (h[H_VISUAL_CLASS] != XWD_TRUE_COLOR && h[H_VISUAL_CLASS] != XWD_DIRECT_COLOR)
		return pd_error_set(err, -EINVAL,
				    "xwd: visual class %u, not TrueColor (4) or DirectColor (5)",
				    (unsigned)h[H_VISUAL_CLASS]);
	if (h[H_BYTE_ORDER] != XWD_LSB_FIRST && h[H_BYTE_ORDER] != XWD_MSB_FIRST)
		return pd_error_set(err, -EINVAL, "xwd: byte order %u, not LSBFirst or MSBFirst",
				    (unsigned)h[H_BYTE_ORDER]);
	if (h[H_XOFFSET] != 0)
		return pd_error_set(err, -EINVAL, "xwd: x offset %u, not 0",
				    (unsigned)h[H_XOFFSET]);
	if (h[H_PIXMAP_WIDTH] < 1 || h[H_PIXMAP_WIDTH] > DESKTOP_WIDTH_MAX ||
	    h[H_PIXMAP_HEIGHT] < 1 || h[H_PIXMAP_HEIGHT] > DESKTOP_HEIGHT_MAX)
		return pd_error_set(err, -EINVAL, "xwd: size %ux%u out of 1x1 to %dx%d",
				    (unsigned)h[H_PIXMAP_WIDTH], (unsigned)h[H_PIXMAP_HEIGHT],
				    DESKTOP_WIDTH_MAX, DESKTOP_HEIGHT_MAX);
	/* 24 bits: packed, 3 bytes a pixel, as xwd's grab of a screen with
	 * several visuals (an XFCE desktop) is, in rows sized for 4. */
	g->bytes_per_pixel = h[H_BITS_PER_PIXEL] / 8;
	if ((uint64_t)h[H_BYTES_PER_LINE] < (uint64_t)h[H_PIXMAP_WIDTH] * g->bytes_per_pixel)
		return pd_error_set(err, -EINVAL,
				    "xwd: %u bytes per line, less than %u pixels of %u bits",
				    (unsigned)h[H_BYTES_PER_LINE], (unsigned)h[H_PIXMAP_WIDTH],
				    (unsigned)h[H_BITS_PER_PIXEL]);
	if (h[H_NCOLORS] > XWD_NCOLORS_MAX)
		return pd_error_set(err, -EINVAL, "xwd: %u colours, more than %d",
				    (unsigned)h[H_NCOLORS], XWD_NCOLORS_MAX);
	if ((r = channel_from_mask(h[H_RED_MASK], "red", &g->red, err)) < 0 ||
	    (r = channel_from_mask(h[H_GREEN_MASK], "green", &g->green, err)) < 0 ||
	    (r = channel_from_mask(h[H_BLUE_MASK], "blue", &g->blue, err)) < 0)
		return r;
	/* 64-bit sums of 32-bit values and of their products: no overflow. */
	data_off = (uint64_t)h[H_HEADER_SIZE] + (uint64_t)h[H_NCOLORS] * XWD_COLOR_SIZE;
	data_len = (uint64_t)h[H_BYTES_PER_LINE] * h[H_PIXMAP_HEIGHT];
	if (data_off > len || data_len > len - data_off)
		return pd_error_set(
		    err, -EINVAL, "xwd: %zu bytes, cut short (the image needs %llu after %llu)",
		    len, (unsigned long long)data_len, (unsigned long long)data_off);
	g->width = h[H_PIXMAP_WIDTH];
	g->height = h[H_PIXMAP_HEIGHT];
	g->bytes_per_line = h[H_BYTES_PER_LINE];
	g->msb_first = h[H_BYTE_ORDER] == XWD_MSB_FIRST;
	g->pixels = p + data_off;
	return 0;
}

static unsigned char channel_value(const struct channel *c, uint32_t v)
{
	uint32_t max, x;

	if (c->bits >= 8)
		return (unsigned char)(v >> (c->shift + c->bits - 8));
	max = (1u << c->bits) - 1;
	x = (v >> c->shift) & max;
	return (unsigned char)((x * 255 + max / 2) / max);
}

/* One row of the grab as RGB bytes. */
static void row_to_rgb(const struct grab *g, unsigned y, unsigned char *out)
{
	const unsigned char *src = g->pixels + (size_t)y * g->bytes_per_line;
	bool bgrx = g->bytes_per_pixel == 4 && !g->msb_first && g->red.shift == 16 &&
		    g->red.bits == 8 && g->green.shift == 8 && g->green.bits == 8 &&
		    g->blue.shift == 0 && g->blue.bits == 8;

	if (bgrx) {
		/* Xvnc's usual layout: B, G, R, unused. */
		for (unsigned x = 0; x < g->width; x++, src += 4, out += 3) {
			out[0] = src[2];
			out[1] = src[1];
			out[2] = src[0];
		}
		return;
	}
	for (unsigned x = 0; x < g->width; x++, src += g->bytes_per_pixel, out += 3) {
		uint32_t v;

		if (g->bytes_per_pixel == 3)
			v = g->msb_first ? (uint32_t)src[0] << 16 | (uint32_t)src[1] << 8 | src[2]
					 : (uint32_t)src[2] << 16 | (uint32_t)src[1] << 8 | src[0];
		else
			v = g->msb_first ? be32(src) : le32(src);
		out[0] = channel_value(&g->red, v);
		out[1] = channel_value(&g->green, v);
		out[2] = channel_value(&g->blue, v);
	}
}

struct png_out {
	struct pd_buf buf;
	int code; /* -ENOMEM when an append failed */
	char msg[200];
};

static void png_on_error(png_structp png, png_const_charp msg)
{
	struct png_out *o = png_get_error_ptr(png);

	snprintf(o->msg, sizeof(o->msg), "%s", msg);
	png_longjmp(png, 1);
}

static void png_on_warning(png_structp png, png_const_charp msg)
{
	(void)png;
	(void)msg;
}

static void png_on_write(png_structp png, png_bytep data, size_t n)
{
	struct png_out *o = png_get_io_ptr(png);

	if (pd_buf_append(&o->buf, data, n) < 0) {
		o->code = -ENOMEM;
		png_error(png, "out of memory");
	}
}

static void png_on_flush(png_structp png)
{
	(void)png;
}

/* Encodes g into o->buf. The libpng calls are all after setjmp; what they
 * touch lives in o and row, set before it. */
static int encode_png(const struct grab *g, struct png_out *o, unsigned char *row, pd_error *err)
{
	png_structp png;
	png_infop info = NULL;

	png = png_create_write_struct(PNG_LIBPNG_VER_STRING, o, png_on_error, png_on_warning);
	if (!png)
		return pd_error_set(err, -ENOMEM, "out of memory");
	info = png_create_info_struct(png);
	if (!info) {
		png_destroy_write_struct(&png, NULL);
		return pd_error_set(err, -ENOMEM, "out of memory");
	}
	if (setjmp(png_jmpbuf(png))) {
		png_destroy_write_struct(&png, &info);
		if (o->code == -ENOMEM)
			return pd_error_set(err, -ENOMEM, "out of memory");
		return pd_error_set(err, -EIO, "png: %s", o->msg);
	}
	png_set_write_fn(png, o, png_on_write, png_on_flush);
	png_set_IHDR(png, info, g->width, g->height, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
		     PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
	png_set_compression_level(png, SHOT_PNG_LEVEL);
	png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_UP);
	png_write_info(png, info);
	for (unsigned y = 0; y < g->height; y++) {
		row_to_rgb(g, y, row);
		png_write_row(png, row);
	}
	png_write_end(png, info);
	png_destroy_write_struct(&png, &info);
	return 0;
}

int eng_shot_xwd_to_png(const void *xwd, size_t len, struct pd_buf *ret_png, unsigned *ret_w,
			unsigned *ret_h, pd_error *err)
{
	_cleanup_free_ unsigned char *row = NULL;
	struct png_out o = {0};
	struct grab g;
	int r;

	r = parse_xwd(xwd, len, &g, err);
	if (r < 0)
		return r;
	row = malloc((size_t)g.width * 3);
	if (!row)
		return pd_error_set(err, -ENOMEM, "out of memory");
	r = encode_png(&g, &o, row, err);
	if (r < 0) {
		pd_buf_free(&o.buf);
		return r;
	}
	pd_buf_free(ret_png);
	ret_png->data = o.buf.data;
	ret_png->len = o.buf.len;
	ret_png->size = o.buf.size;
	ret_png->truncated = false;
	*ret_w = g.width;
	*ret_h = g.height;
	return 0;
}
