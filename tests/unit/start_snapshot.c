/* SPDX-License-Identifier: MIT */
/* Unit tests of the list of /proc a system-wide recording makes at its start (lib/record/start_snapshot.c). */
#include <criterion/criterion.h>

#include "record/record.h"

#include <string.h>
#include <unistd.h>

Test(proc_maps_line, keeps_executable_mappings_only)
{
	struct sp_proc_maps_line m;
	char exec[] = "55d0c0a00000-55d0c0a05000 r-xp 00002000 fe:01 1234567    /usr/bin/true\n";
	cr_assert(sp_proc_maps_line_parse(exec, &m));
	cr_expect_eq(m.start, 0x55d0c0a00000);
	cr_expect_eq(m.end, 0x55d0c0a05000);
	cr_expect_eq(m.pgoff, 0x2000);
	cr_expect_eq(m.ino, 1234567);
	cr_expect_str_eq(m.path, "/usr/bin/true");
	char data[] = "55d0c0a05000-55d0c0a06000 rw-p 00007000 fe:01 1234567    /usr/bin/true\n";
	cr_expect_not(sp_proc_maps_line_parse(data, &m));
	char anon[] = "7f0000000000-7f0000001000 rwxp 00000000 00:00 0 \n";
	cr_assert(sp_proc_maps_line_parse(anon, &m));
	cr_expect_str_eq(m.path, "");
	char vsys[] = "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0   [vsyscall]\n";
	cr_expect_not(sp_proc_maps_line_parse(vsys, &m));
	char cut[] = "55d0c0a00000-55d0c0a05000 r";
	cr_expect_not(sp_proc_maps_line_parse(cut, &m));
	char empty[] = "";
	cr_expect_not(sp_proc_maps_line_parse(empty, &m));
}

/* This process is in the list, with its own executable and name; a pid given anew is not. */
Test(start_snapshot, lists_running_processes)
{
	struct sp_start_snapshot *s = NULL;
	cr_assert_eq(sp_start_snapshot_take(&s), 0);
	cr_expect_geq(sp_start_snapshot_count(s), 1);
	size_t n = 0;
	uint32_t uid = 12345;
	bool uid_known = false;
	const struct sp_proc_maps_line *maps = sp_start_snapshot_find(s, getpid(), &n, &uid, &uid_known);
	cr_assert_not_null(maps);
	cr_expect(uid_known && uid == geteuid());
	char self[4096];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	cr_assert_gt(len, 0);
	self[len] = '\0';
	bool found = false;
	for (size_t i = 0; i < n; i++)
		found = found || !strcmp(maps[i].path, self);
	cr_expect(found, "%s not among the %zu mappings", self, n);
	char comm[16];
	FILE *f = fopen("/proc/self/comm", "r");
	cr_assert_not_null(f);
	cr_assert_not_null(fgets(comm, sizeof(comm), f));
	fclose(f);
	comm[strcspn(comm, "\n")] = '\0';
	cr_expect_str_eq(sp_start_snapshot_comm(s, getpid()), comm);
	sp_start_snapshot_forget(s, getpid());
	cr_expect_null(sp_start_snapshot_find(s, getpid(), &n, &uid, &uid_known));
	cr_expect_null(sp_start_snapshot_comm(s, getpid()));
	sp_start_snapshot_free(s);
	/* no list at all: nothing found */
	cr_expect_null(sp_start_snapshot_find(NULL, getpid(), &n, &uid, &uid_known));
	sp_start_snapshot_free(NULL);
}
