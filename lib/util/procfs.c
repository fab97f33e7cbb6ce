/* SPDX-License-Identifier: MIT */
/* Facts about a process read from /proc: who it runs as. */
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int sp_pid_euid(pid_t pid, uint32_t *uid)
{
	char path[64], text[4096];
	if (pid <= 0)
		return -SP_E_BAD_ARG;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ESRCH ? -SP_E_NO_PROCESS : -errno;
	/* "Uid:" is among the first dozen lines: one read holds it. */
	ssize_t n;
	do
		n = read(fd, text, sizeof(text) - 1);
	while (n < 0 && errno == EINTR);
	int err = n < 0 ? (errno == ESRCH ? -SP_E_NO_PROCESS : -errno) : 0;
	close(fd);
	if (err)
		return err;
	text[n] = '\0';
	/* "Uid:\treal\teffective\tsaved\tfs" */
	const char *line = strstr(text, "\nUid:");
	if (!line)
		return -SP_E_BAD_ARG;
	char *end;
	errno = 0;
	strtoul(line + 5, &end, 10);
	unsigned long effective = strtoul(end, &end, 10);
	if (errno || effective > UINT32_MAX || (*end != '\t' && *end != ' '))
		return -SP_E_BAD_ARG;
	*uid = (uint32_t)effective;
	return 0;
}
