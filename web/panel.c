/* panel.c - lookup in the web panel's compiled-in assets (panel-assets.h). */
#include <string.h>

#include "web/panel-assets.h"

const struct panel_asset *panel_asset_find(const char *path)
{
	if (!path || !*path || strchr(path, '/'))
		return NULL;
	for (size_t i = 0; i < panel_assets_n; i++)
		if (strcmp(panel_assets[i].path, path) == 0)
			return &panel_assets[i];
	return NULL;
}
