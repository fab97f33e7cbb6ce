/* SPDX-License-Identifier: MIT */
/* Unit tests of sp_open_regular: regular files only, symlinks as asked, a FIFO never opened. */
#include <criterion/criterion.h>

#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[256];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "%s/sp-open-regular.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

/* dir/name, written into buf (PATH_MAX bytes). */
static const char *at(const char *name, char *buf)
{
	snprintf(buf, PATH_MAX, "%s/%s", dir, name);
	return buf;
}

static void make_file(const char *name, const char *text)
{
	char p[PATH_MAX];
	FILE *f = fopen(at(name, p), "w");
	cr_assert_not_null(f);
	fputs(text, f);
	cr_assert_eq(fclose(f), 0);
}

TestSuite(open_regular, .init = setup, .fini = teardown);

Test(open_regular, opens_a_regular_file_whatever_the_resolution)
{
	char p[PATH_MAX], text[8] = {0};
	make_file("f", "hello");
	enum sp_resolve modes[] = {SP_RESOLVE_FOLLOW, SP_RESOLVE_NOFOLLOW, SP_RESOLVE_NO_SYMLINKS};
	for (size_t i = 0; i < SP_ARRAY_SIZE(modes); i++) {
		int fd = sp_open_regular(at("f", p), O_RDONLY, modes[i]);
		cr_assert_geq(fd, 0, "mode %zu: %s", i, strerror(errno));
		cr_assert_eq(read(fd, text, 5), 5);
		cr_assert_str_eq(text, "hello");
		cr_assert(fcntl(fd, F_GETFD) & FD_CLOEXEC, "O_CLOEXEC is added");
		cr_assert_eq(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDONLY);
		close(fd);
	}
}

Test(open_regular, a_final_symlink_is_followed_only_when_asked)
{
	char p[PATH_MAX], l[PATH_MAX];
	make_file("f", "x");
	cr_assert_eq(symlink(at("f", p), at("link", l)), 0);
	int fd = sp_open_regular(l, O_RDONLY, SP_RESOLVE_FOLLOW);
	cr_assert_geq(fd, 0);
	close(fd);
	errno = 0;
	cr_assert_eq(sp_open_regular(l, O_RDONLY, SP_RESOLVE_NOFOLLOW), -1);
	cr_assert_eq(errno, ELOOP);
	errno = 0;
	cr_assert_eq(sp_open_regular(l, O_RDONLY, SP_RESOLVE_NO_SYMLINKS), -1);
	cr_assert_eq(errno, ELOOP);
}

Test(open_regular, a_symlinked_directory_is_refused_with_no_symlinks)
{
	char p[PATH_MAX], l[PATH_MAX], via[PATH_MAX + 8];
	cr_assert_eq(mkdir(at("real", p), 0700), 0);
	make_file("real/f", "x");
	cr_assert_eq(symlink(at("real", p), at("dirlink", l)), 0);
	snprintf(via, sizeof(via), "%s/f", l);
	/* O_NOFOLLOW guards the last component only. */
	int fd = sp_open_regular(via, O_RDONLY, SP_RESOLVE_NOFOLLOW);
	cr_assert_geq(fd, 0);
	close(fd);
	errno = 0;
	cr_assert_eq(sp_open_regular(via, O_RDONLY, SP_RESOLVE_NO_SYMLINKS), -1);
	cr_assert_eq(errno, ELOOP);
}

Test(open_regular, a_fifo_is_refused_without_being_opened)
{
	char p[PATH_MAX];
	cr_assert_eq(mkfifo(at("fifo", p), 0600), 0);
	/* A writer waits in open(2) until someone opens the FIFO for reading. */
	int report[2];
	cr_assert_eq(pipe(report), 0);
	pid_t child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		close(report[0]);
		int w = open(p, O_WRONLY);
		(void)!write(report[1], w >= 0 ? "o" : "e", 1);
		_exit(0);
	}
	close(report[1]);
	usleep(100000);
	errno = 0;
	cr_assert_eq(sp_open_regular(p, O_RDONLY | O_NONBLOCK, SP_RESOLVE_NOFOLLOW), -1);
	cr_assert_eq(errno, EINVAL);
	usleep(200000);
	fcntl(report[0], F_SETFL, O_NONBLOCK);
	char c;
	cr_assert_eq(read(report[0], &c, 1), -1, "the waiting writer was woken: the FIFO was opened");
	/* Let the writer go. */
	int r = open(p, O_RDONLY | O_NONBLOCK);
	cr_assert_geq(r, 0);
	int status;
	cr_assert_eq(waitpid(child, &status, 0), child);
	close(r);
	close(report[0]);
}

Test(open_regular, devices_directories_and_missing_files_are_refused)
{
	char p[PATH_MAX];
	errno = 0;
	cr_assert_eq(sp_open_regular("/dev/null", O_RDONLY, SP_RESOLVE_NOFOLLOW), -1);
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(sp_open_regular(dir, O_RDONLY, SP_RESOLVE_NOFOLLOW), -1);
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(sp_open_regular(at("none", p), O_RDONLY, SP_RESOLVE_NO_SYMLINKS), -1);
	cr_assert_eq(errno, ENOENT);
}

Test(open_regular, a_spool_is_a_fresh_inode_locked_past_a_readers_lock)
{
	char p[PATH_MAX];
	make_file("s", "old");
	cr_assert_eq(chmod(at("s", p), 0640), 0);
	struct stat before, after;
	cr_assert_eq(stat(p, &before), 0);
	/* A reader's read lock, which any read-only descriptor takes. */
	int reader = open(p, O_RDONLY);
	struct flock l = {.l_type = F_RDLCK, .l_whence = SEEK_SET};
	cr_assert_eq(fcntl(reader, F_OFD_SETLK, &l), 0);
	int fd = sp_output_create_locked(p, 0666);
	cr_assert_geq(fd, 0, "%s", strerror(-fd));
	cr_assert_eq(stat(p, &after), 0);
	cr_assert_neq(after.st_ino, before.st_ino, "a new file is renamed over the path");
	cr_assert_eq(after.st_mode & 0777, 0640, "the replaced file's mode is kept");
	cr_assert(sp_fd_write_locked(reader) == false, "the reader keeps the old file");
	int look = open(p, O_RDONLY);
	cr_assert(sp_fd_write_locked(look), "the new spool is write-locked");
	close(look);
	/* A second writer is refused while the first holds the spool. */
	cr_assert_eq(sp_output_create_locked(p, 0666), -SP_E_SPOOL_BUSY);
	struct stat still;
	cr_assert_eq(stat(p, &still), 0);
	cr_assert_eq(still.st_ino, after.st_ino);
	close(fd);
	close(reader);
	/* Nothing is left beside it. */
	char cmd[PATH_MAX + 32];
	snprintf(cmd, sizeof(cmd), "test -z \"$(ls -A '%s' | grep -v '^s$')\"", dir);
	cr_assert_eq(system(cmd), 0, "a temporary file is left");
}
