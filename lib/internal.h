/* SPDX-License-Identifier: MIT */
/* Private interfaces shared by lib/ files and the unit tests (not installed). */
#ifndef SP_INTERNAL_H
#define SP_INTERNAL_H

#include "stackpulse.h"

#include <gelf.h>
#include <libelf.h>

#define SP_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ---- growable byte buffer (lib/buf.c) ---------------------------------- */

struct sp_buf {
	uint8_t *data;
	size_t len, cap;
};

void sp_buf_init(struct sp_buf *b);
void sp_buf_release(struct sp_buf *b);
/* Make room for n more bytes; -ENOMEM on failure. */
int sp_buf_reserve(struct sp_buf *b, size_t n);
int sp_buf_append(struct sp_buf *b, const void *p, size_t n);
/* LEB128 unsigned varint; zigzag for signed. */
int sp_buf_put_uvarint(struct sp_buf *b, uint64_t v);
int sp_buf_put_svarint(struct sp_buf *b, int64_t v);
/* Length-prefixed (uvarint) string. */
int sp_buf_put_str(struct sp_buf *b, const char *s);
/* write(2) all n bytes of p to fd, again after EINTR: 0, -errno, or -EIO when it writes nothing. */
int sp_write_all(int fd, const void *p, size_t n);

/*
 * Make *p, an array of *cap elements of elem bytes, hold at least need:
 * realloc'd to the next power-of-two capacity (64 at least), *cap updated.
 * 0, or -ENOMEM (also when the size would overflow); *p is kept on failure.
 */
int sp_array_reserve(void **p, size_t *cap, size_t need, size_t elem);

/*
 * Bounded readers over untrusted bytes.  Each returns 0 and advances *p, or
 * -SP_E_SPOOL_CORRUPT when the value runs past end or overflows 64 bits.
 */
int sp_get_uvarint_long(const uint8_t **p, const uint8_t *end, uint64_t *v);
/* Most varints of a spool fit one byte: that case inline, the rest out of line. */
static inline int sp_get_uvarint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	if (*p < end && **p < 0x80) {
		*v = *(*p)++;
		return 0;
	}
	return sp_get_uvarint_long(p, end, v);
}
static inline int sp_get_svarint(const uint8_t **p, const uint8_t *end, int64_t *v)
{
	uint64_t u;
	int err = sp_get_uvarint(p, end, &u);
	if (!err)
		*v = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
	return err;
}

/* ---- open-addressing hash map, u64 key -> u32 value (lib/hashmap.c) ---- */

struct sp_map {
	uint64_t *keys;
	uint32_t *vals;
	uint8_t *used;
	size_t cap, len;
};

void sp_map_init(struct sp_map *m);
void sp_map_release(struct sp_map *m);
/* Returns 1 and *val when present, 0 when absent. */
int sp_map_get(const struct sp_map *m, uint64_t key, uint32_t *val);
/* Insert or replace; 0 or -ENOMEM. */
int sp_map_put(struct sp_map *m, uint64_t key, uint32_t val);
/* 64-bit mixer used to combine keys (e.g. (parent, frame) pairs). */
static inline uint64_t sp_hash64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

/* ---- ELF helpers (lib/elf_util.c) -------------------------------------- */

struct sp_load_segment {
	uint64_t vaddr, memsz, offset, filesz;
	bool exec;
};

/* Facts read once from a module file. */
struct sp_elf_info {
	uint16_t e_type; /* ET_EXEC / ET_DYN */
	uint8_t build_id_len;
	uint8_t build_id[SP_BUILD_ID_MAX];
	size_t nsegs;
	struct sp_load_segment *segs; /* PT_LOAD, owned */
};

/* Ensure libelf's version handshake was done (idempotent). */
void sp_elf_init(void);
/* Fill info from an open Elf.  -SP_E_ELF_MALFORMED on bad headers. */
int sp_elf_info_read(Elf *elf, struct sp_elf_info *info);
void sp_elf_info_release(struct sp_elf_info *info);
/*
 * The load bias (avma - svma) of a mapping that starts at avma `start` and
 * maps file offset `file_offset`: from the PT_LOAD segment containing that
 * offset (DESIGN decision 7).  -ENOENT when no segment contains it.
 */
int sp_elf_load_bias(const struct sp_elf_info *info, uint64_t start, uint64_t file_offset,
		     uint64_t *bias);
/* Find the NT_GNU_BUILD_ID note; returns its length (0 when absent). */
size_t sp_elf_build_id(Elf *elf, uint8_t *out, size_t cap);

/* ---- CFI rule tables and the unwinder (lib/cfi.c, lib/unwind.c) -------- */

/* DWARF register numbers on x86-64. */
enum {
	SP_DW_RAX = 0, SP_DW_RDX, SP_DW_RCX, SP_DW_RBX, SP_DW_RSI, SP_DW_RDI,
	SP_DW_RBP, SP_DW_RSP, SP_DW_R8, SP_DW_R9, SP_DW_R10, SP_DW_R11,
	SP_DW_R12, SP_DW_R13, SP_DW_R14, SP_DW_R15, SP_DW_RIP,
	SP_DW_NREGS
};

/* A register file in DWARF numbering; bit n of valid says regs[n] is known. */
struct sp_regs {
	uint64_t regs[SP_DW_NREGS];
	uint32_t valid;
};

/* The bytes the kernel copied: [base, base + len) of the target's stack. */
struct sp_stack_mem {
	uint64_t base; /* the sampled SP */
	const uint8_t *data;
	size_t len;    /* dyn_size, never the requested size */
};

/* Compiled CFI of one module file, shared by every process that maps it. */
struct sp_cfi_table;

/*
 * Build a lazily compiled rule table over elf's .eh_frame (and .debug_frame
 * when present).  The table keeps elf borrowed: elf must outlive it.
 * Returns -SP_E_NO_CFI when the file has no CFI at all.
 */
int sp_cfi_table_new(Elf *elf, struct sp_cfi_table **out);
void sp_cfi_table_free(struct sp_cfi_table *t);

/*
 * One compiled CFI row (lib/cfi.c): how to recover the caller's registers at
 * every svma in [start, start + len) (DWARF 5 §6.4.1).  kind says how the CFA
 * is found; the return address and the callee-saved registers (SysV x86-64
 * ABI §3.2.1: rbp rbx r12-r15, in that order in saved/saved_off) are at
 * CFA-relative slots.
 */
enum sp_cfi_kind {
	SP_CFI_CFA_REG,  /* CFA = regs[cfa_reg] + cfa_off (rsp+k, rbp+k, ...) */
	SP_CFI_CFA_EXPR, /* CFA = DWARF expression, expr_len ops at pool index expr */
	SP_CFI_ROOT,     /* return address undefined: outermost frame */
	SP_CFI_UCONTEXT, /* signal frame: all registers in the sigcontext gregs at regs[cfa_reg] + cfa_off */
	SP_CFI_BAD,      /* a rule the compiler does not represent */
	SP_CFI_NONE,     /* no FDE covers the range (kept so libdw is asked once) */
};
enum sp_cfi_saved_rule { SP_CFI_SAME, SP_CFI_UNDEF, SP_CFI_AT_CFA, SP_CFI_VAL_CFA };
#define SP_CFI_NSAVED 6
#define SP_CFI_F_SIGNAL 1u /* the FDE's 'S' augmentation */

struct sp_cfi_row {
	uint64_t start;
	uint32_t len;
	uint8_t kind, flags; /* enum sp_cfi_kind, SP_CFI_F_* */
	uint8_t cfa_reg, expr_len;
	union {
		int32_t cfa_off;
		uint32_t expr;
	};
	int32_t ra_off;      /* return address saved at CFA + ra_off */
	uint16_t saved;      /* 2 bits (enum sp_cfi_saved_rule) per saved register */
	int16_t saved_off[SP_CFI_NSAVED];
};

/*
 * The row covering svma, compiled from libdw on first use; NULL when no CFI
 * covers it (or memory ran out).  *hit: the direct-mapped cache answered.
 * The row is valid until the next lookup in t.  A table mutates on lookup:
 * use it from one thread at a time.
 */
const struct sp_cfi_row *sp_cfi_table_lookup(struct sp_cfi_table *t, uint64_t svma, bool *hit);
/* The CFA of a SP_CFI_CFA_EXPR row: 0, or SP_STOP_BAD_RULE / SP_STOP_STACK_EXHAUSTED. */
unsigned sp_cfi_eval_cfa(const struct sp_cfi_table *t, const struct sp_cfi_row *row,
			 const struct sp_regs *regs, const struct sp_stack_mem *stack, uint64_t *cfa);

/*
 * Read 8 bytes at addr from the stack copy: 0, SP_STOP_STACK_EXHAUSTED when
 * they reach past the copy, SP_STOP_BAD_RULE when addr is below the sampled SP.
 */
static inline unsigned sp_stack_read(const struct sp_stack_mem *s, uint64_t addr, uint64_t *v)
{
	if (addr < s->base)
		return SP_STOP_BAD_RULE;
	if (addr - s->base > s->len || s->len - (addr - s->base) < 8)
		return SP_STOP_STACK_EXHAUSTED;
	__builtin_memcpy(v, s->data + (addr - s->base), 8);
	return 0;
}

struct sp_unwind_module;
/*
 * A row for pc in module m proven from its code bytes (DESIGN decision 4),
 * for modules without CFI: out filled and returned, or NULL when nothing is
 * proven.  ctx is the find callback's; after_call: pc is a return address.
 */
typedef const struct sp_cfi_row *(*sp_code_row_fn)(void *ctx, const struct sp_unwind_module *m,
						    uint64_t pc, bool after_call,
						    struct sp_cfi_row *out);

/* What the unwinder needs to know about the module containing a pc. */
struct sp_unwind_module {
	uint64_t start, end;   /* runtime range */
	uint64_t load_bias;    /* svma = avma - load_bias */
	struct sp_cfi_table *cfi; /* NULL: no unwind information */
	sp_code_row_fn code_row;  /* NULL: nothing is proven from the code */
};

/* Module lookup for an absolute address; NULL when unmapped. */
typedef const struct sp_unwind_module *(*sp_find_module_fn)(void *ctx, uint64_t pc);

/* Counters sp_unwind adds to (the caller zeroes them). */
struct sp_unwind_stats {
	uint64_t frames;
	uint64_t code_frames; /* frames stepped with rows proven from code bytes */
	uint64_t rule_cache_hits, rule_cache_misses;
};

/*
 * Unwind one sample with DWARF CFI from the user registers and the copied
 * stack.  Writes at most max lookup addresses to pcs, leaf first: pcs[0] is
 * the sampled IP, later entries are return address - 1, except a frame right
 * after a signal frame, which is the interrupted IP itself, and the signal
 * frame's own entry, which is its return address (__restore_rt).  Reads only
 * stack->data.  Sets *n and *stop (enum sp_stop_reason).  Returns 0.
 */
int sp_unwind(const struct sp_regs *regs, const struct sp_stack_mem *stack,
	      sp_find_module_fn find, void *ctx, uint64_t *pcs, size_t max,
	      size_t *n, unsigned *stop, struct sp_unwind_stats *stats);

/*
 * Frames proven from code bytes (lib/codeframe.c, DESIGN decision 4).
 * code[0, len) is a function's machine code from its entry; pc_off is the pc's
 * offset in it (after_call: a return address, which must follow a call).
 * Fills row (SP_CFI_CFA_REG, ra at CFA-8) from the straight-line instructions
 * before the pc and returns SP_CODEFRAME_OK, or says why nothing is proven.
 */
enum sp_codeframe_result {
	SP_CODEFRAME_OK = 0,
	SP_CODEFRAME_SHORT,      /* pc_off lies past the bytes given */
	SP_CODEFRAME_UNKNOWN,    /* an instruction the decoder does not know */
	SP_CODEFRAME_STOPPED,    /* a branch, return or untracked rsp write before the pc */
	SP_CODEFRAME_MISALIGNED, /* the pc falls inside an instruction */
	SP_CODEFRAME_NOT_CALL,   /* a return address not preceded by a call */
};
int sp_codeframe_row(const uint8_t *code, size_t len, size_t pc_off, bool after_call,
		     struct sp_cfi_row *row);
/*
 * Length of a function that runs straight from code[0] to a return with the
 * stack balanced (the CPython perf trampoline: 11 bytes); 0 when code is not
 * such a function.
 */
size_t sp_codeframe_return_end(const uint8_t *code, size_t len);

/* Convert a perf sample's user register array (sample_regs_user order) to DWARF numbering. */
void sp_regs_from_perf(const uint64_t *perf_regs, uint64_t mask, struct sp_regs *out);
/* The sample_regs_user mask the recorder asks for. */
uint64_t sp_perf_regs_mask(void);

/* ---- perf record decoding (lib/perf_record.c) -------------------------- */

/* What the records of our events carry, from perf_event_attr. */
struct sp_perf_layout {
	uint64_t sample_type;      /* PERF_SAMPLE_* bits */
	uint64_t sample_regs_user; /* register mask */
	unsigned nregs;            /* popcount(sample_regs_user) */
	bool sample_id_all;
};

void sp_perf_layout_init(struct sp_perf_layout *l, uint64_t sample_type, uint64_t regs_mask,
			 bool sample_id_all);

/* A decoded PERF_RECORD_SAMPLE.  Pointers borrow the record's bytes. */
struct sp_perf_sample {
	uint64_t ip;
	uint32_t pid, tid;
	uint64_t time;
	uint32_t cpu;
	uint64_t nr_callchain;
	const uint64_t *callchain; /* nr_callchain entries, may be unaligned-safe copy */
	uint64_t regs_abi;         /* PERF_SAMPLE_REGS_ABI_*; 0 = no user regs */
	const uint64_t *regs;      /* nregs values in mask bit order */
	uint64_t stack_size;       /* bytes reserved in the record */
	const uint8_t *stack;
	uint64_t dyn_size;         /* bytes the kernel actually copied (<= stack_size) */
	bool has_tid, has_time;
};

/* Side-band records: the trailing sample_id (pid, tid, time) when sample_id_all. */
struct sp_perf_sample_id {
	uint32_t pid, tid;
	uint64_t time;
	bool has_time;
};

struct sp_perf_mmap2 {
	uint32_t pid, tid;
	uint64_t addr, len, pgoff;
	uint32_t maj, min;
	uint64_t ino, ino_generation;
	uint32_t prot, flags;
	const char *filename; /* NUL-terminated inside the record (checked) */
};

struct sp_perf_comm {
	uint32_t pid, tid;
	const char *comm;
	bool exec; /* PERF_RECORD_MISC_COMM_EXEC */
};

struct sp_perf_task { /* FORK and EXIT */
	uint32_t pid, ppid, tid, ptid;
	uint64_t time;
};

struct sp_perf_lost {
	uint64_t id, lost;
};

/*
 * Decoders over one record's bytes (header included, len = header.size).
 * All sizes and counts are validated against len first: a malformed record
 * returns -SP_E_RING_CORRUPT and nothing is read out of bounds.  The record
 * must be 8-byte aligned (the ring copy guarantees it).
 */
int sp_perf_parse_sample(const struct sp_perf_layout *l, const void *rec, size_t len,
			 struct sp_perf_sample *out);
int sp_perf_parse_sample_id(const struct sp_perf_layout *l, const void *rec, size_t len,
			    struct sp_perf_sample_id *out);
int sp_perf_parse_mmap2(const void *rec, size_t len, struct sp_perf_mmap2 *out);
int sp_perf_parse_comm(const void *rec, size_t len, struct sp_perf_comm *out);
int sp_perf_parse_task(const void *rec, size_t len, struct sp_perf_task *out);
int sp_perf_parse_lost(const void *rec, size_t len, struct sp_perf_lost *out);
/* Timestamp of any record: the sample's time or the sample_id trailer's.  0 or error. */
int sp_perf_record_time(const struct sp_perf_layout *l, const void *rec, size_t len,
			uint64_t *time);

/* ---- perf events and rings (lib/perf_event.c) -------------------------- */

#include <linux/perf_event.h>

/* One mmap'd ring per CPU; every event on that CPU writes into it (SET_OUTPUT). */
struct sp_ring {
	int fd;             /* the ring's owning event */
	int cpu;
	uint8_t *base;      /* header page + data pages */
	size_t data_size;   /* bytes, a power of two */
	uint64_t tail;      /* consumer position while draining */
	uint64_t head;      /* producer snapshot for this drain */
};

struct sp_events {
	struct perf_event_attr attr;
	struct sp_perf_layout layout;
	enum sp_event_source source;
	bool source_fixed;  /* the first open settled cycles vs cpu-clock */
	bool kernel_enabled; /* kernel samples and callchains are on */
	bool kernel_denied;  /* kernel-mode sampling refused: time in the kernel is not counted */
	int ncpus;
	int *cpus;
	struct sp_ring *rings;  /* ncpus entries; fd -1 until the first event */
	int *fds;
	size_t nfds, fds_cap;
	int epfd;
	size_t ring_pages;  /* data pages per ring */
	uint64_t bytes_per_s; /* ring bytes one CPU fills at the full sample rate */
	size_t page_size;
	uint8_t *scratch;   /* per ring, a record that wraps the ring end is copied here */
	size_t scratch_size; /* bytes per ring slot */
};

/*
 * Prepare attributes for frequency sampling with user registers and a user
 * stack copy of opts->stack_size bytes, side-band records, CLOCK_MONOTONIC
 * timestamps.  Checks the frequency against perf_event_max_sample_rate.
 */
int sp_events_init(struct sp_events *e, const struct sp_record_opts *opts, bool enable_on_exec);
/* Open the event for task tid on every CPU (cycles, else cpu-clock).  -errno. */
int sp_events_open_task(struct sp_events *e, pid_t tid);
/* Enable the events opened since the nfds count was `from` (0: all). */
int sp_events_enable(struct sp_events *e, size_t from);
void sp_events_disable(struct sp_events *e);
/* epoll_wait on the rings: 1 ready, 0 timeout, -errno. */
int sp_events_wait(struct sp_events *e, int timeout_ms);
/* True when some ring holds unread bytes. */
bool sp_events_pending(const struct sp_events *e);
/*
 * Visit every record now in the rings in timestamp order (k-way merge of the
 * per-CPU rings).  rec is 8-byte aligned and valid during the call.  A
 * malformed header skips the rest of that ring and counts in *corrupt.
 */
typedef void (*sp_record_fn)(void *ctx, const struct perf_event_header *rec, size_t len);
int sp_events_drain(struct sp_events *e, sp_record_fn fn, void *ctx, uint64_t *corrupt);
void sp_events_release(struct sp_events *e);

/* ---- process and module state (lib/process.c) -------------------------- */

/* One backing file, opened once and shared by every mapping of it. */
struct sp_modfile {
	uint64_t dev, ino;
	int fd;
	Elf *elf;
	void *image;            /* in-memory image ([vdso]), owned */
	struct sp_elf_info info;
	bool info_ok;
	uint64_t size;
	int64_t mtime_ns;
	struct sp_cfi_table *cfi;
	bool cfi_tried;
	struct sp_modfile *cfi_owner; /* same build-id seen first: share its table */
	char *path;             /* the mapping's path as first seen, owned */
};

/* A module as a process sees it: a range, the spool's module id, its file. */
struct sp_proc_module {
	uint64_t start, end;
	uint64_t file_offset;
	uint32_t module_id;
	struct sp_modfile *file; /* NULL for anonymous code */
	struct sp_unwind_module um;
};

/* Every module file a recording has opened, found by (dev, ino) (lib/modfile.c). */
struct sp_modfile_cache {
	struct sp_map file_index;     /* hash(dev, ino) -> index into files */
	struct sp_map build_id_index; /* hash(build-id) -> first file with it */
	struct sp_modfile **files;
	size_t nfiles, files_cap;
	uint64_t unreadable;          /* files that could not be opened or parsed */
};

void sp_modfile_cache_init(struct sp_modfile_cache *c);
void sp_modfile_cache_release(struct sp_modfile_cache *c);
/*
 * The file behind an executable mapping of pid, opened on first use: the
 * reported path when its inode matches, else /proc/PID/map_files/START-END
 * (deleted or replaced files); "[vdso]" is read from our own vdso.  NULL only
 * when out of memory; a file that cannot be read has info_ok false.
 */
struct sp_modfile *sp_modfile_get(struct sp_modfile_cache *c, pid_t pid, uint64_t start,
				  uint64_t end, uint64_t dev, uint64_t ino, const char *path);
/* The file's rule table, compiled on first use and shared by files of one build-id. */
struct sp_cfi_table *sp_modfile_cfi(struct sp_modfile *f);
/*
 * True when f's path no longer names the image f holds open: the file was
 * deleted or replaced (renamed over) since it was mapped.
 */
bool sp_modfile_replaced(const struct sp_modfile *f);

/*
 * At record end, name the frames of modules whose file was deleted or
 * replaced from the images the recorder kept open (DESIGN decision 7):
 * fd_by_module[id] (n entries) is such an image's fd, or -1.  Reads the
 * spool written so far back, resolves the frames of those modules that the
 * samples use, and appends their symbol records to w (lib/symbolize.c).
 * *frames gets how many were stored.  0 or -errno.
 */
int sp_symbolize_images(struct sp_spool_writer *w, const int *fd_by_module, size_t n,
			uint64_t *frames);

/*
 * Generated code of one live process (lib/jitcode.c): function entries from
 * its perf map or from trampoline arenas, and code bytes read with
 * process_vm_readv(2) once per entry, for frames proven from code.
 */
struct sp_jit_code;
/* NULL when out of memory. */
struct sp_jit_code *sp_jit_code_new(pid_t pid);
void sp_jit_code_free(struct sp_jit_code *j);
/* An executable mapping replaced [start, end): cached code there is stale. */
void sp_jit_code_invalidate(struct sp_jit_code *j, uint64_t start, uint64_t end);
/*
 * The row at pc in the anonymous mapping [start, end), proven from the code
 * between its function's entry and pc (sp_codeframe_row); out, or NULL.
 */
const struct sp_cfi_row *sp_jit_code_row(struct sp_jit_code *j, uint64_t start, uint64_t end,
					 uint64_t pc, bool after_call, struct sp_cfi_row *out);

struct sp_process {
	pid_t pid;
	struct sp_jit_code *jit; /* created on the first frame in anonymous code */
	struct sp_proc_module *mods; /* sorted by start, non-overlapping */
	size_t nmods, cap;
	bool exited;
	bool is_python;
	size_t last;  /* index of the module found last: consecutive frames share modules */
	uint64_t gen; /* changes whenever the module set changes (unique across processes) */
};

/* Insert a mapping; older mappings it overlaps are trimmed (an mmap replaces). */
int sp_process_add_module(struct sp_process *p, const struct sp_proc_module *m);
/* The module containing pc, or NULL. */
struct sp_proc_module *sp_process_find(struct sp_process *p, uint64_t pc);
int sp_process_copy_modules(struct sp_process *dst, const struct sp_process *src);
void sp_process_clear_modules(struct sp_process *p);
void sp_process_release(struct sp_process *p);

/*
 * The display part of a module path (lib/module_path.c): its basename
 * without the kernel's " (deleted)" suffix, as a span of path (not
 * NUL-terminated: *len bytes).
 */
const char *sp_path_name_span(const char *path, size_t *len);
/* Length of path without the " (deleted)" suffix the kernel appends in maps. */
size_t sp_path_len_undeleted(const char *path);

#endif
