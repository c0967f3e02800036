/* shot.h - a screen grab (xwd's dump of the root window) to PNG. Pure: no
 * I/O, safe on hostile input (the dump comes from the box). */
#pragma once

#include <stddef.h>

#include "common/buf.h"
#include "common/error.h"

/* Converts an XWD ZPixmap of a TrueColor visual (24 or 32 bits a pixel)
 * into an 8-bit RGB PNG in *ret_png (appended), its size in *ret_w and
 * *ret_h. -EINVAL (reason in err) for anything else or anything short. */
int eng_shot_xwd_to_png(const void *xwd, size_t len, struct pd_buf *ret_png, unsigned *ret_w,
			unsigned *ret_h, pd_error *err);
