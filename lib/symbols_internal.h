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
