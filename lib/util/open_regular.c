/* SPDX-License-Identifier: MIT */
/* Opening a file another user may have put in the way: a regular file only, never a FIFO or a device. */
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
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
