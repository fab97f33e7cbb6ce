/* SPDX-License-Identifier: MIT */
/* System facts from /proc and /sys (lib/util/sysinfo.c): online CPUs, paranoia, command lines, PATH. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/util.h"

Test(sysinfo, online_cpus_text_and_list_agree)
{
	char text[256];
	int *cpus = NULL;
	int n = sp_online_cpus(&cpus);
	cr_assert_gt(n, 0);
	cr_assert_eq(sp_online_cpus_text(text, sizeof(text)), 0);
	cr_assert(strlen(text) > 0 && !strchr(text, '\n'), "'%s'", text);
	/* the first CPU listed starts the text */
	char first[16];
	snprintf(first, sizeof(first), "%d", cpus[0]);
	cr_assert(!strncmp(text, first, strlen(first)), "'%s' vs %d", text, cpus[0]);
	free(cpus);
	cr_assert_eq(sp_online_cpus_text(text, 1), -SP_E_BAD_ARG);
}

Test(sysinfo, perf_event_paranoid_is_a_level)
{
	int v = sp_perf_event_paranoid();
	cr_assert(v >= -1 && v <= 4, "%d", v);
}

Test(sysinfo, cmdline_of_this_process)
{
	char buf[4096];
	size_t n = sp_pid_cmdline(getpid(), buf, sizeof(buf));
	cr_assert_gt(n, 0);
	cr_assert_eq(buf[n], '\0');
	/* NUL-separated: the first argument is a string of its own */
	cr_assert_gt(strlen(buf), 0);
	cr_assert_leq(strlen(buf), n);
	cr_assert_eq(sp_pid_cmdline(getpid(), buf, 4), 3, "cut at size - 1");
	cr_assert_eq(buf[3], '\0');
	/* a process that is gone has none */
	cr_assert_eq(sp_pid_cmdline(0x7ffffff0, buf, sizeof(buf)), 0);
	cr_assert_eq(buf[0], '\0');
}

Test(sysinfo, command_runnable_searches_path)
{
	cr_assert_eq(sp_command_runnable("sh"), 0);
	cr_assert_eq(sp_command_runnable("/bin/sh"), 0);
	cr_assert_eq(sp_command_runnable("no-such-command-sp-test"), -ENOENT);
	cr_assert_eq(sp_command_runnable("/no/such/file"), -ENOENT);
	/* a directory is "executable" to access(2), never to execve(2) */
	cr_assert_eq(sp_command_runnable("/tmp"), -EACCES);
	setenv("PATH", "/nonexistent-sp-dir", 1);
	cr_assert_eq(sp_command_runnable("sh"), -ENOENT);
}
