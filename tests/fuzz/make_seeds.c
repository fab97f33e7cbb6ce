/* SPDX-License-Identifier: MIT */
/* Writes the fuzzers' seed corpus: valid and damaged spools, hand-built perf records (run by hand). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "record/record.h"
#include "spool/spool.h"
#include "../unit/gopclntab_builder.h"

/*
 * Usage: make_seeds DIR  (DIR is tests/fuzz/corpus; `make fuzz-seeds` runs it).
 * The seeds are committed; rerun this only when a format changes.  Each seed
 * is small on purpose: libFuzzer mutates short inputs much faster.
 */

static const char *dir;

static void die(const char *what, int err)
{
	fprintf(stderr, "make_seeds: %s: %s\n", what, sp_strerror(err));
	exit(1);
}

static const char *path_of(const char *sub, const char *name)
{
	static char path[4096];
	snprintf(path, sizeof(path), "%s/%s/%s", dir, sub, name);
	return path;
}

static void write_file(const char *sub, const char *name, const void *p, size_t n)
{
	FILE *f = fopen(path_of(sub, name), "wb");
	if (!f || fwrite(p, 1, n, f) != n || fclose(f))
		die(path_of(sub, name), -errno);
}

static uint8_t *read_file(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		die(path, -errno);
	struct sp_buf b;
	sp_buf_init(&b);
	char chunk[4096];
	size_t k;
	while ((k = fread(chunk, 1, sizeof(chunk), f)) > 0)
		if (sp_buf_append(&b, chunk, k))
			die(path, -ENOMEM);
	fclose(f);
	*n = b.len;
	return b.data;
}

/* ---- spools ---------------------------------------------------------------- */

/*
 * Module paths follow the report harness's convention: "/a..." is rewritten
 * to its real target ELF with a true identity, "/b..." to the same file with
 * the recorded (false) identity.  rel_ip values spread over the first pages
 * of a small executable's text, where its functions are.
 */
static const struct sp_module modules[] = {
	{.pid = 100, .start = 0x555555554000, .end = 0x555555559000, .file_offset = 0,
	 .inode = 1, .file_size = 2, .mtime_ns = 3, .build_id_len = 20, .path = "/a"},
	{.pid = 100, .start = 0x7f0000001000, .end = 0x7f0000003000, .file_offset = 0x1000,
	 .load_bias = 0x7f0000000000, .flags = SP_MODULE_HAS_BIAS, .inode = 9, .file_size = 9,
	 .mtime_ns = 9, .path = "/a (deleted)"},
	{.pid = 100, .start = 0x7f0000010000, .end = 0x7f0000012000, .file_offset = 0x1000,
	 .inode = 5, .file_size = 6, .mtime_ns = 7, .path = "/b"},
	{.pid = 100, .start = 0x7ffff7fc1000, .end = 0x7ffff7fc3000, .path = "[vdso]"},
	{.pid = 100, .start = 0x7f0000100000, .end = 0x7f0000200000, .flags = SP_MODULE_ANON,
	 .path = ""},
	{.pid = -1, .start = 0xffffffff81000000, .end = 0xffffffff82000000,
	 .flags = SP_MODULE_KERNEL, .path = "[kernel.kallsyms]"},
	{.pid = 101, .start = 0x400000, .end = 0x401000, .path = "/usr/bin/none"},
};

static const struct sp_spool_meta meta = {
	.start_timestamp_us = 1700000000000000ull,
	.sample_interval_us = 1001,
	.start_monotonic_ns = 1000000000ull,
	.frequency_hz = 999,
	.stack_size = 32768,
	.event_source = SP_EVENT_CYCLES,
	.command = "./chain4 -t 1",
	.hostname = "fuzz",
	.kernel_release = "6.1.0",
};

static void check(int err, const char *what)
{
	if (err)
		die(what, err);
}

/* A spool with every record kind, frames in every module and stacks of several depths. */
static void write_rich(const char *path, unsigned nframes, unsigned depth)
{
	struct sp_spool_writer *w;
	check(sp_spool_writer_open(path, &meta, &w), path);
	for (size_t i = 0; i < SP_ARRAY_SIZE(modules); i++) {
		uint32_t id;
		check(sp_spool_writer_add_module(w, &modules[i], &id), "module");
	}
	uint32_t fid[64];
	/* Modules 0-4: the ELF target twice, the unproven file, [vdso] and anonymous code. */
	for (unsigned i = 0; i < nframes && i < 64; i++) {
		const struct sp_module *m = &modules[i % 5];
		struct sp_frame f = {.module_id = i % 5, .mode = SP_FRAME_USER};
		f.rel_ip = 0x1000 + 0x30 * i;
		f.abs_ip = m->start - m->file_offset + f.rel_ip;
		check(sp_spool_writer_intern_frame(w, &f, &fid[i]), "frame");
	}
	struct sp_frame kf = {.module_id = 5, .mode = SP_FRAME_KERNEL, .abs_ip = 0xffffffff81a00000,
			      .rel_ip = 0xa00000};
	struct sp_frame tf = {.module_id = SP_NO_MODULE, .mode = SP_FRAME_TRUNCATED,
			      .abs_ip = SP_STOP_STACK_EXHAUSTED};
	struct sp_frame uf = {.module_id = SP_NO_MODULE, .mode = SP_FRAME_USER, .abs_ip = 0x1234};
	uint32_t kid, tid, uid;
	check(sp_spool_writer_intern_frame(w, &kf, &kid), "frame");
	check(sp_spool_writer_intern_frame(w, &tf, &tid), "frame");
	check(sp_spool_writer_intern_frame(w, &uf, &uid), "frame");

	/* Processes 100-102 have a trusted perf map, one writable by others, a directory (report.c). */
	uint32_t th[4];
	check(sp_spool_writer_intern_thread(w, 100, 100, &th[0]), "thread");
	check(sp_spool_writer_set_thread_name(w, th[0], "chain4"), "name");
	check(sp_spool_writer_intern_thread(w, 100, 101, &th[1]), "thread");
	check(sp_spool_writer_set_thread_name(w, th[1], "work\"er\n"), "name");
	check(sp_spool_writer_intern_thread(w, 101, 101, &th[2]), "thread");
	check(sp_spool_writer_intern_thread(w, 102, 102, &th[3]), "thread");
	struct sp_exec python = {.timestamp_ns = 1000000001ull, .pid = 101, .is_python_runtime = true};
	check(sp_spool_writer_append_exec(w, &python), "exec");

	uint64_t t = 1000500000ull;
	for (unsigned s = 0; s < 6; s++) {
		uint32_t frames[70];
		size_t n = 0;
		if (s == 1)
			frames[n++] = kid;
		for (unsigned d = 0; d < depth && n < 64; d++)
			frames[n++] = fid[(s + d) % (nframes ? nframes : 1)];
		if (s == 2)
			frames[n++] = tid;
		if (s == 3)
			frames[0] = uid;
		uint32_t stack;
		check(sp_spool_writer_intern_stack(w, frames, nframes ? n : 0, &stack), "stack");
		check(sp_spool_writer_append_sample(w, th[s % 4], stack, t), "sample");
		t += s == 4 ? -2000 : 1001000; /* one sample earlier than the previous */
	}
	check(sp_spool_writer_append_sample(w, th[0], 0, t), "sample");
	struct sp_exec e = {.timestamp_ns = t, .pid = 100, .is_python_runtime = false};
	check(sp_spool_writer_append_exec(w, &e), "exec");
	check(sp_spool_writer_append_lost(w, 3, t + 1), "lost");
	struct sp_summary sum = {.sample_events = 8, .samples = 7, .lost_events = 3,
				 .kernel_enabled = true, .truncated_frame_markers = 1};
	sum.stop_reasons[SP_STOP_ROOT] = 5;
	sum.stop_reasons[SP_STOP_STACK_EXHAUSTED] = 1;
	sum.error_stats[SP_ERR_NO_STACK_COPY] = 1;
	check(sp_spool_writer_finish(w, &sum), "finish");
	sp_spool_writer_free(w);
}

/*
 * A spool of record --off-cpu (docs/DESIGN.md, decision 12): samples whose
 * periods change (stored only then), and OFFCPU records of every kind:
 * blocked and preempted, without a stack, cut by either end, lost (no
 * time), stacks read from the thread or its last sample (no kernel sampling).  With
 * event_source, a counted event's spool (weights, no time) when not a clock.
 */
static void write_off_cpu(const char *path, uint32_t event_source)
{
	struct sp_spool_meta m = meta;
	m.event_source = event_source;
	m.flags |= SP_META_OFF_CPU;
	struct sp_spool_writer *w;
	check(sp_spool_writer_open(path, &m, &w), path);
	uint32_t id, fid[4], th[2], stack[3];
	check(sp_spool_writer_add_module(w, &modules[0], &id), "module");
	for (unsigned i = 0; i < 4; i++) {
		struct sp_frame f = {.module_id = 0, .mode = SP_FRAME_USER, .rel_ip = 0x1000 + 0x40 * i};
		f.abs_ip = modules[0].start + f.rel_ip;
		check(sp_spool_writer_intern_frame(w, &f, &fid[i]), "frame");
	}
	check(sp_spool_writer_intern_stack(w, fid, 4, &stack[0]), "stack");
	check(sp_spool_writer_intern_stack(w, fid + 1, 3, &stack[1]), "stack");
	check(sp_spool_writer_intern_stack(w, fid + 2, 2, &stack[2]), "stack");
	check(sp_spool_writer_intern_thread(w, 100, 100, &th[0]), "thread");
	check(sp_spool_writer_set_thread_name(w, th[0], "wall_split"), "name");
	check(sp_spool_writer_intern_thread(w, 100, 101, &th[1]), "thread");
	static const uint64_t periods[] = {1001001, 1001001, 0, 3, 3600, 1, 1001001, 0};
	uint64_t t = 1000500000ull;
	for (unsigned i = 0; i < SP_ARRAY_SIZE(periods); i++, t += 1001000)
		check(sp_spool_writer_append_weighted_sample(w, th[i % 2], stack[i % 3], t,
							     periods[i]),
		      "sample");
	const struct sp_offcpu iv[] = {
		{.start_ns = 1000000000ull, .duration_ns = 400000, .thread = th[1],
		 .flags = SP_OFFCPU_START_CUT | SP_OFFCPU_NO_STACK},
		{.start_ns = 1000600000ull, .duration_ns = 40000000, .thread = th[0],
		 .stack_id = stack[1]},
		{.start_ns = 1000700000ull, .duration_ns = 150000, .thread = th[0],
		 .stack_id = stack[0], .flags = SP_OFFCPU_PREEMPTED},
		{.start_ns = 1000650000ull, .duration_ns = 0, .thread = th[1], .stack_id = stack[2],
		 .flags = SP_OFFCPU_LOST},
		{.start_ns = 1040000000ull, .duration_ns = 20000000, .thread = th[1],
		 .flags = SP_OFFCPU_END_CUT | SP_OFFCPU_NO_STACK | SP_OFFCPU_PREEMPTED},
		{.start_ns = 999000000ull, .duration_ns = UINT64_MAX / 2, .thread = th[0],
		 .stack_id = stack[2]},
		/* without kernel sampling: a stack read while blocked, a preemption's last sample */
		{.start_ns = 1041000000ull, .duration_ns = 9000000, .thread = th[0],
		 .stack_id = stack[1], .flags = SP_OFFCPU_PROC_STACK},
		{.start_ns = 1042000000ull, .duration_ns = 300000, .thread = th[1],
		 .stack_id = stack[0], .flags = SP_OFFCPU_PREEMPTED | SP_OFFCPU_SAMPLE_STACK},
	};
	for (size_t i = 0; i < SP_ARRAY_SIZE(iv); i++)
		check(sp_spool_writer_append_offcpu(w, &iv[i]), "offcpu");
	struct sp_summary sum = {.sample_events = 8, .samples = 8};
	sum.stop_reasons[SP_STOP_ROOT] = 8;
	check(sp_spool_writer_finish(w, &sum), "finish");
	sp_spool_writer_free(w);
}

/*
 * Crash reproducer (tests/unit/fuzz_regressions.c, report_marker_inside_stack):
 * a truncation marker inside a stack and at its leaf, not at its root.
 */
static void write_marker_inside(const char *path)
{
	static const struct sp_frame frames[] = {
		{SP_NO_MODULE, SP_FRAME_USER, 0x1000, 0},
		{SP_NO_MODULE, SP_FRAME_TRUNCATED, SP_STOP_STACK_EXHAUSTED, 0},
		{SP_NO_MODULE, SP_FRAME_USER, 0x2000, 0},
	};
	struct sp_spool_writer *w;
	uint32_t id[3], thread, stack;
	check(sp_spool_writer_open(path, &meta, &w), path);
	for (size_t i = 0; i < 3; i++)
		check(sp_spool_writer_intern_frame(w, &frames[i], &id[i]), "frame");
	check(sp_spool_writer_intern_thread(w, 100, 100, &thread), "thread");
	const uint32_t mid[] = {id[0], id[1], id[2]}, leaf[] = {id[1], id[2]};
	check(sp_spool_writer_intern_stack(w, mid, 3, &stack), "stack");
	check(sp_spool_writer_append_sample(w, thread, stack, 1000500000ull), "sample");
	check(sp_spool_writer_intern_stack(w, leaf, 2, &stack), "stack");
	check(sp_spool_writer_append_sample(w, thread, stack, 1000600000ull), "sample");
	struct sp_summary sum = {.sample_events = 2, .samples = 2};
	check(sp_spool_writer_finish(w, &sum), "finish");
	sp_spool_writer_free(w);
}

/*
 * The rich spool plus symbol records (what `stackpulse symbolize` appends): an
 * inline chain, plain, kernel and perf-map frames, with their sources.  With
 * damaged set, a frame record naming an undefined string sits in the middle.
 */
static void write_symbolized(const char *sub, const char *name, const uint8_t *b, size_t n,
			     bool damaged)
{
	struct sp_spool *s;
	struct sp_symenc *e;
	check(sp_spool_open_buffer(b, n, &s), "read back");
	check(sp_symenc_new(s, &e), "symenc");
	const struct sp_resolved_frame chain[] = {
		{.name = "inner", .module = "a", .file = "/src/a.h", .line = 3,
		 .flags = SP_RFRAME_INLINE},
		{.name = "outer", .module = "a", .file = "/src/a.c", .line = 9, .symbol_offset = 4},
	};
	const struct sp_resolved_frame kernel = {.name = "do_syscall_64", .module = "[kernel.kallsyms]",
						 .kind = SP_KIND_KERNEL,
						 .origin = SP_ORIGIN_KERNEL_SYMBOLS};
	const struct sp_resolved_frame jit = {.name = "f", .module = "f.py", .file = "/f.py",
					      .kind = SP_KIND_PYTHON, .origin = SP_ORIGIN_PERF_MAP};
	check(sp_symenc_add_frame(e, 0, chain, 2), "sym frame");
	check(sp_symenc_add_frame(e, 1, &chain[1], 1), "sym frame");
	check(sp_symenc_add_frame(e, 4, &jit, 1), "sym frame");
	check(sp_symenc_add_frame(e, (uint32_t)s->nframes - 3, &kernel, 1), "sym frame");
	check(sp_symenc_add_kernel_symbol(e, 0xffffffff81a00000, 0x80, "do_syscall_64", NULL),
	      "sym kernel");
	check(sp_symenc_add_perf_map_line(e, 100, 0x7f0000100000, 0x40, "py::f:/f.py"),
	      "sym perf map");
	struct sp_buf out;
	sp_buf_init(&out);
	check(sp_buf_append(&out, b, n), "append");
	check(sp_symenc_finish(e, &out), "symenc finish");
	if (damaged) {
		/* Frame 2, one entry naming string 200, then a valid record again. */
		static const uint8_t bad[] = {SP_REC_SYM_FRAME, 10, 2, 1, 0, 0, 0, 200, 1, 0, 0, 0};
		static const uint8_t good[] = {SP_REC_SYM_FRAME, 10, 3, 1, 0, 0, 0, 0, 1, 0, 0, 0};
		check(sp_buf_append(&out, bad, sizeof(bad)), "append");
		check(sp_buf_append(&out, good, sizeof(good)), "append");
	}
	write_file(sub, name, out.data, out.len);
	sp_buf_release(&out);
	sp_symenc_free(e);
	sp_spool_free(s);
}

/* The same bytes with damage: each variant reaches another of the reader's refusals. */
static void write_spools(const char *sub)
{
	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s/%s/.rich.tmp", dir, sub);
	write_rich(tmp, 12, 5);
	size_t n;
	uint8_t *b = read_file(tmp, &n);
	remove(tmp);
	write_file(sub, "rich.spool", b, n);
	write_symbolized(sub, "symbols.spool", b, n, false);
	write_symbolized(sub, "symbols-damaged.spool", b, n, true);
	write_file(sub, "cut-mid-record.spool", b, n - 7);
	write_file(sub, "header-only.spool", b, SP_SPOOL_HEADER_LEN);
	write_file(sub, "short-header.spool", b, SP_SPOOL_HEADER_LEN - 3);

	/* An unknown record type (skipped), then a zero-filled tail (a preallocated file). */
	uint8_t *x = malloc(n + 64);
	if (!x)
		die("malloc", -ENOMEM);
	memcpy(x, b, n);
	static const uint8_t unknown[] = {0x7f, 3, 1, 2, 3};
	memcpy(x + n, unknown, sizeof(unknown));
	memset(x + n + sizeof(unknown), 0, 32);
	write_file(sub, "unknown-then-zeros.spool", x, n + sizeof(unknown) + 32);

	/* Version 2: refused whole. */
	memcpy(x, b, n);
	x[SP_SPOOL_MAGIC_LEN] = 2;
	write_file(sub, "version2.spool", x, n);
	free(x);
	free(b);

	/* No frames: only empty stacks. */
	write_rich(tmp, 0, 0);
	b = read_file(tmp, &n);
	remove(tmp);
	write_file(sub, "no-frames.spool", b, n);
	free(b);

	/* record --off-cpu's intervals beside a clock's samples, and beside a counted event's. */
	write_off_cpu(tmp, SP_EVENT_CPU_CLOCK);
	b = read_file(tmp, &n);
	remove(tmp);
	write_file(sub, "off-cpu.spool", b, n);
	write_file(sub, "off-cpu-cut.spool", b, n - 5);
	free(b);
	write_off_cpu(tmp, SP_EVENT_PAGE_FAULTS);
	b = read_file(tmp, &n);
	remove(tmp);
	write_file(sub, "off-cpu-faults.spool", b, n);
	free(b);

	/* A deep stack: the 64 frames the generator allows. */
	write_rich(tmp, 40, 60);
	b = read_file(tmp, &n);
	remove(tmp);
	write_file(sub, "deep.spool", b, n);
	free(b);
}

/* ---- perf records -------------------------------------------------------- */

/* Harness selector bits (tests/fuzz/perf_record.c): layout in bits 0-2, true size bit 3. */
#define SEL_RECORDER 0
#define SEL_ALL 2
#define SEL_FIX_SIZE 8
#define SEL_NO_ID_ALL 0x10

static uint64_t words[1024];
static size_t nw;

static void put(uint64_t v)
{
	words[nw++] = v;
}

static void put_bytes(const void *p, size_t n)
{
	memset(&words[nw], 0, (n + 7) / 8 * 8);
	memcpy(&words[nw], p, n);
	nw += (n + 7) / 8;
}

static void begin(uint32_t type, uint16_t misc)
{
	nw = 0;
	struct perf_event_header h = {.type = type, .misc = misc};
	memcpy(&words[nw++], &h, sizeof(h));
}

/* Fix the header's size and write selector + record. */
static void emit(const char *name, uint8_t sel, bool true_size)
{
	struct perf_event_header h;
	memcpy(&h, &words[0], sizeof(h));
	h.size = (uint16_t)(nw * 8 + (true_size ? 0 : 8));
	memcpy(&words[0], &h, sizeof(h));
	uint8_t out[sizeof(words) + 1];
	out[0] = sel;
	memcpy(out + 1, words, nw * 8);
	write_file("perf_record", name, out, nw * 8 + 1);
}

/* The sample_id trailer of the recorder's layout: TID, TIME, CPU. */
static void put_sample_id(void)
{
	put(200 | (uint64_t)201 << 32);
	put(123456789);
	put(1);
}

static void recorder_sample(uint64_t nr_callchain, uint64_t abi, uint64_t stack, uint64_t dyn)
{
	begin(PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER);
	put(0x401000);                      /* ip */
	put(200 | (uint64_t)201 << 32);     /* pid, tid */
	put(123456789);                     /* time */
	put(1);                             /* cpu */
	put(nr_callchain);
	for (uint64_t i = 0; i < nr_callchain; i++)
		put(i ? 0x401000 + i * 16 : PERF_CONTEXT_USER);
	put(abi);
	if (abi)
		for (unsigned i = 0; i < (unsigned)__builtin_popcountll(sp_perf_regs_mask()); i++)
			put(0x7ffc00000000 + i);
	put(stack);
	for (uint64_t i = 0; i < stack / 8; i++)
		put(0x401000 + i);
	if (stack)
		put(dyn);
}

static void write_records(void)
{
	recorder_sample(3, PERF_SAMPLE_REGS_ABI_64, 64, 40);
	emit("sample", SEL_RECORDER | SEL_FIX_SIZE, true);
	emit("sample-size-mismatch", SEL_RECORDER, false);
	recorder_sample(0, PERF_SAMPLE_REGS_ABI_64, 0, 0);
	emit("sample-no-stack", SEL_RECORDER | SEL_FIX_SIZE, true);
	recorder_sample(2, PERF_SAMPLE_REGS_ABI_NONE, 16, 16);
	emit("sample-no-regs", SEL_RECORDER | SEL_FIX_SIZE, true);
	recorder_sample(1, PERF_SAMPLE_REGS_ABI_64, 16, 24);
	emit("sample-dyn-too-big", SEL_RECORDER | SEL_FIX_SIZE, true);
	recorder_sample(2, PERF_SAMPLE_REGS_ABI_64, 8, 8);
	words[5] = 1000; /* nr_callchain: more entries than the record holds */
	emit("sample-callchain-overrun", SEL_RECORDER | SEL_FIX_SIZE, true);

	/* Every supported field, in the kernel's order. */
	begin(PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER);
	put(7);                          /* identifier */
	put(0x401000);                   /* ip */
	put(200 | (uint64_t)201 << 32);  /* pid, tid */
	put(5);                          /* time */
	put(0x1000);                     /* addr */
	put(7);                          /* id */
	put(7);                          /* stream id */
	put(0);                          /* cpu */
	put(10101);                      /* period */
	put(1);                          /* callchain */
	put(0x401000);
	put(PERF_SAMPLE_REGS_ABI_64);
	for (unsigned i = 0; i < (unsigned)__builtin_popcountll(sp_perf_regs_mask()); i++)
		put(i);
	put(8);
	put(0xdead);
	put(8);
	emit("sample-all-fields", SEL_ALL | SEL_FIX_SIZE, true);

	static const char lib[] = "/usr/lib/x86_64-linux-gnu/libc.so.6";
	begin(PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER);
	put(200 | (uint64_t)201 << 32);
	put(0x7f0000000000);            /* addr */
	put(0x1000);                    /* len */
	put(0x2000);                    /* pgoff */
	put(8 | (uint64_t)1 << 32);     /* maj, min */
	put(123);                       /* ino */
	put(0);                         /* ino_generation */
	put(5 | (uint64_t)2 << 32);     /* prot, flags */
	put_bytes(lib, sizeof(lib));
	put_sample_id();
	emit("mmap2", SEL_RECORDER | SEL_FIX_SIZE, true);
	words[nw - 4] |= 0x2f2f2f2f2f2f2f2full; /* the string runs to the trailer, unterminated */
	nw -= 3;
	emit("mmap2-unterminated", SEL_RECORDER | SEL_NO_ID_ALL | SEL_FIX_SIZE, true);

	begin(PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC);
	put(200 | (uint64_t)200 << 32);
	put_bytes("chain4", 7);
	put_sample_id();
	emit("comm-exec", SEL_RECORDER | SEL_FIX_SIZE, true);

	begin(PERF_RECORD_FORK, 0);
	put(202 | (uint64_t)200 << 32); /* pid, ppid */
	put(202 | (uint64_t)200 << 32); /* tid, ptid */
	put(99);                        /* time */
	put_sample_id();
	emit("fork", SEL_RECORDER | SEL_FIX_SIZE, true);
	words[0] = (words[0] & ~0xffffffffull) | PERF_RECORD_EXIT;
	emit("exit", SEL_RECORDER | SEL_FIX_SIZE, true);

	begin(PERF_RECORD_LOST, 0);
	put(7);
	put(12);
	put_sample_id();
	emit("lost", SEL_RECORDER | SEL_FIX_SIZE, true);
	nw = 2;
	emit("lost-short", SEL_RECORDER | SEL_FIX_SIZE, true);
}

/* Go function tables in each layout the reader knows (tests/unit/gopclntab_builder.h). */
static void write_go_tables(void)
{
	static const struct {
		const char *name;
		unsigned version;
		uint64_t text_start;
	} tables[] = {
		{"go1.16", 116, 0},
		{"go1.18", 118, GOTAB_TEXT},
		{"go1.20", 120, GOTAB_TEXT},
		{"go1.20-pie", 120, 0},
	};
	for (size_t i = 0; i < SP_ARRAY_SIZE(tables); i++) {
		struct gotab g;
		gotab_build(&g, tables[i].version, tables[i].text_start);
		write_file("gopclntab", tables[i].name, g.b, g.len);
	}
	/* With an inline tree's pc data and function data (the harness reads its own bytes as the tree). */
	static const unsigned inl[] = {118, 120};
	for (size_t i = 0; i < SP_ARRAY_SIZE(inl); i++) {
		struct gotab g;
		uint8_t tree[GOTAB_TREE];
		gotab_build(&g, inl[i], GOTAB_TEXT);
		gotab_add_inline(&g, inl[i], tree);
		write_file("gopclntab", inl[i] == 118 ? "go1.18-inline" : "go1.20-inline", g.b, g.len);
	}
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: make_seeds CORPUS-DIR\n");
		return 2;
	}
	dir = argv[1];
	static const char *const subs[] = {"spool_reader", "report", "perf_record", "gopclntab"};
	for (size_t i = 0; i < SP_ARRAY_SIZE(subs); i++) {
		char p[4096];
		snprintf(p, sizeof(p), "%s/%s", dir, subs[i]);
		if (mkdir(dir, 0777) && errno != EEXIST)
			die(dir, -errno);
		if (mkdir(p, 0777) && errno != EEXIST)
			die(p, -errno);
	}
	write_spools("spool_reader");
	write_spools("report");
	write_marker_inside(path_of("report", "marker-inside-stack.spool"));
	write_records();
	write_go_tables();
	return 0;
}
