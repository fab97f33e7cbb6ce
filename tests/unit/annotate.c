/* SPDX-License-Identifier: MIT */
/* Unit tests of annotation: counting, inline lines, disassembly, source lookup, report --by=line. */
#include <criterion/criterion.h>

#include "report/annotate.h"
#include "report/report.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "self_module.h"

/* A function the fixture's samples fall in. */
__attribute__((noinline)) int sp_test_annot_hot(int x)
{
	volatile int acc = x;
	for (int i = 0; i < x; i++)
		acc = acc / 3 + i;
	return acc;
}

/* A known inline chain: inner is always inlined into outer; its pc is an instruction of it. */
static int annot_line[2];

static inline __attribute__((always_inline)) uint64_t sp_test_annot_inner(void)
{
	uint64_t pc;
	__asm__ volatile("1: lea 1b(%%rip), %0" : "=r"(pc));
	annot_line[0] = __LINE__ - 1;
	return pc;
}

__attribute__((noinline)) uint64_t sp_test_annot_outer(void)
{
	uint64_t pc = sp_test_annot_inner();
	annot_line[1] = __LINE__ - 1;
	return pc ^ 1;
}

static char spool_path[64];
static struct sp_spool_writer *writer;
static struct sp_spool *spool;
static struct sp_module mod;
static uint32_t mid, thread;
static uint64_t hot_addr, inline_pc;

static uint32_t frame(uint64_t addr)
{
	struct sp_frame f = {.module_id = mid, .mode = SP_FRAME_USER, .abs_ip = addr,
			     .rel_ip = addr - mod.start + mod.file_offset};
	uint32_t id;
	cr_assert_eq(sp_spool_writer_intern_frame(writer, &f, &id), 0);
	return id;
}

static void samples(uint64_t addr, unsigned count)
{
	uint32_t f = frame(addr), sid;
	cr_assert_eq(sp_spool_writer_intern_stack(writer, &f, 1, &sid), 0);
	for (unsigned i = 0; i < count; i++)
		cr_assert_eq(sp_spool_writer_append_sample(writer, thread, sid, 1000000000 + i), 0);
}

/* 14 samples: 8 at sp_test_annot_hot's first instruction, 2 further in, 4 in inlined code. */
static void setup(void)
{
	strcpy(spool_path, "/tmp/sp-annotate-XXXXXX");
	int fd = mkstemp(spool_path);
	cr_assert_geq(fd, 0);
	close(fd);
	struct sp_spool_meta meta = {.frequency_hz = 999, .event_source = SP_EVENT_CPU_CLOCK,
				     .command = "", .hostname = "h", .kernel_release = "k"};
	cr_assert_eq(sp_spool_writer_open(spool_path, &meta, &writer), 0);
	cr_assert_eq(sp_spool_writer_intern_thread(writer, 10, 10, &thread), 0);
	hot_addr = (uint64_t)(uintptr_t)sp_test_annot_hot;
	inline_pc = sp_test_annot_outer() ^ 1;
	mid = sp_test_self_module(writer, &mod, hot_addr);
	samples(hot_addr, 8);
	samples(hot_addr + 4, 2);
	samples(inline_pc, 4);
	cr_assert_eq(sp_spool_writer_finish(writer, &(struct sp_summary){0}), 0);
	cr_assert_eq(sp_spool_open(spool_path, &spool), 0);
}

static void teardown(void)
{
	sp_spool_free(spool);
	sp_spool_writer_free(writer);
	unlink(spool_path);
	spool = NULL;
	writer = NULL;
}

/* Annotate with opts into a malloc'd string. */
static char *annotate(const struct sp_annotate_opts *o, struct sp_annotate_result *res)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	cr_assert_not_null(out);
	cr_assert_eq(sp_annotate_write(spool, NULL, o, out, res), 0);
	fclose(out);
	return text;
}

TestSuite(annotate, .init = setup, .fini = teardown);

Test(annotate, json_counts_each_instruction_and_line)
{
	const char *fns[] = {"sp_test_annot_hot"};
	struct sp_annotate_opts o = {.format = SP_ANNOTATE_JSON, .functions = fns, .nfunctions = 1};
	struct sp_annotate_result res;
	char *json = annotate(&o, &res);
	cr_assert(strstr(json, "{\"name\":\"sp_test_annot_hot\""), "%s", json);
	cr_assert(strstr(json, "\"samples\":10,\"profile_percent\":71.43"), "%s", json);
	char want[128];
	snprintf(want, sizeof(want), "{\"address\":\"0x%" PRIx64 "\",\"samples\":8,\"percent\":80.00",
		 hot_addr - mod.load_bias);
	cr_assert(strstr(json, want), "no '%s' in %s", want, json);
	cr_assert(strstr(json, "\"disassembly_error\":null"));
	cr_assert(strstr(json, "\"unplaced_samples\":0,"));
	cr_assert_eq(res.functions, 1);
	cr_assert_eq(res.functions_unmatched, 0);
	cr_assert_eq(res.modules_unreadable, 0);
	/* This file is found where DWARF says: the hot line's text is there. */
	cr_assert(strstr(json, "\"text\":\""), "%s", json);
	sp_annotate_result_release(&res);
	free(json);
}

Test(annotate, inlined_code_counts_on_its_own_line_under_the_call)
{
	const char *fns[] = {"sp_test_annot_out*"};
	struct sp_annotate_opts o = {.format = SP_ANNOTATE_JSON, .functions = fns, .nfunctions = 1};
	char *json = annotate(&o, NULL);
	char want[160];
	snprintf(want, sizeof(want), "\"line\":%d,\"samples\":4,\"percent\":100.00", annot_line[0]);
	cr_assert(strstr(json, want), "no '%s' in %s", want, json);
	cr_assert(strstr(json, "\"inlined_function\":\"sp_test_annot_inner\",\"call_file\":"), "%s",
		  json);
	snprintf(want, sizeof(want), "\"call_line\":%d}", annot_line[1]);
	cr_assert(strstr(json, want), "no '%s' in %s", want, json);
	free(json);

	o.format = SP_ANNOTATE_TEXT;
	char *text = annotate(&o, NULL);
	cr_assert(strstr(text, "inlined sp_test_annot_inner: "), "%s", text);
	cr_assert(strstr(text, "== sp_test_annot_outer ("), "%s", text);
	free(text);
}

Test(annotate, hottest_functions_by_default_and_unmatched_names_counted)
{
	struct sp_annotate_opts o = {.max_functions = 1};
	struct sp_annotate_result res;
	char *text = annotate(&o, &res);
	cr_assert(strstr(text, "== sp_test_annot_hot ("), "%s", text);
	cr_assert_null(strstr(text, "sp_test_annot_outer"));
	cr_assert(strstr(text, "Disassembly ("), "%s", text);
	sp_annotate_result_release(&res);
	free(text);

	const char *fns[] = {"no_such_function"};
	struct sp_annotate_opts none = {.functions = fns, .nfunctions = 1};
	text = annotate(&none, &res);
	cr_assert(strstr(text, "No function matched"), "%s", text);
	cr_assert_eq(res.functions_unmatched, 1);
	cr_assert_eq(res.functions, 0);
	sp_annotate_result_release(&res);
	free(text);
}

Test(annotate, rejects_bad_arguments)
{
	struct sp_annotate_opts o = {.format = 7};
	cr_assert_eq(sp_annotate_write(spool, NULL, &o, stdout, NULL), -SP_E_BAD_ARG);
	cr_assert_eq(sp_annotate_write(NULL, NULL, &o, stdout, NULL), -SP_E_BAD_ARG);
}

Test(annotate, report_by_line_puts_the_hot_line_first)
{
	struct sp_report_opts o = {.format = SP_REPORT_TEXT, .by_line = true};
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	cr_assert_eq(sp_report_write(spool, NULL, &o, out), 0);
	fclose(out);
	const char *head = strstr(text, "Source line");
	cr_assert_not_null(head, "%s", text);
	const char *row = strchr(head, '\n') + 1;
	/* Its 10 samples fall on one line or two, as the compiler placed the two addresses. */
	cr_assert(!strncmp(row, "  71.4%        10  annotate.c:", 30) ||
		  !strncmp(row, "  57.1%         8  annotate.c:", 30), "%s", row);
	cr_assert(strstr(row, "sp_test_annot_hot (") < strchr(row, '\n'), "%s", row);
	/* The inlined function's samples are on its own line. */
	char want[64];
	snprintf(want, sizeof(want), "  28.6%%         4  annotate.c:%d ", annot_line[0]);
	cr_assert(strstr(text, want), "no '%s' in %s", want, text);
	free(text);
}

Test(annotate_disasm, decodes_branch_targets_and_bad_bytes)
{
	/* 0x1000: jmp 0x1000; call 0x100c; 0x06 (invalid in 64-bit mode); ret */
	static const uint8_t bytes[] = {0xeb, 0xfe, 0xe8, 0x05, 0x00, 0x00, 0x00, 0x06, 0xc3};
	struct sp_ann_code code = {.start = 0x1000, .end = 0x1000 + sizeof(bytes), .bytes = bytes,
				   .machine = EM_X86_64};
	struct sp_ann_listing l;
	cr_assert_eq(sp_ann_disasm(&code, &l), 0);
	cr_assert_eq(l.n, 4);
	cr_assert(l.insns[0].has_target);
	cr_assert_eq(l.insns[0].target, 0x1000);
	cr_assert_eq(l.insns[1].addr, 0x1002);
	cr_assert(l.insns[1].has_target);
	cr_assert_eq(l.insns[1].target, 0x100c);
	cr_assert_str_eq(l.text + l.insns[2].text, "(bad) 0x06");
	cr_assert_eq(l.insns[3].addr, 0x1008);
	cr_assert_not(l.insns[3].has_target);
	cr_assert_str_eq(l.text + l.insns[3].text, "retq");
	sp_ann_listing_release(&l);

	code.machine = EM_RISCV;
	cr_assert_eq(sp_ann_disasm(&code, &l), -ENOTSUP);
}

Test(annotate_source, source_dir_first_missing_said)
{
	char dir[] = "/tmp/sp-annsrc-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char path[128];
	snprintf(path, sizeof(path), "%s/x.c", dir);
	FILE *f = fopen(path, "w");
	fputs("one\n\ttwo\nthree", f);
	fclose(f);
	struct sp_ann_sources *c;
	bool missing;
	cr_assert_eq(sp_ann_sources_new(dir, &c), 0);
	/* Found by basename under source_dir, whatever directory DWARF named. */
	cr_assert_str_eq(sp_ann_source_line(c, "/build/elsewhere/x.c", 2, NULL, NULL, &missing),
			 "\ttwo");
	cr_assert_not(missing);
	cr_assert_str_eq(sp_ann_source_line(c, "/build/elsewhere/x.c", 3, NULL, NULL, &missing),
			 "three");
	cr_assert_str_eq(sp_ann_source_line(c, "/build/elsewhere/x.c", 9, NULL, NULL, &missing), "");
	cr_assert_null(sp_ann_source_line(c, "/nowhere/y.c", 1, NULL, NULL, &missing));
	cr_assert(missing);
	/* Relative to the compilation directory, and beside the module file. */
	cr_assert_str_eq(sp_ann_source_line(c, "x.c", 1, dir, NULL, &missing), "one");
	sp_ann_sources_free(c);
	cr_assert_eq(sp_ann_sources_new(NULL, &c), 0);
	char module[160];
	snprintf(module, sizeof(module), "%s/prog", dir);
	cr_assert_str_eq(sp_ann_source_line(c, "/gone/x.c", 1, NULL, module, &missing), "one");
	sp_ann_sources_free(c);
	unlink(path);
	rmdir(dir);
}
