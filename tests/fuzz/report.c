/* SPDX-License-Identifier: MIT */
/* libFuzzer harness: symbolizer, aggregation and every report and export format over a fuzzed spool. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "spool/spool.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *devnull;

/*
 * The symbolizer opens the files that module records name.  A fuzzed path
 * must not reach whatever the machine holds (a device, a FIFO, a huge
 * file), so paths are rewritten before the report runs: "/a..." names the
 * small ELF built next to this harness (report-target) with its true
 * identity, so symbols are really looked up at fuzzed addresses; "/b..."
 * names the same file with the fuzzed identity (it stays unproven); other
 * absolute paths move under /nonexistent.  Pseudo-paths ("[vdso]", "")
 * are opened by nothing and stay as they are.  Kernel frames read a small
 * kallsyms written next to the harness, never /proc/kallsyms, and perf maps
 * come from a directory there too (report-perfmaps/perf-PID.map).
 */
static char here[4096]; /* the harness's directory, with a trailing '/' */
static char target[4200], kallsyms_path[4200], perf_map_dir[4200];
static struct stat target_st;
static uint8_t target_build_id[SP_BUILD_ID_MAX];
static size_t target_build_id_len;

/* Kernel symbols around the addresses the seed spools' kernel frames use. */
static const char kallsyms_text[] =
	"ffffffff81000000 T _stext\n"
	"ffffffff81a00000 T do_syscall_64\n"
	"ffffffff81a00000 t __do_syscall_64\n"
	"ffffffff81a00100 T entry_SYSCALL_64\n"
	"ffffffff81a00200 D some_data\n"
	"ffffffffc0a00000 t ext4_readdir\t[ext4]\n"
	"ffffffff82000000 T _etext\n";

/*
 * Perf maps of the seed spools' processes: 100 a safe map over its anonymous
 * module and its module-less frame, 101 a map writable by others (refused),
 * 102 a directory where the map should be (refused).
 */
static const char perf_map_100[] =
	"7f0000100000 40 LazyCompile:*main /app/index.js:1\n"
	"7f0000100040 100 py::work:/app/x.py\n"
	"7f0000100080 20 later_wins\n"
	"1230 10 low_jit\n"
	"0x7f0000101000 0x1000 Function:~tail\n";

static int write_text(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f))
		return -1;
	/* chmod, not the umask, decides the mode the symbolizer's trust check sees. */
	return chmod(path, mode);
}

static void find_target(void)
{
	ssize_t n = readlink("/proc/self/exe", here, sizeof(here) - 1);
	char *slash = n > 0 ? memrchr(here, '/', (size_t)n) : NULL;
	if (!slash) {
		fprintf(stderr, "report fuzzer: cannot find its own directory\n");
		abort();
	}
	slash[1] = '\0';
	snprintf(target, sizeof(target), "%sreport-target", here);
	snprintf(kallsyms_path, sizeof(kallsyms_path), "%sreport-kallsyms", here);
	snprintf(perf_map_dir, sizeof(perf_map_dir), "%sreport-perfmaps", here);

	char p[4300];
	mkdir(perf_map_dir, 0755);
	snprintf(p, sizeof(p), "%s/perf-102.map", perf_map_dir);
	mkdir(p, 0755);
	int bad = write_text(kallsyms_path, kallsyms_text, 0644);
	snprintf(p, sizeof(p), "%s/perf-100.map", perf_map_dir);
	bad |= write_text(p, perf_map_100, 0644);
	snprintf(p, sizeof(p), "%s/perf-101.map", perf_map_dir);
	bad |= write_text(p, perf_map_100, 0666);
	if (bad) {
		fprintf(stderr, "report fuzzer: cannot write kallsyms and perf maps in %s\n", here);
		abort();
	}

	int fd = open(target, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "report fuzzer: no %s; symbols stay unresolved\n", target);
		return;
	}
	sp_elf_init();
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf) {
		target_build_id_len = sp_elf_build_id(elf, target_build_id, sizeof(target_build_id));
		elf_end(elf);
	}
	if (fstat(fd, &target_st))
		memset(&target_st, 0, sizeof(target_st));
	close(fd);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	/* Never ask a debuginfod server about fuzzed build-ids, nor look in the caller's dirs. */
	unsetenv("DEBUGINFOD_URLS");
	unsetenv("STACKPULSE_DEBUG_DIRS");
	/*
	 * No cache directory: each input is symbolized from the files, the same
	 * way every run (the symbol cache's reader has its own harness, symcache).
	 */
	setenv("STACKPULSE_CACHE_DIR", "", 1);
	devnull = fopen("/dev/null", "w");
	if (!devnull)
		abort();
	find_target();
	return 0;
}

static int rewrite_path(struct sp_module *m)
{
	const char *p = m->path;
	char *q;
	if (p[0] != '/')
		return 0;
	if (p[1] == 'a' || p[1] == 'b') {
		/* Keep the tail: "/a (deleted)" exercises the suffix handling on a real file. */
		if (asprintf(&q, "%s%s", target, p + 2) < 0)
			return -ENOMEM;
		if (p[1] == 'a' && m->build_id_len) {
			m->build_id_len = (uint8_t)target_build_id_len;
			memcpy(m->build_id, target_build_id, target_build_id_len);
		} else if (p[1] == 'a') {
			m->inode = target_st.st_ino;
			m->file_size = (uint64_t)target_st.st_size;
			m->mtime_ns = (int64_t)target_st.st_mtim.tv_sec * 1000000000 +
				      target_st.st_mtim.tv_nsec;
		}
	} else if (asprintf(&q, "/nonexistent%s", p) < 0) {
		return -ENOMEM;
	}
	free((char *)m->path);
	m->path = q;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sp_spool *s;
	if (sp_spool_open_buffer(data, size, &s))
		return 0;
	for (size_t i = 0; i < s->nmodules; i++)
		if (rewrite_path(&s->modules[i]))
			goto out;

	/*
	 * Options come from a header field, so one corpus serves this and the
	 * reader harness; the corpus seeds' 999 Hz (make_seeds.c) gives the defaults.
	 */
	uint32_t knobs = s->meta.frequency_hz ^ 999;
	struct sp_symbolizer_opts sopts = {
		.no_demangle = knobs & 1,
		.no_kernel_symbols = knobs & 4,
		.no_inline = knobs & 8,
		.perf_map_policy = (knobs >> 4) % 3,
		.kallsyms_path = kallsyms_path,
		.perf_map_dir = perf_map_dir,
		.debug_dirs = "/nonexistent",
	};
	struct sp_symbolizer *sym;
	if (sp_symbolizer_new(s, &sopts, &sym))
		goto out;
	struct sp_report_opts ropts = {
		.lines = knobs & 2,
		.max_rows = (knobs >> 6) % 40,
		.max_stacks = (knobs >> 12) % 10,
		.spool_path = (knobs & 0x20000) ? "fuzz.spool" : NULL,
	};
	/* Every format the library knows: a new one is fuzzed as soon as it exists. */
	for (ropts.format = 0; ropts.format < 16; ropts.format++)
		sp_report_write(s, sym, &ropts, devnull);
	/* A spool of record --off-cpu: every format again with each time metric. */
	bool off_cpu = s->meta.flags & SP_META_OFF_CPU;
	for (ropts.metric = SP_METRIC_OFF_CPU; off_cpu && ropts.metric <= SP_METRIC_WALL; ropts.metric++)
		for (ropts.format = 0; ropts.format < 16; ropts.format++)
			sp_report_write(s, sym, &ropts, devnull);
	ropts.metric = off_cpu && (knobs & 0x800000u) ? SP_METRIC_WALL : SP_METRIC_CPU;
	/* The text views, sections and filters, two ways each, and a diff with itself. */
	static const int32_t pids[] = {1, 4242};
	for (int v = 0; v < 2; v++) {
		ropts.format = SP_REPORT_TEXT;
		ropts.tree = v == 0;
		ropts.inverted = v == 1;
		ropts.group_by = v ? SP_GROUP_PROCESS : SP_GROUP_THREAD;
		ropts.sort = (knobs >> 20) % 3;
		ropts.show_counts = v;
		ropts.percent_limit = v ? -1 : 0;
		ropts.filter = (struct sp_report_filter){0};
		if (v == 1 || (knobs & 0x400000u))
			ropts.filter = (struct sp_report_filter){
				.pids = pids, .npids = 2, .focus = v ? "*a*" : NULL,
				.exclude = v ? NULL : "main", .module = v ? NULL : "libc.so.6",
				.has_start = true, .start_ns = 1000, .has_end = v, .end_ns = 1000000000};
		sp_report_write(s, sym, &ropts, devnull);
		ropts.group_by = SP_GROUP_NONE;
		sp_report_diff(s, sym, NULL, s, sym, &ropts, devnull);
	}
	/* Every frame, including the ones no sample reaches, and its inline chain. */
	for (size_t i = 0; i < s->nframes; i++) {
		const struct sp_resolved_frame *rf, *all;
		size_t n;
		if (!sp_symbolizer_resolve(sym, (uint32_t)i, &rf) && (!rf->name || !rf->module))
			abort();
		if (!sp_symbolizer_resolve_all(sym, (uint32_t)i, &all, &n)) {
			if (n < 1)
				abort();
			for (size_t k = 0; k < n; k++)
				if (!all[k].name || !all[k].module)
					abort();
		}
	}
	struct sp_symbolizer_stats st;
	sp_symbolizer_stats(sym, &st);
	sp_symbolizer_free(sym);
out:
	sp_spool_free(s);
	return 0;
}
