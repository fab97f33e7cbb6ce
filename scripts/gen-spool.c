/* SPDX-License-Identifier: MIT */
/*
 * Writes a large, realistic spool for report benchmarks (scripts/bench-report):
 * N samples of several processes and many threads, over a few thousand
 * distinct stacks of 10-40 frames that share prefixes the way call trees do.
 * Frames are addresses inside real functions of real module files (given
 * with -m, e.g. the stackpulse binary with its DWARF; by default the C
 * library this program runs with), each mapped where a loader would put it
 * and recorded with its build-id and load bias the way the recorder records
 * modules, so `stackpulse report` does real symbolization work on the spool.
 * The first module gets two thirds of the frames.
 *
 * Built by `make scripts/gen-spool`.
 * Usage: gen-spool [-n SAMPLES] [-s STACKS] [-p PROCESSES] [-t THREADS] [-S SEED]
 *                  [-m MODULE-FILE]... -o FILE
 */
#define MAX_MODULES 8
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* A function's runtime range in a module. */
struct func {
	uint64_t start, size;
};

struct modinfo {
	struct sp_module m;
	char path[PATH_MAX];
	struct func *funcs;
	size_t nfuncs;
};

/* xorshift64*: a fixed seed gives the same spool on every run. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static double rnd_unit(void)
{
	return (double)(rnd() >> 11) / 9007199254740992.0;
}

static size_t rnd_below(size_t n)
{
	return (size_t)(rnd() % n);
}

static void die(const char *what, int err)
{
	fprintf(stderr, "gen-spool: %s: %s\n", what, err < 0 ? sp_strerror(err) : strerror(err));
	exit(1);
}

/* The path of the C library this program runs with, from its own mappings. */
static const char *own_libc(void)
{
	static char path[PATH_MAX];
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f)
		die("cannot open /proc/self/maps", errno);
	char line[PATH_MAX + 128];
	path[0] = '\0';
	while (!path[0] && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');
		if (p && strstr(p, "/libc.so")) {
			p[strcspn(p, "\n")] = '\0';
			snprintf(path, sizeof(path), "%s", p);
		}
	}
	fclose(f);
	if (!path[0]) {
		fprintf(stderr, "gen-spool: cannot find the C library in /proc/self/maps: name a "
				"module file with -m\n");
		exit(1);
	}
	return path;
}
static int cmp_func(const void *a, const void *b)
{
	const struct func *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * Map the file's executable PT_LOAD segment at base (page-aligned, as the
 * loader does; an ET_EXEC file at its link address) and fill the module's
 * identity the way the recorder does: inode, device, size, mtime, build-id,
 * load bias.  Then collect the sized functions inside the mapping.
 */
static void read_module(struct modinfo *mi, const char *path, uint64_t base)
{
	struct sp_module *m = &mi->m;
	/* Modules are recorded by absolute path, as /proc/PID/maps shows them. */
	if (!realpath(path, mi->path))
		die(path, errno);
	m->path = mi->path;
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		die(path, errno);
	struct stat st;
	if (fstat(fd, &st))
		die(path, errno);
	m->inode = st.st_ino;
	m->dev_major = major(st.st_dev);
	m->dev_minor = minor(st.st_dev);
	m->file_size = (uint64_t)st.st_size;
	m->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
	sp_elf_init();
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	struct sp_elf_info info;
	int err = elf ? sp_elf_info_read(elf, &info) : -SP_E_ELF_MALFORMED;
	if (err)
		die(path, err);
	const struct sp_load_segment *seg = NULL;
	for (size_t i = 0; i < info.nsegs && !seg; i++)
		if (info.segs[i].exec)
			seg = &info.segs[i];
	if (!seg) {
		fprintf(stderr, "gen-spool: '%s' has no executable segment\n", path);
		exit(1);
	}
	if (info.e_type != ET_DYN)
		base = 0;
	const uint64_t page = 4096;
	m->start = (base + seg->vaddr) & ~(page - 1);
	m->end = (base + seg->vaddr + seg->memsz + page - 1) & ~(page - 1);
	m->file_offset = seg->offset & ~(page - 1);
	m->build_id_len = info.build_id_len;
	memcpy(m->build_id, info.build_id, info.build_id_len);
	err = sp_elf_load_bias(&info, m->start, m->file_offset, &m->load_bias);
	if (err)
		die(path, err);
	m->flags = SP_MODULE_HAS_BIAS;
	sp_elf_info_release(&info);

	/* .symtab when the file has one, else .dynsym (Debian's libc is stripped). */
	Elf_Scn *scn = NULL, *pick = NULL;
	GElf_Shdr sh, pick_sh = {0};
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB || (sh.sh_type == SHT_DYNSYM && !pick)) {
			pick = scn;
			pick_sh = sh;
		}
	}
	size_t cap = 0;
	if (pick && pick_sh.sh_entsize) {
		Elf_Data *d = elf_getdata(pick, NULL);
		size_t n = d ? pick_sh.sh_size / pick_sh.sh_entsize : 0;
		for (size_t i = 0; i < n; i++) {
			GElf_Sym sym;
			if (!gelf_getsym(d, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
			    sym.st_size < 16 || sym.st_shndx == SHN_UNDEF)
				continue;
			uint64_t start = sym.st_value + m->load_bias;
			if (start < m->start || start + sym.st_size > m->end)
				continue;
			if (mi->nfuncs == cap) {
				cap = cap ? 2 * cap : 1024;
				mi->funcs = realloc(mi->funcs, cap * sizeof(*mi->funcs));
				if (!mi->funcs)
					die("out of memory", ENOMEM);
			}
			mi->funcs[mi->nfuncs++] = (struct func){start, sym.st_size};
		}
	}
	elf_end(elf);
	close(fd);
	if (mi->nfuncs < 50) {
		fprintf(stderr, "gen-spool: '%s' has only %zu function symbols in its mapping\n",
			mi->path, mi->nfuncs);
		exit(1);
	}
	qsort(mi->funcs, mi->nfuncs, sizeof(*mi->funcs), cmp_func);
}

/* A frame inside a random function of a random module; the leaf may be anywhere in it. */
static struct sp_frame pick_frame(const struct modinfo *mods, size_t nmods,
				  const uint32_t *module_ids)
{
	size_t mi = nmods > 1 && rnd_below(3) == 0 ? 1 + rnd_below(nmods - 1) : 0;
	const struct modinfo *mod = &mods[mi];
	/* Skewed: a few functions are on many stacks, as in real programs. */
	size_t fi = (size_t)(mod->nfuncs * rnd_unit() * rnd_unit());
	const struct func *fn = &mod->funcs[fi];
	struct sp_frame f = {.module_id = module_ids[mi], .mode = SP_FRAME_USER};
	f.abs_ip = fn->start + 4 + rnd_below(fn->size - 8);
	f.rel_ip = f.abs_ip - mod->m.start + mod->m.file_offset;
	return f;
}

static void usage(FILE *out)
{
	fprintf(out, "usage: gen-spool [-n SAMPLES] [-s STACKS] [-p PROCESSES] [-t THREADS] "
		     "[-S SEED] [-m MODULE-FILE]... -o FILE\n"
		     "  defaults: 1000000 samples, 3000 stacks, 4 processes, 8 threads each,\n"
		     "  the C library as the only module\n");
}

static unsigned long number(const char *arg, unsigned long max)
{
	char *end;
	unsigned long v = strtoul(arg, &end, 10);
	if (end == arg || *end || !v || v > max) {
		fprintf(stderr, "gen-spool: invalid number '%s' (1 to %lu)\n", arg, max);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	unsigned long nsamples = 1000000, nstacks = 3000, nprocs = 4, nthreads = 8;
	const char *out = NULL, *paths[MAX_MODULES];
	size_t nmods = 0;
	int c;
	while ((c = getopt(argc, argv, "n:s:p:t:S:m:o:h")) != -1) {
		switch (c) {
		case 'n':
			nsamples = number(optarg, 1000000000);
			break;
		case 's':
			nstacks = number(optarg, 1000000);
			break;
		case 'p':
			nprocs = number(optarg, 1000);
			break;
		case 't':
			nthreads = number(optarg, 1000);
			break;
		case 'S':
			rng_state ^= number(optarg, ULONG_MAX) * 0x9e3779b97f4a7c15ull;
			break;
		case 'o':
			out = optarg;
			break;
		case 'm':
			if (nmods == MAX_MODULES) {
				fprintf(stderr, "gen-spool: at most %d modules\n", MAX_MODULES);
				return 2;
			}
			paths[nmods++] = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!out || optind != argc) {
		usage(stderr);
		return 2;
	}

	if (!nmods)
		paths[nmods++] = own_libc();
	struct modinfo mods[MAX_MODULES];
	memset(mods, 0, sizeof(mods));
	for (size_t i = 0; i < nmods; i++)
		read_module(&mods[i], paths[i], 0x7f0000000000ull + 0x100000000ull * i);

	const uint32_t freq = 999;
	struct sp_spool_meta meta = {
		.start_timestamp_us = 1700000000000000ull,
		.sample_interval_us = 1000000 / freq,
		.start_monotonic_ns = 1000000000000ull,
		.frequency_hz = freq,
		.stack_size = 32768,
		.event_source = SP_EVENT_CPU_CLOCK,
		.command = "gen-spool (synthetic benchmark profile)",
		.hostname = "bench",
		.kernel_release = "",
	};
	struct sp_spool_writer *w;
	int err = sp_spool_writer_open(out, &meta, &w);
	if (err)
		die(out, err);

	/* Per process: both modules, a thread group, and its share of the stacks. */
	uint32_t *stacks = calloc(nstacks, sizeof(*stacks));
	uint32_t *threads = calloc(nprocs * nthreads, sizeof(*threads));
	if (!stacks || !threads)
		die("out of memory", ENOMEM);
	uint32_t frames[40], prefix[16][15];
	size_t stacks_per_proc = (nstacks + nprocs - 1) / nprocs;
	for (unsigned long p = 0; p < nprocs; p++) {
		int32_t pid = (int32_t)(10000 + 100 * p);
		uint32_t ids[MAX_MODULES];
		for (size_t i = 0; i < nmods; i++) {
			mods[i].m.pid = pid;
			if ((err = sp_spool_writer_add_module(w, &mods[i].m, &ids[i])))
				die(out, err);
		}
		for (unsigned long t = 0; t < nthreads; t++) {
			uint32_t *ix = &threads[p * nthreads + t];
			char name[16];
			snprintf(name, sizeof(name), t ? "worker-%lu" : "main", t);
			if ((err = sp_spool_writer_intern_thread(w, pid, pid + (int32_t)t, ix)) ||
			    (err = sp_spool_writer_set_thread_name(w, *ix, name)))
				die(out, err);
		}
		/* Call paths from the root that many stacks share (main, a dispatcher...). */
		for (size_t k = 0; k < 16; k++)
			for (size_t d = 0; d < 15; d++) {
				struct sp_frame f = pick_frame(mods, nmods, ids);
				if ((err = sp_spool_writer_intern_frame(w, &f, &prefix[k][d])))
					die(out, err);
			}
		for (size_t s = p * stacks_per_proc; s < nstacks && s < (p + 1) * stacks_per_proc;
		     s++) {
			size_t depth = 10 + rnd_below(31), shared = 5 + rnd_below(10);
			if (shared > depth - 3)
				shared = depth - 3;
			const uint32_t *pre = prefix[rnd_below(16)];
			/* Leaf first: the frames below the shared prefix, then the prefix up to the root. */
			for (size_t d = 0; d < depth - shared; d++) {
				struct sp_frame f = pick_frame(mods, nmods, ids);
				if ((err = sp_spool_writer_intern_frame(w, &f, &frames[d])))
					die(out, err);
			}
			for (size_t d = 0; d < shared; d++)
				frames[depth - shared + d] = pre[shared - 1 - d];
			if ((err = sp_spool_writer_intern_stack(w, frames, depth, &stacks[s])))
				die(out, err);
		}
	}

	/* Samples in time order, every thread ticking at freq, heavy stacks chosen more often. */
	uint64_t now = meta.start_monotonic_ns;
	uint64_t step = 1000000000ull / freq / (nprocs * nthreads);
	for (unsigned long i = 0; i < nsamples; i++) {
		size_t t = rnd_below(nprocs * nthreads), p = t / nthreads;
		size_t first = p * stacks_per_proc;
		size_t count = stacks_per_proc;
		if (first >= nstacks)
			first = 0, count = nstacks;
		else if (first + count > nstacks)
			count = nstacks - first;
		double u = rnd_unit();
		size_t s = first + (size_t)(count * u * u * u);
		now += step;
		if ((err = sp_spool_writer_append_sample(w, threads[t], stacks[s], now)))
			die(out, err);
	}
	struct sp_summary sum = {.sample_events = nsamples, .samples = nsamples};
	sum.stop_reasons[SP_STOP_ROOT] = nsamples;
	if ((err = sp_spool_writer_finish(w, &sum)))
		die(out, err);
	sp_spool_writer_free(w);
	fprintf(stderr, "gen-spool: wrote %s: %lu samples, %lu threads in %lu processes, "
			"%lu stacks over",
		out, nsamples, nprocs * nthreads, nprocs, nstacks);
	for (size_t i = 0; i < nmods; i++) {
		fprintf(stderr, " %s (%zu functions)", mods[i].path, mods[i].nfuncs);
		free(mods[i].funcs);
	}
	fputc('\n', stderr);
	free(stacks);
	free(threads);
	return 0;
}
