/* SPDX-License-Identifier: MIT */
/* Private interfaces of the symbol sources beside ELF: kallsyms, perf maps, and their line reader. */
#ifndef SP_SYMBOLS_INTERNAL_H
#define SP_SYMBOLS_INTERNAL_H

#include "internal.h"

/* ---- bounded line reader over untrusted text files (lib/linereader.c) ---- */

/*
 * Lines of a file read through a fixed buffer: a line longer than max_line
 * bytes is skipped whole (never returned in pieces), and at most max_bytes
 * are read from the file, so a hostile or runaway file costs bounded memory
 * and time.
 */
struct sp_line_reader {
	int fd;               /* borrowed */
	char *buf;            /* owned */
	size_t cap, start, end;
	size_t max_line;
	uint64_t bytes;       /* bytes read from fd so far */
	uint64_t max_bytes;
	bool eof;             /* no more bytes will come (end of file or max_bytes) */
	bool limited;         /* reading stopped at max_bytes, not at the end of the file */
};

/* What sp_line_reader_next says about the line it returns. */
enum sp_line_flags {
	SP_LINE_TOO_LONG = 1u << 0,     /* longer than max_line: skipped, *len is 0 */
	SP_LINE_UNTERMINATED = 1u << 1, /* the last line, without a final newline */
};

/* max_line >= 1; max_bytes 0 means no limit.  0 or -ENOMEM. */
int sp_line_reader_init(struct sp_line_reader *r, int fd, size_t max_line, uint64_t max_bytes);
void sp_line_reader_release(struct sp_line_reader *r);
/*
 * The next line, without its '\n', in *line (valid until the next call) and
 * *len; it may hold NUL bytes.  *flags gets enum sp_line_flags.  Returns 1 for
 * a line, 0 at the end, -errno when read(2) fails.  A line cut by max_bytes is
 * not returned: r->limited then says the file was read only in part.
 */
int sp_line_reader_next(struct sp_line_reader *r, const char **line, size_t *len,
			unsigned *flags);

/* ---- sparse kernel symbols from kallsyms (lib/kallsyms.c) ----------------- */

/* One kernel function that is the nearest symbol below some needed address. */
struct sp_ksym {
	uint64_t addr;      /* start */
	uint64_t end;       /* the next symbol's address; UINT64_MAX when none follows */
	const char *name;
	const char *module; /* kernel module ("ext4") for "[ext4]" symbols, NULL for vmlinux */
};

struct sp_kallsyms_stats {
	uint64_t lines;          /* lines read */
	uint64_t kept;           /* symbols kept: the nearest below some needed address */
	uint64_t malformed;      /* lines skipped: bad address, type or name, too long, NUL */
	uint64_t zero_addresses; /* symbols listed at address 0 (kernel.kptr_restrict) */
	uint64_t resolved;       /* needed addresses that fall inside a kept symbol */
	bool restricted;         /* no text symbol had a non-zero address: nothing usable */
	bool limited;            /* the file was larger than the byte limit: read in part */
};

struct sp_kallsyms;

/*
 * Read a kallsyms file ("ADDRESS TYPE NAME[\t[MODULE]]" per line, the format
 * of /proc/kallsyms) once, keeping only what the sorted, duplicate-free
 * addresses addrs[0..n) need: for each, the text symbol (type t, T, w or W)
 * nearest at or below it, bounded above by the next symbol of any type but
 * absolute (a, A).  Memory is O(n), whatever the file's size.  Lines are
 * untrusted: malformed or overlong ones are skipped and counted.  A file
 * whose every address reads 0 (kernel.kptr_restrict) loads with
 * stats.restricted set and resolves nothing.  *out owns the result.
 * Returns 0, -errno from open/read, -ENOMEM, -SP_E_BAD_ARG when addrs is not
 * sorted.
 */
int sp_kallsyms_load(const char *path, const uint64_t *addrs, size_t n,
		     struct sp_kallsyms **out);
/*
 * The symbol holding addr, which must be one of the needed addresses given
 * to sp_kallsyms_load (others may find nothing); NULL when none does.
 * Borrowed: lives as long as k.
 */
const struct sp_ksym *sp_kallsyms_find(const struct sp_kallsyms *k, uint64_t addr);
const struct sp_kallsyms_stats *sp_kallsyms_stats(const struct sp_kallsyms *k);
void sp_kallsyms_free(struct sp_kallsyms *k);

/* ---- perf maps: /tmp/perf-PID.map (lib/perfmap.c) ------------------------- */

/*
 * The perf map convention (Linux tools/perf/Documentation/jit-interface.txt):
 * a process that generates code appends "START SIZE NAME" lines, START and
 * SIZE in hex, NAME to the end of the line.  The file is written by the
 * profiled process, so it is untrusted and bounded here.
 */
struct sp_perf_map_limits {
	uint64_t max_bytes;  /* read at most this much of the file; 0 = default 64 MiB */
	size_t max_lines;    /* parse at most this many lines; 0 = default 4 Mi */
	size_t max_line;     /* longer lines are skipped; 0 = default 4096 bytes */
};

struct sp_perf_map_stats {
	uint64_t lines;      /* lines read */
	uint64_t entries;    /* lines that gave a function */
	uint64_t malformed;  /* bad numbers, missing or NUL-holding names, size 0, too long */
	uint64_t overflow;   /* START + SIZE wraps past 2^64 */
	bool limited;        /* the byte or line limit stopped the reading */
};

/* One piece of the address space and the function the map names there. */
struct sp_perf_map_range {
	uint64_t start, end; /* [start, end) */
	uint64_t sym_start;  /* where the function's own line says it starts */
	uint64_t sym_size;
	uint32_t name;       /* offset of the NUL-terminated name in names */
};

/*
 * A parsed map: non-overlapping ranges sorted by start.  Where lines overlap
 * the later one wins, as a later line describes code written later over the
 * same addresses; the parts of an earlier function that no later line covers
 * keep its name.
 */
struct sp_perf_map {
	struct sp_perf_map_range *ranges;
	size_t n;
	char *names;
	size_t names_len, names_cap;
	struct sp_perf_map_stats stats;
};

void sp_perf_map_init(struct sp_perf_map *m);
void sp_perf_map_release(struct sp_perf_map *m);
/*
 * Parse the map readable from fd (read from its current position) into m,
 * which must be freshly initialised.  lim may be NULL (defaults).  Returns 0,
 * -errno from read(2), or -ENOMEM; bad lines are counted, not errors.
 */
int sp_perf_map_read_fd(struct sp_perf_map *m, int fd, const struct sp_perf_map_limits *lim);
/* Why a process's map file was or was not used (sp_perf_map_load). */
enum sp_perf_map_verdict {
	SP_PERF_MAP_USED = 0,
	SP_PERF_MAP_MISSING,  /* no such file, or it cannot be opened */
	SP_PERF_MAP_INSECURE, /* a symlink, not a regular file, or writable by group or others */
	SP_PERF_MAP_STALE,    /* created or last written before its process began */
};

/* Slack for file times against a process's start: coarse file clocks, clock slew. */
#define SP_PERF_MAP_TIME_MARGIN_US 2000000ull

/*
 * Read DIR/perf-PID.map into m (freshly initialised) once it passes the
 * checks a file written by someone else deserves: opened without following
 * a symlink, a regular file, not writable by group or others (mode & 022).
 * The owner is not compared with the process's uid, which spools do not
 * record.  When not_before_us is non-zero (the process's start, µs since the
 * epoch), a file whose birth time (when the file system keeps one) or
 * modification time is more than SP_PERF_MAP_TIME_MARGIN_US older was
 * written by an earlier process with the same pid.  *verdict says which
 * check failed; m is then left empty.  Returns 0 (whatever the verdict),
 * -ENOMEM, or -errno when reading fails.
 */
int sp_perf_map_load(struct sp_perf_map *m, const char *dir, int32_t pid, uint64_t not_before_us,
		     const struct sp_perf_map_limits *lim, unsigned *verdict);

/* The range holding addr, or NULL. */
const struct sp_perf_map_range *sp_perf_map_find(const struct sp_perf_map *m, uint64_t addr);
static inline const char *sp_perf_map_name(const struct sp_perf_map *m,
					   const struct sp_perf_map_range *r)
{
	return m->names + r->name;
}

/* ---- symbol records in spools (lib/symstore.c) --------------------------- */

/*
 * Encodes resolved frames as the spool's symbol records (stackpulse-spool(5),
 * types 11 to 14), to be appended after the records of s.  Strings are
 * interned, reusing those s already stores.  s must outlive the encoder.
 */
struct sp_symenc;

int sp_symenc_new(const struct sp_spool *s, struct sp_symenc **out);
void sp_symenc_free(struct sp_symenc *e);
/* One SYM_FRAME record: the n >= 1 frames of frame_id's chain, innermost first. */
int sp_symenc_add_frame(struct sp_symenc *e, uint32_t frame_id,
			const struct sp_resolved_frame *chain, size_t n);
/* A kallsyms symbol a frame was named from (size 0: unknown; module NULL: vmlinux). */
int sp_symenc_add_kernel_symbol(struct sp_symenc *e, uint64_t addr, uint64_t size,
				const char *name, const char *module);
/* A perf map line a frame was named from, as the map wrote it. */
int sp_symenc_add_perf_map_line(struct sp_symenc *e, int32_t pid, uint64_t start,
				uint64_t size, const char *name);
uint64_t sp_symenc_frames(const struct sp_symenc *e);
/* Append every record to out: the strings first, then the rest.  0 or -ENOMEM. */
int sp_symenc_finish(struct sp_symenc *e, struct sp_buf *out);

/*
 * Index of the stored chains of s by frame id (*by_frame malloc'd, NULL
 * when s stores none; the latest record of a frame wins).  0 or -ENOMEM.
 */
int sp_symstore_index(const struct sp_spool *s, uint32_t **by_frame);
/*
 * The stored chain of frame_id into out[0..min(n, max)), innermost first;
 * returns n, the chain's length (0: nothing stored).  Strings are the spool's.
 */
size_t sp_symstore_get(const struct sp_spool *s, const uint32_t *by_frame, uint32_t frame_id,
		       struct sp_resolved_frame *out, size_t max);

/* ---- what `symbolize` and the recorder ask of a symbolizer (lib/symbolizer.c) ---- */

/* Where a resolved frame came from. */
enum sp_frame_src {
	SP_FRAME_SRC_NONE = 0,          /* not resolved yet */
	SP_FRAME_SRC_LIVE,              /* from the files, kallsyms, perf maps */
	SP_FRAME_SRC_STORED,            /* from the spool's symbol records */
	SP_FRAME_SRC_RESOLVED_AGAIN,    /* stored, but the options excluded it: from the files */
};

unsigned sp_symbolizer_frame_src(const struct sp_symbolizer *sym, uint32_t frame_id);

/* The kallsyms symbol or perf map line a frame resolved from the sources was named from. */
struct sp_frame_source {
	uint8_t origin;       /* SP_ORIGIN_KERNEL_SYMBOLS or SP_ORIGIN_PERF_MAP */
	int32_t pid;          /* perf map: its process */
	uint64_t start, size; /* size 0: unknown */
	const char *name;     /* as the file wrote it; borrowed from the symbolizer */
	const char *module;   /* kallsyms module, NULL for vmlinux */
};

/* 1 and *out for a frame named from kallsyms or a perf map now, else 0. */
int sp_symbolizer_frame_source(const struct sp_symbolizer *sym, uint32_t frame_id,
			       struct sp_frame_source *out);

/*
 * Symbolize module_id's file from the image open on fd (duplicated; the
 * caller keeps fd) instead of its path: the recorder's handle on a file
 * deleted or replaced since.  The image must still prove to be the recorded
 * file.  Call before the module's first frame is resolved.  0, -errno,
 * -SP_E_BAD_ARG (no such module file, or already opened).
 */
int sp_symbolizer_use_file(struct sp_symbolizer *sym, uint32_t module_id, int fd);

/* Where the symbolizer looked for a module's symbols, for a user who wants to add them. */
struct sp_lookup_places {
	uint32_t file;   /* the module file's index (modules sharing a file share it); UINT32_MAX: none */
	const char *why; /* static text: why it had no names */
	char **places;   /* owned: the module file, map_files, debug file candidates, debuginfod */
	size_t nplaces;
};

/* Fill out for module_id (after its frames were resolved).  0 or -ENOMEM. */
int sp_symbolizer_lookup_places(struct sp_symbolizer *sym, uint32_t module_id,
				struct sp_lookup_places *out);
void sp_lookup_places_release(struct sp_lookup_places *p);

/* Text-field helpers shared by the kallsyms and perf-map parsers. */
static inline bool sp_text_is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/*
 * A hex number (an optional 0x, leading zeros allowed, at most 64 significant
 * bits) at *p before end: true and *p advanced past it, or false.
 */
bool sp_text_parse_hex(const char **p, const char *end, uint64_t *v);

/* ---- a native symbolizer plug-in's instances (lib/native_backend.c) ------- */

struct sp_native_groups;

/* A plug-in callback failed (not -ENOMEM): the frame keeps its address form. */
#define SP_NATIVE_FAILED 1

/*
 * Group the modules flagged in eligible (by module id: the file-backed user
 * modules) for be: one group per run of non-overlapping modules of a
 * process.  Instances are made on first use.  0, -SP_E_BAD_ARG (a callback
 * missing), -ENOMEM.
 */
int sp_native_groups_new(const struct sp_spool *s, const struct sp_native_backend *be,
			 const bool *eligible, struct sp_native_groups **out);
void sp_native_groups_free(struct sp_native_groups *ng);
/*
 * The plug-in's functions at addr in module module_id, innermost first, into
 * *syms (valid until the next call) and *n (0: nothing known, or a module
 * outside every group).  Returns 0, -ENOMEM, or SP_NATIVE_FAILED once per
 * failed call (a group whose create or set_modules failed fails once, then
 * gives nothing).
 */
int sp_native_groups_symbolize(struct sp_native_groups *ng, uint32_t module_id, uint64_t addr,
			       const struct sp_native_symbol **syms, size_t *n);

/* ---- streaming resolved stacks (lib/symbolizer_api.c) --------------------- */

/* Frame ids of the (pid, stack id) pairs streamed so far. */
struct sp_stack_cache;

void sp_stack_cache_free(struct sp_stack_cache *c);
/* Adds the cache's hit and miss counts to st. */
void sp_stack_cache_add_stats(const struct sp_stack_cache *c, struct sp_symbolizer_stats *st);
/* The symbolizer's cache slot: NULL until the first stream (lib/symbolizer.c keeps it). */
struct sp_stack_cache **sp_symbolizer_stack_cache(struct sp_symbolizer *sym);
/* The spool a symbolizer resolves (lib/symbolizer.c). */
const struct sp_spool *sp_symbolizer_spool(const struct sp_symbolizer *sym);
/* qsort/bsearch order of int32_t pids. */
int sp_cmp_pid(const void *a, const void *b);

#endif
