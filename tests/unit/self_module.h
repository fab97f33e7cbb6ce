/* SPDX-License-Identifier: MIT */
/* Test helper shared by report and export tests: this test binary as a recorded module. */
#ifndef SP_TEST_SELF_MODULE_H
#define SP_TEST_SELF_MODULE_H

#include <criterion/criterion.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "record/record.h"

/*
 * Add this test binary's mapping that holds addr to the spool as a module,
 * with its build-id and load bias, the way the recorder would.
 */
static uint32_t sp_test_self_module(struct sp_spool_writer *writer, struct sp_module *m,
				    uint64_t addr)
{
	FILE *f = fopen("/proc/self/maps", "r");
	cr_assert_not_null(f);
	static char path[PATH_MAX];
	char line[PATH_MAX + 128];
	bool found = false;
	memset(m, 0, sizeof(*m));
	while (!found && fgets(line, sizeof(line), f)) {
		int n = 0;
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %*s %" SCNx64 " %*x:%*x %" SCNu64 " %n",
			   &m->start, &m->end, &m->file_offset, &m->inode, &n) < 4)
			continue;
		if (addr < m->start || addr >= m->end)
			continue;
		line[strcspn(line, "\n")] = '\0';
		snprintf(path, sizeof(path), "%s", line + n);
		found = true;
	}
	fclose(f);
	cr_assert(found);
	m->path = path;
	sp_elf_init();
	int fd = open(path, O_RDONLY);
	cr_assert_geq(fd, 0);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	struct sp_elf_info info;
	cr_assert_eq(sp_elf_info_read(elf, &info), 0);
	m->build_id_len = info.build_id_len;
	memcpy(m->build_id, info.build_id, info.build_id_len);
	cr_assert_eq(sp_elf_load_bias(&info, m->start, m->file_offset, &m->load_bias), 0);
	m->flags = SP_MODULE_HAS_BIAS;
	sp_elf_info_release(&info);
	elf_end(elf);
	close(fd);
	uint32_t id;
	cr_assert_eq(sp_spool_writer_add_module(writer, m, &id), 0);
	return id;
}

#endif
