#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "runtime/image.h"
#include "common/util.h"

void image_rootfs(const char *images_dir, const char *name, char *buf, size_t bufsz)
{
	snprintf(buf, bufsz, "%s/%s/rootfs", images_dir, name);
}

static bool is_image(int dirfd, const char *name)
{
	char p[300];
	struct stat st;

	if (!name_valid(name))
		return false;
	snprintf(p, sizeof p, "%s/rootfs", name);
	/* Followed: an admin may keep images on another disk, behind a link. */
	return fstatat(dirfd, p, &st, 0) == 0 && S_ISDIR(st.st_mode);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void image_list_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

int image_list(const char *images_dir, char ***ret, size_t *ret_n)
{
	DIR *d = opendir(images_dir);
	char **names = NULL;
	size_t n = 0;
	struct dirent *de;

	if (!d) {
		if (errno == ENOENT) {
			*ret = NULL;
			*ret_n = 0;
			return 0;
		}
		return -errno;
	}
	while ((de = readdir(d))) {
		if (!is_image(dirfd(d), de->d_name))
			continue;
		char **nn = realloc(names, (n + 1) * sizeof *names);
		if (!nn)
			goto oom;
		names = nn;
		if (!(names[n] = strdup(de->d_name)))
			goto oom;
		n++;
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof *names, cmp_str);
	*ret = names;
	*ret_n = n;
	return 0;
oom:
	closedir(d);
	image_list_free(names, n);
	return -ENOMEM;
}

static void read_value(int dirfd, const char *file, char *buf, size_t bufsz, const char *dflt)
{
	_cleanup_free_ char *text = NULL;

	if (read_file_at(dirfd, file, 4096, &text, NULL) < 0) {
		snprintf(buf, bufsz, "%s", dflt);
		return;
	}
	text[strcspn(text, "\n")] = '\0';
	snprintf(buf, bufsz, "%s", text);
}

int image_get(const char *images_dir, const char *name, struct image_info *ret)
{
	_cleanup_close_ int root = -1, dir = -1;
	struct image_info info = {0};

	if (!name_valid(name))
		return -EINVAL;
	root = open(images_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return errno == ENOENT ? -ENOENT : -errno;
	if (!is_image(root, name))
		return -ENOENT;
	dir = openat(root, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return -errno;
	snprintf(info.name, sizeof info.name, "%s", name);
	read_value(dir, "description", info.description, sizeof info.description, "");
	read_value(dir, "created", info.created, sizeof info.created, "");
	read_value(dir, "size", info.size, sizeof info.size, "0");
	read_value(dir, "user", info.user, sizeof info.user, "root");
	read_value(dir, "home", info.home, sizeof info.home, "/root");
	read_value(dir, "shell", info.shell, sizeof info.shell, "/bin/sh");
	{
		char docker[8];
		read_value(dir, "docker", docker, sizeof docker, "off");
		info.docker = strcmp(docker, "on") == 0;
	}
	*ret = info;
	return 0;
}
