/* SPDX-License-Identifier: MIT */
/* Opening a file another user may have put in the way: a regular file only, never a FIFO or a device. */
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/*
 * An O_PATH handle on path.  O_PATH opens nothing: a FIFO's open(2) would
 * wake a writer waiting in its own (or wait for one), and a device's open
 * alone can act (a tape rewinds, a watchdog starts).
 */
static int open_handle(const char *path, enum sp_resolve resolve)
{
	int flags = O_PATH | O_CLOEXEC;
#ifdef SYS_openat2
	if (resolve == SP_RESOLVE_NO_SYMLINKS) {
		/* A trailing symlink fails too (ELOOP): O_NOFOLLOW is not given. */
		struct open_how how = {.flags = (uint64_t)flags, .resolve = RESOLVE_NO_SYMLINKS};
		long fd = syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
		if (fd >= 0 || errno != ENOSYS)
			return (int)fd;
	}
#endif
	/* Before Linux 5.6, no symlink as the last component is what can be had. */
	return open(path, resolve == SP_RESOLVE_FOLLOW ? flags : flags | O_NOFOLLOW);
}

int sp_open_regular(const char *path, int flags, enum sp_resolve resolve)
{
	int handle = open_handle(path, resolve);
	if (handle < 0)
		return -1;
	struct stat st;
	int err = 0;
	if (fstat(handle, &st))
		err = errno;
	else if (S_ISLNK(st.st_mode)) /* O_PATH | O_NOFOLLOW gives the link itself */
		err = ELOOP;
	else if (!S_ISREG(st.st_mode))
		err = EINVAL;
	int fd = -1;
	if (!err) {
		/* The magic link reopens the very file the handle holds: no second lookup. */
		char self[40];
		snprintf(self, sizeof(self), "/proc/self/fd/%d", handle);
		fd = open(self, flags | O_CLOEXEC);
		if (fd < 0)
			err = errno;
	}
	close(handle);
	if (err)
		errno = err;
	return fd;
}

/*
 * Whether what st describes may take an output: a regular file; anything
 * else only when root or the caller made it (a symlink, a FIFO, a device:
 * another user plants those to make root write elsewhere, or hang).
 */
static int output_kind(const struct stat *st, bool *special)
{
	*special = false;
	if (S_ISDIR(st->st_mode))
		return -EISDIR;
	if (S_ISREG(st->st_mode))
		return 0;
	if (st->st_uid != 0 && st->st_uid != geteuid())
		return S_ISLNK(st->st_mode) ? -ELOOP : -SP_E_NOT_REGULAR;
	*special = true;
	return 0;
}

/*
 * A writer's lock on fd, held until the file is closed: an open file
 * description lock (fcntl(2) F_OFD_SETLK, F_WRLCK), which the kernel grants
 * only on a descriptor open for writing.  flock(2) took any descriptor,
 * even O_RDONLY: anyone who could read a spool could hold its lock and keep
 * root from recording into that path, or symbolizing it in place.  A
 * reader's read lock (F_RDLCK, which any descriptor takes) is not a writer:
 * it is passed over, the file then written unlocked.  -SP_E_SPOOL_BUSY when
 * a write lock is held, which only someone who may write the file can take.
 */
static int take_write_lock(int fd)
{
	struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	if (!fcntl(fd, F_OFD_SETLK, &l))
		return 0;
	if (errno != EAGAIN && errno != EACCES)
		return 0; /* no lock here (a file system without them): written unlocked */
	return sp_fd_write_locked(fd) ? -SP_E_SPOOL_BUSY : 0;
}

bool sp_fd_write_locked(int fd)
{
	/* A read lock conflicts only with write locks: readers' own locks never show. */
	struct flock l = {.l_type = F_RDLCK, .l_whence = SEEK_SET};
	return !fcntl(fd, F_OFD_GETLK, &l) && l.l_type == F_WRLCK;
}

/*
 * A private output (mode 0600: a system-wide spool) never lands in a file
 * someone else owns or could have opened: another user's file made in
 * advance in a sticky directory (it would stay theirs, 0666), or one of ours
 * that others may read (they could hold it open).  Such a file is unlinked
 * and the output created anew, O_CREAT | O_EXCL: a new inode, ours, mode
 * 0600.  -SP_E_OUTPUT_NOT_OURS when it cannot be unlinked (someone else's
 * file in a sticky directory, for anyone but root) or reappears meanwhile.
 */
static int replace_private(const char *path, unsigned int mode)
{
	if (unlink(path) && errno != ENOENT)
		return errno == EPERM || errno == EACCES ? -SP_E_OUTPUT_NOT_OURS : -errno;
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		return errno == EEXIST ? -SP_E_OUTPUT_NOT_OURS : -errno;
	int err = take_write_lock(fd);
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

int sp_temp_beside(const char *path, char **tmp)
{
	char *copy = strdup(path);
	char *base = copy ? strdup(basename(copy)) : NULL;
	int n = base ? asprintf(tmp, "%s/.%s.XXXXXX", dirname(copy), base) : -1;
	free(base);
	free(copy);
	if (n < 0) {
		*tmp = NULL;
		return -ENOMEM;
	}
	/* O_CREAT | O_EXCL, mode 0600: a symlink planted at the name is never followed. */
	int fd = mkostemp(*tmp, O_CLOEXEC);
	if (fd < 0) {
		int err = -errno;
		free(*tmp);
		*tmp = NULL;
		return err;
	}
	return fd;
}

int sp_fd_keep_owner(int fd, const struct stat *old)
{
	if (!fchown(fd, old->st_uid, old->st_gid))
		return 0;
	if (errno != EPERM || !geteuid())
		return -errno;
	/* Not a group of ours either: the new file keeps ours. */
	if (fchown(fd, (uid_t)-1, old->st_gid) && errno != EPERM)
		return -errno;
	return 0;
}

/*
 * Whether the regular file now at path is write-locked by a writer (a
 * recording): looked at through a read-only descriptor, which any reader
 * has; a file that cannot be opened so is not known to be written.
 */
static bool path_write_locked(const char *path)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return false;
	struct stat st;
	bool held = !fstat(fd, &st) && S_ISREG(st.st_mode) && sp_fd_write_locked(fd);
	close(fd);
	return held;
}

/*
 * A spool on a fresh inode: created under a temporary name beside path
 * (O_EXCL, mode 0600, so nobody else can open it, let alone lock it), write-
 * locked, given its mode (old's, or mode less the umask; 0600 when private)
 * and old's owner when not private, then renamed over path.  A reader's read
 * lock (F_RDLCK, which any descriptor that can read takes) on the file at
 * path held the write lock off before: the spool was written unlocked and a
 * second recording truncated it.  Now a reader holds at most the old inode,
 * and the new one is locked before it has its name.  old is path's stat
 * when a regular file is there, NULL when nothing is.  -SP_E_SPOOL_BUSY when
 * a writer holds the file at path by the time of the rename; -EACCES,
 * -EPERM or -EROFS when the directory takes no new file or the rename is
 * refused (another user's file in a sticky directory).
 */
static int replace_locked(const char *path, unsigned int mode, const struct stat *old)
{
	bool private_ = !(mode & 077);
	char *tmp = NULL;
	int fd = sp_temp_beside(path, &tmp);
	if (fd < 0)
		return fd;
	int err = take_write_lock(fd);
	mode_t final = mode & 0777;
	if (private_) {
		final = 0600;
	} else if (old) {
		final = old->st_mode & 0777; /* never the set-ID bits of another file */
		if (!err)
			err = sp_fd_keep_owner(fd, old);
	} else {
		mode_t mask = umask(0);
		umask(mask);
		final &= ~mask;
	}
	if (!err && fchmod(fd, final))
		err = -errno;
	/* A recording in progress at path keeps its name: nothing of it is replaced. */
	if (!err && path_write_locked(path))
		err = -SP_E_SPOOL_BUSY;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err) {
		unlink(tmp);
		close(fd);
		fd = err;
	}
	free(tmp);
	return fd;
}

/* sp_output_create, and with lock a regular file write-locked before it is truncated. */
static int create_output(const char *path, unsigned int mode, bool lock)
{
	/* What is there now, looked at through handles that open nothing. */
	bool special = false, follow = false, exists = false;
	struct stat hs;
	for (int pass = 0; pass < 2; pass++) {
		int h = open(path, O_PATH | O_CLOEXEC | (pass ? 0 : O_NOFOLLOW));
		if (h < 0) {
			if (errno == ENOENT)
				break;
			return -errno;
		}
		int err = fstat(h, &hs) ? -errno : output_kind(&hs, &special);
		close(h);
		if (err)
			return err;
		exists = true;
		/* A symlink root or the caller made: what it names, under the same rule. */
		if (pass || !S_ISLNK(hs.st_mode))
			break;
		exists = false;
		follow = true;
	}
	/*
	 * A spool goes to a fresh inode renamed over path (or what root's or the
	 * caller's symlink names); in place only where the directory refuses a
	 * new file or the rename, as before: there a reader's read lock still
	 * leaves the spool unlocked, and a private spool needs a file that is
	 * ours and unreadable to others (replace_private).
	 */
	if (lock && !special) {
		char *real = follow && exists ? realpath(path, NULL) : NULL;
		if (!follow || real) {
			int fd = replace_locked(real ? real : path, mode, exists ? &hs : NULL);
			free(real);
			if (fd >= 0 || (fd != -EACCES && fd != -EPERM && fd != -EROFS))
				return fd;
		}
	}
	/*
	 * Whatever may be swapped in since: a symlink fails (O_NOFOLLOW), a
	 * FIFO without a reader fails (O_NONBLOCK: ENXIO) and one with a reader
	 * is refused below; a device node needs privilege to make.  Truncated
	 * only once it is known to be a regular file.
	 */
	int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW) |
		    (special ? 0 : O_NONBLOCK);
	int fd = open(path, flags, mode);
	if (fd < 0)
		return errno == ENXIO ? -SP_E_NOT_REGULAR : -errno;
	struct stat st;
	int err = fstat(fd, &st) ? -errno : !S_ISREG(st.st_mode) && !special ? -SP_E_NOT_REGULAR : 0;
	/* a writer still holding it (a recording) keeps it: nothing is truncated */
	if (!err && lock && S_ISREG(st.st_mode))
		err = take_write_lock(fd);
	if (!err && !special && !(mode & 077) && S_ISREG(st.st_mode) &&
	    (st.st_uid != geteuid() || (st.st_mode & 077))) {
		close(fd);
		return replace_private(path, mode);
	}
	if (!err && S_ISREG(st.st_mode) &&
	    (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) || ftruncate(fd, 0)))
		err = -errno;
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

int sp_output_create(const char *path, unsigned int mode)
{
	return create_output(path, mode, false);
}

int sp_output_create_locked(const char *path, unsigned int mode)
{
	return create_output(path, mode, true);
}

/*
 * Why another user can influence the file open on fd (*uid set to the owner
 * to name, else -1), or NULL when no one but root can.
 */
static const char *untrusted_because(int fd, long long *uid)
{
	struct stat st, dst;
	char link[64], path[PATH_MAX];
	*uid = -1;
	if (fstat(fd, &st))
		return "not to be checked (fstat failed)";
	if (st.st_uid != 0) {
		*uid = st.st_uid;
		return "owned by uid";
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return "writable by group or others";
	if (st.st_nlink == 0)
		return NULL;
	/*
	 * The directory by the path the kernel has for the file (symlinks
	 * resolved), its last component not followed: another user who could
	 * replace the file there, or put another one in its place later, makes
	 * it theirs to influence.
	 */
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0 || path[0] != '/')
		return "in a directory that cannot be checked";
	path[n] = '\0';
	char *slash = strrchr(path, '/');
	slash[slash == path ? 1 : 0] = '\0';
	int dfd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	bool ok = dfd >= 0 && !fstat(dfd, &dst);
	if (dfd >= 0)
		close(dfd);
	if (!ok)
		return "in a directory that cannot be checked";
	if (dst.st_uid != 0) {
		*uid = dst.st_uid;
		return "in a directory owned by uid";
	}
	if (dst.st_mode & (S_IWGRP | S_IWOTH))
		return "in a directory writable by group or others";
	return NULL;
}

void sp_file_trust(int fd, struct sp_file_trust *t)
{
	long long uid;
	const char *why = untrusted_because(fd, &uid);
	*t = (struct sp_file_trust){.untrusted = why != NULL};
	if (why && uid >= 0)
		snprintf(t->why, sizeof(t->why), "%s %lld", why, uid);
	else if (why)
		snprintf(t->why, sizeof(t->why), "%s", why);
}
