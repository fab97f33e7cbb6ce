/* SPDX-License-Identifier: MIT */
/* Facts about a process read from /proc: who it runs as, when it started, where its perf map is. */
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* The start of /proc/PID/status into text (size bytes, NUL-terminated).  0 or -errno. */
static int read_status(pid_t pid, char *text, size_t size)
{
	char path[64];
	if (pid <= 0)
		return -SP_E_BAD_ARG;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ESRCH ? -SP_E_NO_PROCESS : -errno;
	/* "Uid:" and "NSpid:" are among the first lines: one read holds them. */
	ssize_t n;
	do
		n = read(fd, text, size - 1);
	while (n < 0 && errno == EINTR);
	int err = n < 0 ? (errno == ESRCH ? -SP_E_NO_PROCESS : -errno) : 0;
	close(fd);
	if (err)
		return err;
	text[n] = '\0';
	return 0;
}

int sp_pid_euid(pid_t pid, uint32_t *uid)
{
	char text[4096];
	int err = read_status(pid, text, sizeof(text));
	if (err)
		return err;
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

uint64_t sp_pid_start_us(pid_t pid)
{
	char path[64], buf[1024];
	unsigned long long btime = 0, start = 0;
	FILE *f = fopen("/proc/stat", "re");
	if (!f)
		return 0;
	while (fgets(buf, sizeof(buf), f))
		if (sscanf(buf, "btime %llu", &btime) == 1)
			break;
	fclose(f);
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* Field 22; count from the last ')' since comm may hold spaces and parentheses. */
	char *p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d "
			 "%*d %*d %*d %*d %llu", &start) != 1 || !btime)
		return 0;
	long hz = sysconf(_SC_CLK_TCK);
	return btime * 1000000ull + start * 1000000ull / (unsigned long long)(hz > 0 ? hz : 100);
}

/* The last pid of the "NSpid:" line: pid as its own (innermost) PID namespace numbers it. */
static int32_t ns_pid(pid_t pid)
{
	char text[4096];
	if (read_status(pid, text, sizeof(text)))
		return -1;
	const char *line = strstr(text, "\nNSpid:");
	if (!line)
		return pid; /* a kernel before 4.1: no PID namespaces to tell apart */
	long last = -1;
	const char *p = line + 7;
	for (int k = 0; k < 64; k++) { /* PID namespaces nest at most 32 deep */
		char *end;
		errno = 0;
		long v = strtol(p, &end, 10);
		if (end == p || errno || v <= 0 || v > INT32_MAX)
			break;
		last = v;
		p = end;
	}
	return last > 0 ? (int32_t)last : -1;
}

int sp_pid_perf_map_path(pid_t pid, char *buf, size_t size, int32_t *nspid)
{
	int32_t inner = ns_pid(pid);
	if (inner <= 0)
		return -SP_E_NO_PROCESS;
	char tmp[64];
	struct stat ours, theirs;
	snprintf(tmp, sizeof(tmp), "/proc/%d/root/tmp", (int)pid);
	/* Its /tmp is ours (same file system, same directory) and it numbers itself as we do. */
	if (inner == pid && !stat("/tmp", &ours) && !stat(tmp, &theirs) && ours.st_dev == theirs.st_dev &&
	    ours.st_ino == theirs.st_ino)
		return 0;
	if (snprintf(buf, size, "%s/perf-%d.map", tmp, (int)inner) >= (int)size)
		return -SP_E_BAD_ARG;
	*nspid = inner;
	return 1;
}

bool sp_proc_maps_line_parse(char *line, struct sp_proc_maps_line *out)
{
	unsigned long long start, end, off, ino;
	unsigned maj, min;
	char perms[8];
	int name_at = 0;
	/* most lines are not executable: "START-END rwxp ...", x third, decided before sscanf */
	const char *sp = strchr(line, ' ');
	if (!sp || strnlen(sp + 1, 3) < 3 || sp[3] != 'x')
		return false;
	if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &off, &maj, &min,
		   &ino, &name_at) < 7 ||
	    !strchr(perms, 'x'))
		return false;
	char *name = name_at ? line + name_at : (char *)"";
	name[strcspn(name, "\n")] = '\0';
	/* [vsyscall] sits at a kernel address no user sample unwinds into. */
	if (!strcmp(name, "[vsyscall]"))
		return false;
	*out = (struct sp_proc_maps_line){start, end, off, makedev(maj, min), ino, name};
	return true;
}

int sp_proc_maps_each(const char *path, bool (*fn)(void *arg, const struct sp_proc_maps_line *m),
		      void *arg)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -SP_E_NO_PROCESS : -errno;
	char *line = NULL;
	size_t cap = 0;
	int found = 0;
	struct sp_proc_maps_line m;
	while (getline(&line, &cap, f) > 0) {
		if (!sp_proc_maps_line_parse(line, &m))
			continue;
		found++;
		if (!fn(arg, &m))
			break;
	}
	free(line);
	fclose(f);
	return found;
}
