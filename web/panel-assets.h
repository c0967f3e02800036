/* panel-assets.h - the web panel's static files, compiled into the daemon.
 *
 * panel-assets.c is generated at build time by embed.sh from the files in web/panel/;
 * the HTTP adapter serves "/" as index.html and "/panel/FILE" as FILE. The
 * table and its bytes are constant and live for the whole process: callers
 * never free or modify them, and may use them from any thread. */
#pragma once

#include <stddef.h>

struct panel_asset {
	const char *path;	   /* base name, e.g. "index.html" */
	const char *content_type;  /* for the Content-Type header */
	const unsigned char *data; /* size bytes, then a NUL not counted in size */
	size_t size;
};

extern const struct panel_asset panel_assets[];
extern const size_t panel_assets_n;

/* The asset named path ("index.html", "app.js": a base name, no leading
 * "/" or "panel/"), or NULL when there is none (including NULL, "", and
 * any name with a "/"). */
const struct panel_asset *panel_asset_find(const char *path);
