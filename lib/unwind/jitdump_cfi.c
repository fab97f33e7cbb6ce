/* SPDX-License-Identifier: MIT */
/* Call-frame information of JIT functions, from the unwinding-info records of a live process's jitdump. */
#include "unwind/unwind.h"
#include "formats/formats.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * A runtime that writes a jitdump with unwinding information (node
 * --perf-prof --perf-prof-unwinding-info, CPython 3.13 -X perf_jit) gives
 * each function it compiles an .eh_frame in a JIT_CODE_UNWINDING_INFO record
 * just before the function's JIT_CODE_LOAD.  Its FDEs use pc-relative
 * addresses as if the .eh_frame lay right after the code, at code_addr +
 * ALIGN_8(code_size) (where V8 puts it in memory, and where perf's genelf
 * puts it in the ELF file perf inject writes).  Each distinct .eh_frame is
 * wrapped here in a small in-memory ELF file whose code starts at CODE_BASE,
 * and compiled by the same CFI tables as a module's; functions whose
 * .eh_frame bytes and aligned size are equal (CPython's trampolines, all
 * copies of one) share a table.
 *
 * The file is read as it grows: on a lookup that no function covers, and
 * every RECHECK lookups (a later load may replace code at an address),
 * spaced so that reading takes at most a tenth of the recorder.
 */

#define CODE_BASE 0x10000ull     /* svma of every function's first byte in its table */
/*
 * A hostile process writes its own jitdump: what it can make us keep is
 * bounded to about 20 MiB (a table is some 8 KiB with its image; V8's and
 * CPython's .eh_frames are under 200 bytes).
 */
#define TABLES_MAX 2048          /* distinct .eh_frames kept per process */
#define EH_FRAME_MAX 4096        /* larger ones are not compiled */
#define FUNCTIONS_MAX (1u << 20) /* code loads kept per process (24 bytes each) */
#define RECHECK 1024
#define READ_BUDGET 512          /* records read per refresh, the rest on the next */

struct jd_fn {
	uint64_t start, end;
	uint32_t seq;   /* file order: a later load over the same code wins */
	int32_t table;  /* index into tables, -1: no unwinding information */
};

struct jd_table {
	uint64_t aligned_size; /* ALIGN_8(code_size): where the .eh_frame lies after the code */
	uint8_t *image;        /* the ELF file elf reads */
	size_t eh_off, eh_len;
	Elf *elf;
	struct sp_cfi_table *cfi;
};

struct sp_jitdump_cfi {
	int fd;
	struct sp_jitdump_reader rd;
	struct jd_fn *fns;
	size_t nfns, fns_cap, sorted; /* fns[0, sorted) is sorted and free of overlaps */
	uint32_t seq;
	uint8_t *pend;                /* the last unwinding record's .eh_frame, for the next load */
	size_t pend_len, pend_cap;
	bool has_pend;
	struct jd_table *tables;
	size_t ntables, tables_cap;
	struct sp_map table_index;    /* hash of .eh_frame and size -> index into tables */
	uint32_t since;
	struct sp_pace pace;
	struct sp_jitdump_cfi_stats stats;
};

int sp_jitdump_cfi_open(const char *path, int64_t owner, uint64_t not_before_us,
			struct sp_jitdump_cfi **out)
{
	unsigned verdict;
	int fd;
	int err = sp_perf_map_open(path, owner, not_before_us, &verdict, &fd);
	if (err)
		return err;
	if (fd < 0)
		return verdict == SP_PERF_MAP_MISSING ? -ENOENT : -EPERM;
	struct sp_jitdump_cfi *c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return -ENOMEM;
	}
	c->fd = fd;
	sp_jitdump_reader_init(&c->rd, fd, 0);
	sp_map_init(&c->table_index);
	*out = c;
	return 0;
}

void sp_jitdump_cfi_free(struct sp_jitdump_cfi *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->ntables; i++) {
		sp_cfi_table_free(c->tables[i].cfi);
		if (c->tables[i].elf)
			elf_end(c->tables[i].elf);
		free(c->tables[i].image);
	}
	sp_jitdump_reader_release(&c->rd);
	close(c->fd);
	sp_map_release(&c->table_index);
	free(c->tables);
	free(c->fns);
	free(c->pend);
	free(c);
}

const struct sp_jitdump_cfi_stats *sp_jitdump_cfi_stats(const struct sp_jitdump_cfi *c)
{
	return &c->stats;
}

/*
 * A minimal ELF file holding eh[0, len) as .eh_frame at CODE_BASE +
 * aligned_size: the ELF header, the section's bytes, the section names, and
 * three section headers (null, .eh_frame, .shstrtab).
 */
static int build_table(struct jd_table *t, const uint8_t *eh, size_t len, uint64_t aligned_size)
{
	static const char names[] = "\0.eh_frame\0.shstrtab";
	size_t eh_off = sizeof(Elf64_Ehdr), str_off = eh_off + len;
	size_t sh_off = (str_off + sizeof(names) + 7) & ~(size_t)7;
	size_t total = sh_off + 3 * sizeof(Elf64_Shdr);
	uint8_t *img = calloc(1, total);
	if (!img)
		return -ENOMEM;
	Elf64_Ehdr *h = (Elf64_Ehdr *)img;
	memcpy(h->e_ident, ELFMAG, SELFMAG);
	h->e_ident[EI_CLASS] = ELFCLASS64;
	h->e_ident[EI_DATA] = ELFDATA2LSB;
	h->e_ident[EI_VERSION] = EV_CURRENT;
	h->e_type = ET_DYN;
	h->e_machine = EM_X86_64;
	h->e_version = EV_CURRENT;
	h->e_shoff = sh_off;
	h->e_ehsize = sizeof(Elf64_Ehdr);
	h->e_shentsize = sizeof(Elf64_Shdr);
	h->e_shnum = 3;
	h->e_shstrndx = 2;
	memcpy(img + eh_off, eh, len);
	memcpy(img + str_off, names, sizeof(names));
	Elf64_Shdr *sh = (Elf64_Shdr *)(img + sh_off);
	sh[1] = (Elf64_Shdr){
		.sh_name = 1, .sh_type = SHT_PROGBITS, .sh_flags = SHF_ALLOC,
		.sh_addr = CODE_BASE + aligned_size, .sh_offset = eh_off, .sh_size = len,
		.sh_addralign = 8,
	};
	sh[2] = (Elf64_Shdr){
		.sh_name = 11, .sh_type = SHT_STRTAB, .sh_offset = str_off, .sh_size = sizeof(names),
		.sh_addralign = 1,
	};
	sp_elf_init();
	Elf *elf = elf_memory((char *)img, total);
	struct sp_cfi_table *cfi = NULL;
	if (!elf || sp_cfi_table_new(elf, NULL, NULL, &cfi)) {
		if (elf)
			elf_end(elf);
		free(img);
		return -SP_E_NO_CFI;
	}
	*t = (struct jd_table){
		.aligned_size = aligned_size, .image = img, .eh_off = eh_off, .eh_len = len,
		.elf = elf, .cfi = cfi,
	};
	return 0;
}

static uint64_t hash_bytes(const uint8_t *p, size_t n, uint64_t seed)
{
	uint64_t h = 0xcbf29ce484222325ull ^ seed;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return sp_hash64(h);
}

/* The table for the pending .eh_frame and a function of code_size bytes; -1 when none. */
static int32_t table_for(struct sp_jitdump_cfi *c, uint64_t code_size)
{
	if (!c->has_pend || c->pend_len < 8 || c->pend_len > EH_FRAME_MAX)
		return -1;
	uint64_t aligned = (code_size + 7) & ~7ull;
	uint64_t key = hash_bytes(c->pend, c->pend_len, aligned);
	uint32_t idx;
	if (sp_map_get(&c->table_index, key, &idx)) {
		const struct jd_table *t = &c->tables[idx];
		if (t->aligned_size == aligned && t->eh_len == c->pend_len &&
		    !memcmp(t->image + t->eh_off, c->pend, c->pend_len))
			return (int32_t)idx;
	}
	if (c->ntables >= TABLES_MAX) {
		c->stats.tables_limited = true;
		return -1;
	}
	if (sp_array_reserve((void **)&c->tables, &c->tables_cap, c->ntables + 1,
			     sizeof(*c->tables)))
		return -1;
	if (build_table(&c->tables[c->ntables], c->pend, c->pend_len, aligned)) {
		c->stats.bad_unwinding_info++;
		return -1;
	}
	/* A colliding key keeps its first table; this one is found through its functions. */
	if (!sp_map_get(&c->table_index, key, &idx))
		(void)sp_map_put(&c->table_index, key, (uint32_t)c->ntables);
	c->stats.tables++;
	return (int32_t)c->ntables++;
}

static int by_start_then_seq(const void *a, const void *b)
{
	const struct jd_fn *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Sort the functions and drop those a later load overlaps. */
static void settle(struct sp_jitdump_cfi *c)
{
	if (c->sorted == c->nfns)
		return;
	qsort(c->fns, c->nfns, sizeof(*c->fns), by_start_then_seq);
	size_t k = 0;
	for (size_t i = 0; i < c->nfns; i++) {
		struct jd_fn f = c->fns[i];
		/* The newer of two overlapping functions stands; the older one's code is gone. */
		while (k && c->fns[k - 1].end > f.start) {
			if (c->fns[k - 1].seq > f.seq)
				break;
			k--;
		}
		if (k && c->fns[k - 1].end > f.start)
			continue;
		c->fns[k++] = f;
	}
	c->nfns = c->sorted = k;
}

/* Read what the runtime appended since the last call, READ_BUDGET records at most. */
static void refresh(struct sp_jitdump_cfi *c)
{
	struct sp_jitdump_rec rec;
	c->since = 0;
	uint64_t start;
	if (!sp_pace_begin(&c->pace, &start))
		return;
	for (unsigned i = 0; i < READ_BUDGET && sp_jitdump_reader_next(&c->rd, &rec) == 1; i++) {
		struct sp_jitdump_unwind u;
		struct sp_jitdump_load ld;
		if (rec.id == SP_JIT_CODE_UNWINDING_INFO) {
			c->has_pend = sp_jitdump_unwinding(&rec, &u) && u.eh_frame_len <= EH_FRAME_MAX &&
				      !sp_array_reserve((void **)&c->pend, &c->pend_cap,
							u.eh_frame_len ? u.eh_frame_len : 1, 1);
			if (c->has_pend) {
				memcpy(c->pend, u.eh_frame, u.eh_frame_len);
				c->pend_len = u.eh_frame_len;
			}
			continue;
		}
		if (rec.id != SP_JIT_CODE_LOAD)
			continue;
		bool ok = sp_jitdump_code_load(&rec, &ld) && ld.code_size;
		int32_t table = ok ? table_for(c, ld.code_size) : -1;
		c->has_pend = false;
		if (!ok || c->nfns >= FUNCTIONS_MAX ||
		    sp_array_reserve((void **)&c->fns, &c->fns_cap, c->nfns + 1, sizeof(*c->fns)))
			continue;
		c->fns[c->nfns++] = (struct jd_fn){
			.start = ld.code_addr, .end = ld.code_addr + ld.code_size,
			.seq = c->seq++, .table = table,
		};
		c->stats.functions++;
		c->stats.with_cfi += table >= 0;
	}
	settle(c);
	sp_pace_end(&c->pace, start);
}

static const struct jd_fn *find_fn(const struct sp_jitdump_cfi *c, uint64_t at)
{
	size_t lo = sp_partition_point(c->nfns, i, c->fns[i].start <= at);
	return lo && at < c->fns[lo - 1].end ? &c->fns[lo - 1] : NULL;
}

const struct sp_cfi_row *sp_jitdump_cfi_row(struct sp_jitdump_cfi *c, uint64_t pc,
					    bool after_call, struct sp_cfi_row *out)
{
	uint64_t at = after_call ? pc - 1 : pc;
	const struct jd_fn *f = find_fn(c, at);
	if (!f || ++c->since >= RECHECK) {
		refresh(c);
		f = find_fn(c, at);
	}
	if (!f || f->table < 0)
		return NULL;
	bool hit;
	const struct jd_table *t = &c->tables[f->table];
	const struct sp_cfi_row *row = sp_cfi_table_lookup(t->cfi, CODE_BASE + (at - f->start), &hit);
	/* An expression needs its table to evaluate: the caller has none for this code. */
	if (!row || row->kind == SP_CFI_CFA_EXPR || row->kind == SP_CFI_NONE)
		return NULL;
	*out = *row;
	c->stats.rows++;
	return out;
}
