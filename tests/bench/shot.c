/* shot.c - the xwd to PNG conversion of screenshot.png (engine/shot.c)
 * against libpng's defaults, on a 1280x800 frame, in process. Built and
 * run by shot.sh.
 *
 * The frame: the PNG given (an XFCE desktop) turned into the grab xwd
 * -root writes on that desktop (24 bits a pixel, rows of 4 bytes a pixel,
 * DirectColor); and a "photo" variant whose right half is smooth colour
 * with noise, the hard case for a fast compressor.
 *
 * For each frame, interleaved, N rounds of:
 *   copy      memcpy of the grab's bytes (the floor: what any use of
 *             them costs);
 *   paddock   eng_shot_xwd_to_png();
 *   default   the same pixels through libpng's simplified writer with
 *             its defaults (zlib level 6, adaptive filters): what a
 *             converter that does not choose gets.
 * Prints "FRAME METHOD median_ms bytes" lines.
 */
#include <png.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/buf.h"
#include "common/error.h"
#include "engine/shot.h"

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void put_be32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

/* The grab of rgb (w x h) as xwd writes it on an XFCE desktop. */
static unsigned char *to_xwd(const unsigned char *rgb, unsigned w, unsigned h, size_t *ret_len)
{
	static const uint32_t words[25] = {
	    [0] = 107,	   [1] = 7,	[2] = 2,   [3] = 24,   [7] = 0,
	    [8] = 32,	   [10] = 8,	[11] = 24, [13] = 5,   [14] = 0xff0000,
	    [15] = 0xff00, [16] = 0xff, [17] = 8,  [18] = 256, [19] = 256,
	};
	size_t off = 107 + 256 * 12, bpl = (size_t)w * 4, len = off + bpl * h;
	unsigned char *x = calloc(1, len);

	if (!x)
		return NULL;
	for (int i = 0; i < 25; i++)
		put_be32(x + 4 * i, words[i]);
	put_be32(x + 16, w);
	put_be32(x + 20, h);
	put_be32(x + 48, (uint32_t)bpl);
	memcpy(x + 100, "xwdump", 7);
	for (unsigned y = 0; y < h; y++)
		for (unsigned i = 0; i < w; i++) {
			const unsigned char *s = rgb + ((size_t)y * w + i) * 3;
			unsigned char *d = x + off + y * bpl + i * 3;
			d[0] = s[2];
			d[1] = s[1];
			d[2] = s[0];
		}
	*ret_len = len;
	return x;
}

/* The right half as smooth colour with noise (a fixed pseudo-random). */
static void photo(unsigned char *rgb, unsigned w, unsigned h)
{
	uint32_t seed = 1;

	for (unsigned y = 0; y < h; y++)
		for (unsigned x = w / 2; x < w; x++) {
			unsigned char *p = rgb + ((size_t)y * w + x) * 3;
			for (int c = 0; c < 3; c++) {
				int v = (int)(128 +
					      100 * __builtin_sin((x + 40.0 * c) / (37.0 + 9 * c)) *
						  __builtin_cos((y + 17.0 * c) / 23.0));
				seed = seed * 1103515245 + 12345;
				v += (int)((seed >> 16) % 13) - 6;
				p[c] = (unsigned char)(v < 0 ? 0 : v > 255 ? 255 : v);
			}
		}
}

static int run(const char *frame, const unsigned char *rgb, unsigned w, unsigned h, int n)
{
	double *t_copy = calloc((size_t)n, sizeof(double));
	double *t_ours = calloc((size_t)n, sizeof(double));
	double *t_def = calloc((size_t)n, sizeof(double));
	size_t len, ours_bytes = 0, def_bytes = 0;
	unsigned char *xwd = to_xwd(rgb, w, h, &len), *copy = malloc(len);

	if (!xwd || !copy || !t_copy || !t_ours || !t_def)
		return -1;
	for (int i = 0; i < n; i++) {
		struct pd_buf png = {0};
		pd_error err = {0};
		png_image img;
		png_alloc_size_t size = 0;
		unsigned ow, oh;
		void *mem;
		double t;

		t = now_ms();
		memcpy(copy, xwd, len);
		t_copy[i] = now_ms() - t;
		__asm__ volatile("" : : "r"(copy) : "memory");

		t = now_ms();
		if (eng_shot_xwd_to_png(xwd, len, &png, &ow, &oh, &err) < 0) {
			fprintf(stderr, "shot: %s\n", err.msg);
			return -1;
		}
		t_ours[i] = now_ms() - t;
		ours_bytes = png.len;
		pd_buf_free(&png);

		memset(&img, 0, sizeof(img));
		img.version = PNG_IMAGE_VERSION;
		img.width = w;
		img.height = h;
		img.format = PNG_FORMAT_RGB;
		t = now_ms();
		/* The default path as a converter would write it: RGB rows in,
		 * a PNG in memory out (sized first, then written). */
		if (!png_image_write_get_memory_size(img, size, 0, rgb, 0, NULL) ||
		    !(mem = malloc(size)) ||
		    !png_image_write_to_memory(&img, mem, &size, 0, rgb, 0, NULL)) {
			fprintf(stderr, "libpng: %s\n", img.message);
			return -1;
		}
		t_def[i] = now_ms() - t;
		def_bytes = size;
		free(mem);
	}
	printf("%s copy %.3f %zu\n", frame, median(t_copy, n), len);
	printf("%s paddock %.3f %zu\n", frame, median(t_ours, n), ours_bytes);
	printf("%s default %.3f %zu\n", frame, median(t_def, n), def_bytes);
	free(xwd);
	free(copy);
	free(t_copy);
	free(t_ours);
	free(t_def);
	return 0;
}

int main(int argc, char **argv)
{
	png_image img;
	unsigned char *rgb;
	int n = argc > 2 ? atoi(argv[2]) : 20;

	if (argc < 2 || n < 1) {
		fprintf(stderr, "usage: shot FRAME.png [ROUNDS]\n");
		return 2;
	}
	memset(&img, 0, sizeof(img));
	img.version = PNG_IMAGE_VERSION;
	if (!png_image_begin_read_from_file(&img, argv[1])) {
		fprintf(stderr, "%s: %s\n", argv[1], img.message);
		return 1;
	}
	img.format = PNG_FORMAT_RGB;
	rgb = malloc(PNG_IMAGE_SIZE(img));
	if (!rgb || !png_image_finish_read(&img, NULL, rgb, 0, NULL)) {
		fprintf(stderr, "%s: %s\n", argv[1], img.message);
		return 1;
	}
	if (run("desktop", rgb, img.width, img.height, n) < 0)
		return 1;
	photo(rgb, img.width, img.height);
	if (run("photo", rgb, img.width, img.height, n) < 0)
		return 1;
	free(rgb);
	return 0;
}
