/* image.h - installed base images: DATA/images/NAME/ as scripts/mkimage
 * writes it (rootfs/ plus one-line files description, created, size, user,
 * home, shell, and docker: "on" in an image with Docker). A directory whose name starts with "." is a build in
 * progress and is not an image. */
#pragma once

#include <stdbool.h>

#include "common/error.h"
#include "common/parse.h"

struct image_info {
	char name[NAME_MAX_LEN + 1];
	char description[256];
	char created[32];
	char size[32];
	char user[64];
	char home[256];
	char shell[256];
	bool docker; /* its `docker` file says on: Docker, on by default */
};

/* Lists installed image names (sorted). *ret is a malloc'd array of n
 * malloc'd strings; free with image_list_free(). */
int image_list(const char *images_dir, char ***ret, size_t *ret_n);
void image_list_free(char **names, size_t n);

/* Reads one image's metadata. -ENOENT if it is not installed, -EINVAL for
 * an invalid name. */
int image_get(const char *images_dir, const char *name, struct image_info *ret);

/* The rootfs path of an image, in buf. */
void image_rootfs(const char *images_dir, const char *name, char *buf, size_t bufsz);
