/* shot.h - a screen grab as a PNG: the output of `xwd -root -silent`, run
 * in the box, decoded here and encoded with libpng. Pure: no I/O, no lock,
 * thread-safe.
 *
 * The grab comes from the box (its xwd is the box's own program), so it is
 * hostile: every size in its header is checked against the bytes there
 * are and against DESKTOP_WIDTH_MAX x DESKTOP_HEIGHT_MAX before anything
 * is read or allocated.
 *
 * What is taken: XWD version 7 (its header is big-endian whatever the
 * machine), a ZPixmap of depth 24 or 32 with 32 or 24 bits per pixel, a
 * TrueColor or DirectColor visual (taken as TrueColor: the identity map
 * xwd writes) whose red, green and blue masks are contiguous runs of 1 to
 * 16 bits, pixels in the byte order the header names (LSBFirst or
 * MSBFirst), rows bytes_per_line apart. 24 bits per pixel are packed,
 * 3 bytes a pixel: xwd -root writes those on a screen with several
 * visuals (an XFCE session on Xvnc: DirectColor, 24 bits, rows of 4 bytes
 * a pixel of which 3 are used); 32 bits are 4 bytes a pixel (Xvnc with a
 * single visual: TrueColor).
 *
 * The PNG is 8-bit RGB, no alpha, compressed for speed: zlib level
 * SHOT_PNG_LEVEL and the "up" filter on every row. On a 1280x800 XFCE
 * desktop: 45 KB in ~10 ms. On photo-like content it is as fast as no
 * filter and a third smaller; libpng's adaptive filters at its default
 * level take 2.5 times as long for 15% less.
 */
#pragma once

#include <stddef.h>

#include "common/buf.h"
#include "common/error.h"

#define SHOT_PNG_LEVEL 1

/* What a caller reading xwd's output may stop at (and fail): a grab of
 * the largest screen is about 33 MB (3840 x 2160 x 4, a 65536-entry
 * colour table at most, a short header). */
#define SHOT_XWD_MAX (64u << 20)

/* Converts the xwd file xwd[0..len) to a PNG. On success returns 0, puts
 * the PNG in *ret_png (whatever it held is freed first) and the size in
 * *ret_w, *ret_h. A grab that is not what is taken above, or is cut short:
 * -EINVAL and a reason in err ("xwd: ..."), the out-parameters untouched.
 * -ENOMEM when out of memory. */
int eng_shot_xwd_to_png(const void *xwd, size_t len, struct pd_buf *ret_png, unsigned *ret_w,
			unsigned *ret_h, pd_error *err);
