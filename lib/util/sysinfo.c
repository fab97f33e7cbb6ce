/* SPDX-License-Identifier: MIT */
/* Facts about the system from /proc and /sys, and the PATH search: online CPUs, paranoia, command lines. */
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ONLINE_CPUS_PATH "/sys/devices/system/cpu/online"

int sp_online_cpus_text(char *buf, size_t size)
{
	if (!buf || size < 2)
		return -SP_E_BAD_ARG;
	FILE *f = fopen(ONLINE_CPUS_PATH, "re");
	if (!f)
		return -errno;
	int err = fgets(buf, (int)(size > 4096 ? 4096 : size), f) ? 0 : -EIO;
	fclose(f);
	if (err)
		return err;
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

int sp_online_cpus(int **out)
{
	int n = 0;
	size_t cap = 0;
	int *cpus = NULL;
	if (sp_array_reserve((void **)&cpus, &cap, 64, sizeof(*cpus)))
		return -ENOMEM;
	char line[4096];
	if (!sp_online_cpus_text(line, sizeof(line))) {
		char *p = line;
		while (*p) {
			char *q;
			long a = strtol(p, &q, 10), b = a;
			if (q == p || a < 0)
				break;
			if (*q == '-')
				b = strtol(q + 1, &q, 10);
			for (long c = a; c <= b && c < 65536; c++) {
				if (sp_array_reserve((void **)&cpus, &cap, (size_t)n + 1,
						     sizeof(*cpus))) {
					free(cpus);
					return -ENOMEM;
				}
				cpus[n++] = (int)c;
			}
			p = *q == ',' ? q + 1 : q;
		}
	}
	if (n == 0) {
		long c = sysconf(_SC_NPROCESSORS_CONF);
		for (long i = 0; i < c && (size_t)i < cap; i++)
			cpus[n++] = (int)i;
	}
	*out = cpus;
	return n;
}

int sp_perf_event_paranoid(void)
{
	int v = -1;
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

size_t sp_pid_cmdline(pid_t pid, char *buf, size_t size)
{
	if (!buf || !size)
		return 0;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	FILE *f = fopen(path, "re");
	size_t n = f ? fread(buf, 1, size - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = '\0';
	return n;
}

/* 0 when path is an executable regular file, else the errno execve would give. */
static int runnable(const char *path)
{
	struct stat st;
	if (access(path, X_OK))
		return errno;
	if (stat(path, &st))
		return errno;
	return S_ISREG(st.st_mode) ? 0 : EACCES; /* a directory is "executable" to access() */
}

int sp_command_runnable(const char *cmd)
{
	if (!cmd)
		return -ENOENT;
	if (strchr(cmd, '/'))
		return -runnable(cmd);
	const char *path = getenv("PATH");
	int err = ENOENT;
	char buf[4096];
	for (const char *p = path ? path : "/usr/local/bin:/usr/bin:/bin"; *p;) {
		size_t len = strcspn(p, ":");
		snprintf(buf, sizeof(buf), "%.*s/%s", (int)(len ? len : 1), len ? p : ".", cmd);
		int e = runnable(buf);
		if (!e)
			return 0;
		if (e == EACCES)
			err = EACCES;
		p += len + (p[len] == ':');
	}
	return -err;
}
