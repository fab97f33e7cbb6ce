/* SPDX-License-Identifier: MIT */
/*
 * Unwinder micro-benchmark.  Samples this process about 100 times with a
 * profiling timer, at arbitrary instructions and at several stack depths, the
 * way the kernel samples a target: every register of the interrupted state,
 * and up to 32 KiB of stack above its SP (the recorder's default copy).  Then
 * unwinds the copies offline, over and over, and prints nanoseconds per frame
 * (the best of 31 trials of one pass over the samples each):
 *
 *   stackpulse (sp_unwind), warm: the rule tables kept between passes;
 *   stackpulse, cold: fresh tables (sp_cfi_table_new) before every pass over
 *     the samples, or before every single sample (the first sample of a module);
 *   libunwind remote (what perf report uses), warm and cold: an address space
 *     with accessors that read registers from the sample, stack words from the
 *     copy and everything else (.eh_frame_hdr, .eh_frame, code) from the module
 *     files, as perf does; cold = a fresh address space per pass.
 *
 * Built and run by scripts/bench:
 *   cc -O2 -Ilib scripts/unwind-bench.c libstackpulse.a \
 *      $(pkg-config --libs libdw libelf libunwind-generic) -lz
 * Usage: unwind-bench [-j FILE]   (-j: also write the figures as JSON)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* REG_RIP and the other ucontext register names */
#endif
#include "../tests/unit/live_stack.h"

#include <libunwind.h>
#include <signal.h>
#include <sys/time.h>
#include <time.h>

#define NOINL __attribute__((noinline, noclone))
#define BARRIER() __asm__ volatile("" ::: "memory")
#define NSAMPLES 100
#define COPY_CAP 32768
#define MAXF 256

/* libunwind's binary search over a remote .eh_frame_hdr table (exported, not declared). */
extern int _Ux86_64_dwarf_search_unwind_table(unw_addr_space_t as, unw_word_t ip,
					      unw_dyn_info_t *di, unw_proc_info_t *pi,
					      int need_unwind_info, void *arg);

struct sample {
	struct sp_regs regs;
	struct sp_stack_mem mem;
	uint8_t stack[COPY_CAP];
};

static struct ls_map map;
static struct sample *samples;
static volatile int nsamples;
static uint64_t stack_top;

/* ---- capturing ----------------------------------------------------------- */

static void on_prof(int sig, siginfo_t *si, void *ucv)
{
	struct sample *s;

	(void)sig;
	(void)si;
	if (nsamples >= NSAMPLES)
		return;
	s = &samples[nsamples];
	ls_regs_from_ucontext(ucv, &s->regs);
	/* the [vdso] (clock_gettime) is not in the file-backed module map: skip */
	if (!ls_find(&map, s->regs.regs[SP_DW_RIP]) || s->regs.regs[SP_DW_RSP] >= stack_top)
		return;
	s->mem.base = s->regs.regs[SP_DW_RSP];
	s->mem.data = s->stack;
	s->mem.len = ls_copy_stack(s->stack, s->mem.base, stack_top, COPY_CAP);
	nsamples++;
}

/* The leaves: a plain loop, or the C library's qsort calling back into us. */
static NOINL unsigned long spin(unsigned long x)
{
	for (int i = 0; i < 200000; i++) {
		x = x * 6364136223846793005UL + 1442695040888963407UL;
		__asm__ volatile("" : "+r"(x));
	}
	return x;
}

static int cmp_mixed(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

	for (int i = 0; i < 64; i++) {
		x = x * 2654435761u + 1;
		y = y * 2654435761u + 1;
		__asm__ volatile("" : "+r"(x), "+r"(y));
	}
	return (x > y) - (x < y);
}

static NOINL unsigned long sort_some(unsigned long seed)
{
	static unsigned items[2048];

	for (size_t i = 0; i < SP_ARRAY_SIZE(items); i++)
		items[i] = (unsigned)(seed = seed * 1103515245u + 12345u) >> 4;
	qsort(items, SP_ARRAY_SIZE(items), sizeof(items[0]), cmp_mixed);
	return items[7];
}

static volatile int vla_bytes = 40;

/* Two kinds of frames, alternating: small rsp-based ones and rbp-based ones (a VLA). */
static NOINL unsigned long descend_vla(int depth, int leaf, unsigned long x);

static NOINL unsigned long descend(int depth, int leaf, unsigned long x)
{
	unsigned long r;

	if (depth <= 0)
		r = leaf ? sort_some(x) : spin(x);
	else if (depth % 3 == 0)
		r = descend_vla(depth - 1, leaf, x + 1);
	else
		r = descend(depth - 1, leaf, x + 1);
	BARRIER();
	return r + (unsigned)depth;
}

static NOINL unsigned long descend_vla(int depth, int leaf, unsigned long x)
{
	volatile char pad[vla_bytes];
	unsigned long r;

	pad[0] = (char)x;
	r = descend(depth, leaf, x);
	__asm__ volatile("" : : "r"(pad) : "memory");
	return r ^ (unsigned char)pad[0];
}

static unsigned long sink;

/* One descent for sample k: its depth and leaf cycle through the kinds. */
static void descend_once(int k)
{
	static const int depths[] = {0, 3, 8, 14, 20, 26, 33, 45, 58};

	sink += descend(depths[k % SP_ARRAY_SIZE(depths)], k % 4 == 3, sink);
	__asm__ volatile("" : : "r"(sink));
}

static int capture_samples(void)
{
	volatile int here;

	samples = calloc(NSAMPLES, sizeof(*samples));
	if (!samples)
		return -1;
	stack_top = ls_mapping_end((uintptr_t)&here);
	if (ls_profile(on_prof, 997, &nsamples, NSAMPLES, 30, descend_once))
		return -1;
	return nsamples;
}

/* ---- timing -------------------------------------------------------------- */

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The best of n trials: on a shared machine, the one least disturbed by other work. */
static double best(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[0];
}

/* ---- stackpulse ---------------------------------------------------------- */

static size_t sp_frames[NSAMPLES];
static uint64_t sp_pcs[NSAMPLES][MAXF];
static unsigned sp_stops[NSAMPLES];

static size_t sp_pass(int first, int last, int keep)
{
	size_t total = 0;

	for (int i = first; i < last; i++) {
		uint64_t pcs[MAXF];
		size_t n;
		unsigned stop;

		sp_unwind(&samples[i].regs, &samples[i].mem, ls_find, &map, pcs, MAXF, &n, &stop,
			  NULL);
		total += n;
		if (keep) {
			sp_frames[i] = n;
			sp_stops[i] = stop;
			memcpy(sp_pcs[i], pcs, n * sizeof(pcs[0]));
		}
	}
	return total;
}

/* ---- libunwind remote ---------------------------------------------------- */

/* Per module file: where its .eh_frame_hdr search table is (svma), from PT_GNU_EH_FRAME. */
struct hdr_info {
	const struct ls_file *file;
	uint64_t hdr_svma;
	uint64_t fde_count;
	bool ok;
};
static struct hdr_info hdrs[SP_ARRAY_SIZE(((struct ls_map *)0)->files)];

/* Bytes of a module file at svma, when a PT_LOAD segment holds them in the file. */
static const uint8_t *file_bytes(const struct ls_file *f, uint64_t svma, size_t len)
{
	size_t size;
	const uint8_t *raw = (const uint8_t *)elf_rawfile(f->elf, &size);

	if (!raw)
		return NULL;
	for (size_t i = 0; i < f->info.nsegs; i++) {
		const struct sp_load_segment *sg = &f->info.segs[i];

		if (svma >= sg->vaddr && svma - sg->vaddr < sg->filesz &&
		    sg->filesz - (svma - sg->vaddr) >= len) {
			uint64_t off = sg->offset + (svma - sg->vaddr);

			return off <= size && size - off >= len ? raw + off : NULL;
		}
	}
	return NULL;
}

static struct hdr_info *hdr_of(const struct ls_file *f)
{
	struct hdr_info *h = &hdrs[f - map.files];
	size_t nph;

	if (h->file == f)
		return h->ok ? h : NULL;
	h->file = f;
	h->ok = false;
	if (elf_getphdrnum(f->elf, &nph))
		return NULL;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		const uint8_t *p;
		uint32_t count;

		if (!gelf_getphdr(f->elf, (int)i, &ph) || ph.p_type != PT_GNU_EH_FRAME)
			continue;
		/*
		 * version 1; eh_frame_ptr pcrel|sdata4; fde_count udata4; table
		 * datarel|sdata4: the layout every linker here writes.
		 */
		p = file_bytes(f, ph.p_vaddr, 12);
		if (!p || p[0] != 1 || p[2] != 0x03 || p[3] != 0x3b)
			return NULL;
		memcpy(&count, p + 8, 4);
		h->hdr_svma = ph.p_vaddr;
		h->fde_count = count;
		h->ok = true;
		return h;
	}
	return NULL;
}

static int acc_find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi,
			      int need_unwind_info, void *arg)
{
	const struct ls_module *mod = ls_map_module(&map, ip);
	struct hdr_info *h;
	unw_dyn_info_t di;

	if (!mod || !(h = hdr_of(mod->file)))
		return -UNW_ENOINFO;
	memset(&di, 0, sizeof(di));
	di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
	di.start_ip = mod->um.start;
	di.end_ip = mod->um.end;
	di.u.rti.segbase = h->hdr_svma + mod->um.load_bias;
	di.u.rti.table_data = di.u.rti.segbase + 12;
	di.u.rti.table_len = h->fde_count * 8 / sizeof(unw_word_t);
	return _Ux86_64_dwarf_search_unwind_table(as, ip, &di, pi, need_unwind_info, arg);
}

static void acc_put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi, void *arg)
{
	(void)as, (void)pi, (void)arg; /* libunwind frees what its table search allocated */
}

static int acc_get_dyn_info_list_addr(unw_addr_space_t as, unw_word_t *addr, void *arg)
{
	(void)as, (void)addr, (void)arg;
	return -UNW_ENOINFO;
}

/*
 * Every loaded file's image range (all its PT_LOAD segments, not only the
 * executable mapping the unwinder's module map holds: .eh_frame_hdr and
 * .eh_frame sit in a read-only segment), for reading module bytes.
 */
struct image {
	uint64_t lo, hi, bias;
	const struct ls_file *file;
};
static struct image images[SP_ARRAY_SIZE(((struct ls_map *)0)->mods)];
static size_t nimages;
static const struct image *last_image;

static void images_init(void)
{
	for (size_t i = 0; i < map.nmods; i++) {
		const struct ls_module *m = &map.mods[i];
		struct image *im = &images[nimages];
		size_t k;

		for (k = 0; k < nimages && images[k].file != m->file; k++)
			;
		if (k < nimages || m->file->info.nsegs == 0)
			continue;
		im->file = m->file;
		im->bias = m->um.load_bias;
		im->lo = UINT64_MAX;
		im->hi = 0;
		for (size_t j = 0; j < m->file->info.nsegs; j++) {
			const struct sp_load_segment *sg = &m->file->info.segs[j];

			im->lo = sg->vaddr + im->bias < im->lo ? sg->vaddr + im->bias : im->lo;
			im->hi = sg->vaddr + sg->memsz + im->bias > im->hi ? sg->vaddr + sg->memsz + im->bias
									    : im->hi;
		}
		nimages++;
	}
}

static const struct image *image_of(uint64_t addr)
{
	if (last_image && addr >= last_image->lo && addr < last_image->hi)
		return last_image;
	for (size_t i = 0; i < nimages; i++)
		if (addr >= images[i].lo && addr < images[i].hi)
			return last_image = &images[i];
	return NULL;
}

/* Stack words from the sample's copy; anything else from the module file it belongs to. */
static int acc_access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *val, int write,
			  void *arg)
{
	const struct sample *s = arg;
	const struct image *im;
	const uint8_t *p;
	uint64_t v;

	(void)as;
	if (write)
		return -UNW_EINVAL;
	if (!sp_stack_read(&s->mem, addr, &v)) {
		*val = v;
		return 0;
	}
	im = image_of(addr);
	if (!im || !(p = file_bytes(im->file, addr - im->bias, 8)))
		return -UNW_EINVAL;
	memcpy(val, p, 8);
	return 0;
}

static int acc_access_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *val, int write,
			  void *arg)
{
	const struct sample *s = arg;

	(void)as;
	if (write)
		return -UNW_EREADONLYREG;
	/* libunwind's x86-64 register numbers are the DWARF ones (rax..r15, rip) */
	if (reg < 0 || reg >= SP_DW_NREGS)
		return -UNW_EBADREG;
	*val = s->regs.regs[reg];
	return 0;
}

static int acc_access_fpreg(unw_addr_space_t as, unw_regnum_t reg, unw_fpreg_t *val, int write,
			    void *arg)
{
	(void)as, (void)reg, (void)val, (void)write, (void)arg;
	return -UNW_EINVAL;
}

static int acc_resume(unw_addr_space_t as, unw_cursor_t *c, void *arg)
{
	(void)as, (void)c, (void)arg;
	return -UNW_EINVAL;
}

static unw_accessors_t accessors = {
	.find_proc_info = acc_find_proc_info,
	.put_unwind_info = acc_put_unwind_info,
	.get_dyn_info_list_addr = acc_get_dyn_info_list_addr,
	.access_mem = acc_access_mem,
	.access_reg = acc_access_reg,
	.access_fpreg = acc_access_fpreg,
	.resume = acc_resume,
};

static size_t unw_frames[NSAMPLES];
static uint64_t unw_ips[NSAMPLES][MAXF];

static unw_addr_space_t unw_space(void)
{
	unw_addr_space_t as = unw_create_addr_space(&accessors, 0);

	if (as)
		unw_set_caching_policy(as, UNW_CACHE_GLOBAL); /* as perf sets it */
	return as;
}

/* perf's loop: read the IP, then step, until the step fails or ends. */
static size_t unw_pass(unw_addr_space_t as, int keep)
{
	size_t total = 0;

	for (int i = 0; i < nsamples; i++) {
		unw_cursor_t c;
		unw_word_t ip;
		size_t n = 0;

		if (unw_init_remote(&c, as, &samples[i]) == 0) {
			do {
				if (unw_get_reg(&c, UNW_REG_IP, &ip) || ip == 0)
					break;
				if (keep)
					unw_ips[i][n] = ip;
				n++;
			} while (n < MAXF && unw_step(&c) > 0);
		}
		if (keep)
			unw_frames[i] = n;
		total += n;
	}
	return total;
}

/* ---- main ---------------------------------------------------------------- */

#define TRIALS 31

int main(int argc, char **argv)
{
	const char *json = NULL;
	double t[TRIALS], start, reset_ns = 0;
	double sp_warm, sp_cold_pass, sp_cold_sample, unw_warm, unw_cold;
	size_t frames = 0, fmin = MAXF, fmax = 0, rooted = 0, agree = 0;
	int c;

	while ((c = getopt(argc, argv, "j:h")) != -1) {
		if (c == 'j')
			json = optarg;
		else {
			fprintf(stderr, "usage: unwind-bench [-j FILE]\n");
			return 2;
		}
	}
	if (ls_map_load(&map) || map.nmods == 0) {
		fprintf(stderr, "unwind-bench: cannot read this process's modules\n");
		return 1;
	}
	images_init();
	if (capture_samples() < NSAMPLES / 2) {
		fprintf(stderr, "unwind-bench: only %d samples captured\n", nsamples);
		return 1;
	}

	/* A first cold pass keeps every sample's frames, for the cross-check below. */
	ls_map_reset_cfi(&map);
	frames = sp_pass(0, nsamples, 1);
	for (int i = 0; i < nsamples; i++) {
		fmin = sp_frames[i] < fmin ? sp_frames[i] : fmin;
		fmax = sp_frames[i] > fmax ? sp_frames[i] : fmax;
		rooted += sp_stops[i] == SP_STOP_ROOT;
	}

	/* stackpulse, cold: fresh rule tables before each pass (the reset is not timed) */
	for (int k = 0; k < TRIALS; k++) {
		double r0 = now_ns();
		ls_map_reset_cfi(&map);
		start = now_ns();
		reset_ns += start - r0;
		sp_pass(0, nsamples, 0);
		t[k] = (now_ns() - start) / (double)frames;
	}
	sp_cold_pass = best(t, TRIALS);
	reset_ns /= TRIALS;

	/* stackpulse, coldest: fresh tables before every sample */
	for (int k = 0; k < TRIALS; k++) {
		double sum = 0;

		for (int i = 0; i < nsamples; i++) {
			ls_map_reset_cfi(&map);
			start = now_ns();
			sp_pass(i, i + 1, 0);
			sum += now_ns() - start;
		}
		t[k] = sum / (double)frames;
	}
	sp_cold_sample = best(t, TRIALS);

	/* stackpulse, warm: tables kept (one pass per trial: short trials dodge preemption) */
	ls_map_reset_cfi(&map);
	sp_pass(0, nsamples, 0);
	for (int k = 0; k < TRIALS; k++) {
		start = now_ns();
		sp_pass(0, nsamples, 0);
		t[k] = (now_ns() - start) / (double)frames;
	}
	sp_warm = best(t, TRIALS);

	/* libunwind remote, cold: a fresh address space (empty caches) per pass */
	for (int k = 0; k < TRIALS; k++) {
		unw_addr_space_t as = unw_space();

		if (!as) {
			fprintf(stderr, "unwind-bench: unw_create_addr_space failed\n");
			return 1;
		}
		start = now_ns();
		size_t n = unw_pass(as, k == 0);
		t[k] = (now_ns() - start) / (double)(n ? n : 1);
		unw_destroy_addr_space(as);
	}
	unw_cold = best(t, TRIALS);

	/* libunwind remote, warm: one address space, caches kept */
	unw_addr_space_t as = unw_space();
	size_t unw_total = unw_pass(as, 0);
	for (int k = 0; k < TRIALS; k++) {
		start = now_ns();
		unw_pass(as, 0);
		t[k] = (now_ns() - start) / (double)unw_total;
	}
	unw_warm = best(t, TRIALS);
	unw_destroy_addr_space(as);

	/*
	 * Same frames?  Ours are lookup addresses (return address - 1 past the
	 * leaf), libunwind's are the return addresses themselves.
	 */
	for (int i = 0; i < nsamples; i++) {
		bool same = sp_frames[i] == unw_frames[i];

		for (size_t k = 0; same && k < sp_frames[i]; k++)
			same = sp_pcs[i][k] + (k ? 1 : 0) == unw_ips[i][k];
		agree += same;
	}

	printf("unwind-bench: %d samples of this process (ITIMER_PROF, all registers, "
	       "stack copies up to %d bytes), best of %d trials\n",
	       nsamples, COPY_CAP, TRIALS);
	printf("  %zu frames, %zu to %zu per sample (mean %.1f); %zu of %d unwound to the root\n",
	       frames, fmin, fmax, (double)frames / nsamples, rooted, nsamples);
	printf("  %-58s %8.1f ns/frame\n", "stackpulse, warm rule tables", sp_warm);
	printf("  %-58s %8.1f ns/frame\n", "stackpulse, cold (fresh tables per pass of all samples)",
	       sp_cold_pass);
	printf("  %-58s %8.1f ns/frame\n", "stackpulse, cold (fresh tables per sample)",
	       sp_cold_sample);
	printf("  %-58s %8.1f ns/frame\n", "libunwind remote (perf's way), warm caches", unw_warm);
	printf("  %-58s %8.1f ns/frame\n", "libunwind remote, cold (fresh address space per pass)",
	       unw_cold);
	printf("  warm speed-up over libunwind remote: %.0fx; creating the tables: %.0f us\n",
	       unw_warm / sp_warm, reset_ns / 1e3);
	printf("  libunwind found the same frames on %zu of %d samples\n", agree, nsamples);
	if (json) {
		FILE *f = fopen(json, "w");

		if (!f) {
			perror(json);
			return 1;
		}
		fprintf(f,
			"{\"samples\": %d, \"frames\": %zu, \"frames_min\": %zu, \"frames_max\": %zu, "
			"\"rooted\": %zu, \"stack_copy_bytes\": %d,\n"
			" \"ns_per_frame\": {\"stackpulse_warm\": %.2f, \"stackpulse_cold_per_pass\": %.2f, "
			"\"stackpulse_cold_per_sample\": %.2f, \"libunwind_remote_warm\": %.2f, "
			"\"libunwind_remote_cold\": %.2f},\n"
			" \"table_creation_us\": %.1f, \"libunwind_same_frames\": %zu}\n",
			nsamples, frames, fmin, fmax, rooted, COPY_CAP, sp_warm, sp_cold_pass,
			sp_cold_sample, unw_warm, unw_cold, reset_ns / 1e3, agree);
		fclose(f);
	}
	ls_map_free(&map);
	free(samples);
	return 0;
}
