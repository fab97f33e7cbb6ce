/* SPDX-License-Identifier: MIT */
/*
 * The cache directory: where it is, whether it may be used, and its size
 * bound.  Reports keep decompressed copies of debug files (DIR/debug,
 * debugcache.c) and the names found in module files (DIR/symbols,
 * symcache.c) there.  Root uses it too, so it must be a directory no one
 * else could change; and it must not grow without bound: a copy is as large
 * as the DWARF it inflates, one per build-id, so before a file is written
 * the least recently used ones go until the new one fits.
 */
#include "symbols/symbols.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/*
 * A file read from the cache has its mtime set to now when it is older than
 * this: recency survives noatime mounts, and a warm report does not write
 * the inode of every file it reads.  LRU order to the hour is plenty.
 */
#define TOUCH_EVERY_S 3600

/* The subdirectories whose files count towards the bound, and may be removed. */
static const char *const bounded_dirs[] = {"debug", "symbols"};

char *sp_debug_cache_dir(const char *dir)
{
	char *out = NULL;
	if (!dir)
		dir = getenv("STACKPULSE_CACHE_DIR");
	if (dir) {
		/* An explicit empty directory switches the cache off. */
		return *dir == '/' ? strdup(dir) : NULL;
	}
	const char *xdg = getenv("XDG_CACHE_HOME");
	const char *home = getenv("HOME");
	if (xdg && *xdg == '/') {
		if (asprintf(&out, "%s/stackpulse", xdg) < 0)
			out = NULL;
	} else if (home && *home == '/') {
		if (asprintf(&out, "%s/.cache/stackpulse", home) < 0)
			out = NULL;
	}
	return out;
}

/*
 * Whether the directory fd (named name, a component of the cache path) may be
 * gone through (last false) or may hold the cache (last true).  A directory
 * another user could change lets them swap what lies below for a symlink
 * into any directory root can write.
 */
static const char *dir_refusal(int fd, bool last)
{
	struct stat st;
	if (fstat(fd, &st))
		return "cannot be read";
	if (!S_ISDIR(st.st_mode))
		return "not a directory";
	if (last) {
		if (st.st_uid != geteuid())
			return "owned by another user";
		if (st.st_mode & (S_IWGRP | S_IWOTH))
			return "writable by group or others";
		return NULL;
	}
	if (st.st_uid != 0 && st.st_uid != geteuid())
		return "inside a directory owned by another user";
	/* /tmp: others may add entries, but only their owner may rename or remove them. */
	if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))
		return "inside a directory writable by group or others";
	return NULL;
}

/*
 * sp_cache_dir_check's walk; with fd_out, the checked directory stays open
 * (O_PATH) in *fd_out, so what is done in it is done where the walk ended.
 */
static int walk(const char *path, bool create, const char **why, int *fd_out)
{
	const char *unused;
	why = why ? why : &unused;
	*why = NULL;
	if (path[0] != '/')
		return -EINVAL;
	int fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int err = 0;
	const char *p = path;
	while (!err) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		size_t n = strcspn(p, "/");
		char name[NAME_MAX + 1];
		if (n > NAME_MAX) {
			err = -ENAMETOOLONG;
			break;
		}
		memcpy(name, p, n);
		name[n] = '\0';
		p += n;
		bool last = !p[strspn(p, "/")];
		/* O_NOFOLLOW | O_DIRECTORY: a symlink component fails (ELOOP or ENOTDIR). */
		int next = openat(fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0 && errno == ENOENT && create) {
			if (mkdirat(fd, name, 0700) && errno != EEXIST) {
				err = -errno;
				break;
			}
			next = openat(fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
		if (next < 0) {
			err = -errno;
			if (err == -ELOOP || err == -ENOTDIR) {
				*why = "a symbolic link or not a directory";
				err = -EPERM;
			}
			break;
		}
		close(fd);
		fd = next;
		if ((*why = dir_refusal(fd, last)))
			err = -EPERM;
	}
	if (!err && fd_out) {
		*fd_out = fd;
		return 0;
	}
	close(fd);
	return err;
}

int sp_cache_dir_check(const char *path, bool create, const char **why)
{
	return walk(path, create, why, NULL);
}

int sp_cache_dir_check_tree(const char *path, const char *const *subs, size_t nsubs,
			    size_t *which, const char **why)
{
	const char *unused;
	why = why ? why : &unused;
	*which = 0;
	int fd, err = walk(path, false, why, &fd);
	if (err)
		return err;
	/* Below a directory sp_cache_dir_check accepts as last, each subdirectory as last too. */
	for (size_t i = 0; i < nsubs && !err; i++) {
		int sub = openat(fd, subs[i], O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0) {
			if (errno == ENOENT)
				continue;
			err = -errno;
			if (err == -ELOOP || err == -ENOTDIR) {
				*why = "a symbolic link or not a directory";
				err = -EPERM;
			}
		} else {
			if ((*why = dir_refusal(sub, true)))
				err = -EPERM;
			close(sub);
		}
		if (err)
			*which = i + 1;
	}
	close(fd);
	return err;
}

int sp_cache_make_dirs(const char *path)
{
	return walk(path, true, NULL, NULL);
}

int sp_cache_open_own(const char *path, struct stat *st)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	if (fstat(fd, st) || !S_ISREG(st->st_mode) || st->st_uid != geteuid() ||
	    (st->st_mode & (S_IWGRP | S_IWOTH))) {
		close(fd);
		return -1;
	}
	return fd;
}

void sp_cache_touch(int fd, const struct stat *st)
{
	struct timespec now;
	if (clock_gettime(CLOCK_REALTIME, &now) || now.tv_sec - st->st_mtim.tv_sec < TOUCH_EVERY_S)
		return;
	/* The owner may set its times on a read-only descriptor (utimensat(2)). */
	const struct timespec times[2] = {{.tv_nsec = UTIME_OMIT}, {.tv_nsec = UTIME_NOW}};
	futimens(fd, times);
}

/* "1048576", "512K", "2G" (K, M, G, T: powers of 1024): 0 and *out, or -EINVAL. */
static int parse_size(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	const char *p = s;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (p == s)
		return -EINVAL;
	static const char units[] = "KMGT";
	const char *u = *p ? strchr(units, *p & ~0x20) : NULL;
	if (*p && (!u || p[1]))
		return -EINVAL;
	for (int shift = u ? 10 * (int)(u - units + 1) : 0; shift > 0; shift -= 10) {
		if (v > UINT64_MAX >> 10)
			return -EINVAL;
		v <<= 10;
	}
	*out = v;
	return 0;
}

uint64_t sp_cache_max_bytes(uint64_t max, const char **invalid)
{
	if (invalid)
		*invalid = NULL;
	if (max)
		return max;
	const char *env = getenv("STACKPULSE_CACHE_SIZE");
	if (!env || !*env)
		return SP_CACHE_DEFAULT_MAX;
	if (parse_size(env, &max)) {
		if (invalid)
			*invalid = env;
		return SP_CACHE_DEFAULT_MAX;
	}
	return max;
}

/* One file of the cache that may be removed. */
struct cached_file {
	int dir;       /* index into bounded_dirs */
	char *name;
	uint64_t size;
	struct timespec mtime;
};

static int older_first(const void *pa, const void *pb)
{
	const struct cached_file *a = pa, *b = pb;
	if (a->mtime.tv_sec != b->mtime.tv_sec)
		return a->mtime.tv_sec < b->mtime.tv_sec ? -1 : 1;
	if (a->mtime.tv_nsec != b->mtime.tv_nsec)
		return a->mtime.tv_nsec < b->mtime.tv_nsec ? -1 : 1;
	return strcmp(a->name, b->name);
}

/*
 * Add the regular files of this user in the directory d to *files: nothing
 * else counts or is ever removed (a symlink, a directory, another user's
 * file).  0 or -ENOMEM.
 */
static int list_files(DIR *d, int which, struct cached_file **files, size_t *n, size_t *cap,
		      uint64_t *total)
{
	struct dirent *e;
	while ((e = readdir(d))) {
		struct stat st;
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode) || st.st_uid != geteuid())
			continue;
		if (sp_array_reserve((void **)files, cap, *n + 1, sizeof(**files)))
			return -ENOMEM;
		char *name = strdup(e->d_name);
		if (!name)
			return -ENOMEM;
		(*files)[(*n)++] = (struct cached_file){
			.dir = which,
			.name = name,
			.size = (uint64_t)st.st_size,
			.mtime = st.st_mtim,
		};
		*total = sp_u64_add_sat(*total, (uint64_t)st.st_size);
	}
	return 0;
}

int sp_cache_make_room(const char *cache_dir, uint64_t max, uint64_t incoming,
		       uint64_t *evicted)
{
	*evicted = 0;
	if (!cache_dir)
		return -EINVAL;
	if (incoming > max)
		return -EFBIG;
	DIR *dirs[SP_ARRAY_SIZE(bounded_dirs)] = {NULL};
	struct cached_file *files = NULL;
	size_t n = 0, cap = 0;
	uint64_t total = 0;
	int err = 0;
	for (size_t i = 0; i < SP_ARRAY_SIZE(bounded_dirs) && !err; i++) {
		char *path = NULL;
		int pfd = -1;
		if (asprintf(&path, "%s/%s", cache_dir, bounded_dirs[i]) < 0) {
			err = -ENOMEM;
			break;
		}
		/* Only where no one else could have put anything: the walk's checks. */
		err = walk(path, false, NULL, &pfd);
		free(path);
		if (err == -ENOENT) {
			err = 0;
			continue;
		}
		if (err)
			break;
		int dfd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		close(pfd);
		if (dfd < 0 || !(dirs[i] = fdopendir(dfd))) {
			err = -errno;
			if (dfd >= 0)
				close(dfd);
			break;
		}
		err = list_files(dirs[i], (int)i, &files, &n, &cap, &total);
	}
	if (!err && n) {
		qsort(files, n, sizeof(*files), older_first);
		/* unlinkat never follows a final symlink; these are names in dirs checked above. */
		for (size_t i = 0; i < n && total > max - incoming; i++) {
			if (unlinkat(dirfd(dirs[files[i].dir]), files[i].name, 0))
				continue;
			total -= files[i].size;
			(*evicted)++;
		}
	}
	for (size_t i = 0; i < n; i++)
		free(files[i].name);
	free(files);
	for (size_t i = 0; i < SP_ARRAY_SIZE(dirs); i++)
		if (dirs[i])
			closedir(dirs[i]);
	return err;
}
