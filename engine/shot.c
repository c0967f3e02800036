/* shot.c - xwd to PNG (shot.h), encoded with libpng. */
#include <png.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/desktop.h"
#include "engine/shot.h"

#define XWD_HEADER_WORDS 25

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static unsigned mask_shift(uint32_t m)
{
	unsigned s = 0;
	while (m && !(m & 1)) {
		m >>= 1;
		s++;
	}
	return s;
}

static void png_out(png_structp p, png_bytep data, png_size_t n)
{
	if (pd_buf_append(png_get_io_ptr(p), data, n) < 0)
		png_error(p, "out of memory");
}

static void png_flush(png_structp p)
{
	(void)p;
}

struct layout {
	const unsigned char *d;
	size_t px0, step;
	uint32_t order, bpl, w, h, rm, gm, bm;
	unsigned rs, gs, bs;
};

static __attribute__((noinline)) void write_rows(png_structp png, const struct layout *l,
						 unsigned char *row)
{
	for (uint32_t y = 0; y < l->h; y++) {
		const unsigned char *src = l->d + l->px0 + (size_t)y * l->bpl;
		for (uint32_t x = 0; x < l->w; x++, src += l->step) {
			uint32_t v = 0;
			for (size_t k = 0; k < l->step; k++)
				v |= l->order == 0 ? (uint32_t)src[k] << (8 * k)
						   : (uint32_t)src[k] << (8 * (l->step - 1 - k));
			row[3 * x] =
			    (unsigned char)(((v & l->rm) >> l->rs) * 255 / (l->rm >> l->rs));
			row[3 * x + 1] =
			    (unsigned char)(((v & l->gm) >> l->gs) * 255 / (l->gm >> l->gs));
			row[3 * x + 2] =
			    (unsigned char)(((v & l->bm) >> l->bs) * 255 / (l->bm >> l->bs));
		}
		png_write_row(png, row);
	}
}

static int encode(const struct layout *l, struct pd_buf *out)
{
	png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
	png_infop info = png ? png_create_info_struct(png) : NULL;
	unsigned char *volatile row = malloc((size_t)l->w * 3);

	if (!row || !png || !info) {
		png_destroy_write_struct(&png, &info);
		free(row);
		return -ENOMEM;
	}
	if (setjmp(png_jmpbuf(png))) {
		png_destroy_write_struct(&png, &info);
		free(row);
		return -ENOMEM;
	}
	png_set_write_fn(png, out, png_out, png_flush);
	png_set_IHDR(png, info, l->w, l->h, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
		     PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
	png_set_compression_level(png, 1);
	png_set_filter(png, 0, PNG_FILTER_SUB);
	png_write_info(png, info);
	write_rows(png, l, row);
	png_write_end(png, NULL);
	png_destroy_write_struct(&png, &info);
	free(row);
	return 0;
}

int eng_shot_xwd_to_png(const void *xwd, size_t len, struct pd_buf *ret_png, unsigned *ret_w,
			unsigned *ret_h, pd_error *err)
{
	const unsigned char *d = xwd;
	uint32_t h[XWD_HEADER_WORDS];
	size_t px0, step;
	unsigned rs, gs, bs;
	uint32_t rm, gm, bm;

	if (len < XWD_HEADER_WORDS * 4)
		return pd_error_set(err, -EINVAL, "screen grab: %zu bytes, shorter than a header",
				    len);
	for (int i = 0; i < XWD_HEADER_WORDS; i++)
		h[i] = be32(d + 4 * i);
	uint32_t hsize = h[0], version = h[1], format = h[2], w = h[4], ht = h[5], order = h[7],
		 bpp = h[11], bpl = h[12], ncolors = h[19];
	rm = h[13 + 1];
	gm = h[13 + 2];
	bm = h[13 + 3];
	if (version != 7 || format != 2)
		return pd_error_set(err, -EINVAL, "screen grab: not an XWD ZPixmap");
	if (w == 0 || ht == 0 || w > DESKTOP_WIDTH_MAX * 2 || ht > DESKTOP_HEIGHT_MAX * 2)
		return pd_error_set(err, -EINVAL, "screen grab: size %ux%u", w, ht);
	if (bpp != 32 && bpp != 24)
		return pd_error_set(err, -EINVAL, "screen grab: %u bits a pixel", bpp);
	step = bpp / 8;
	if (!rm || !gm || !bm || (uint64_t)bpl < (uint64_t)w * step)
		return pd_error_set(err, -EINVAL, "screen grab: bad masks or line length");
	if (hsize < XWD_HEADER_WORDS * 4 || ncolors > 65536)
		return pd_error_set(err, -EINVAL, "screen grab: bad header");
	px0 = (size_t)hsize + (size_t)ncolors * 12;
	if (px0 > len || (uint64_t)bpl * ht > len - px0)
		return pd_error_set(err, -EINVAL, "screen grab: truncated");
	rs = mask_shift(rm);
	gs = mask_shift(gm);
	bs = mask_shift(bm);

	struct layout l = {.d = d,
			   .px0 = px0,
			   .step = step,
			   .order = order,
			   .bpl = bpl,
			   .w = w,
			   .h = ht,
			   .rm = rm,
			   .gm = gm,
			   .bm = bm,
			   .rs = rs,
			   .gs = gs,
			   .bs = bs};
	int r = encode(&l, ret_png);
	if (r < 0)
		return pd_error_set(err, r, "cannot encode the PNG");
	*ret_w = w;
	*ret_h = ht;
	return 0;
}
