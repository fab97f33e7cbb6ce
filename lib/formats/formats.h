/* SPDX-License-Identifier: MIT */
/*
 * lib/formats/: parsers of the files other programs write about their code
 * (private, not installed): kallsyms (kallsyms.c), perf maps (perfmap.c),
 * jitdumps (jitdump.c) and Go's function tables (gopclntab.c).  Each file is
 * untrusted and read within bounds; the parsers know nothing of spools,
 * symbolizers or unwinders, which all use them.
 * May call: util.  Never spool, symbols, unwind, record or report.
 */
#ifndef SP_FORMATS_H
#define SP_FORMATS_H

#include "util/util.h"

/* ---- sparse kernel symbols from kallsyms (kallsyms.c) ------------------ */

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

/* ---- perf maps: /tmp/perf-PID.map (perfmap.c) -------------------------- */

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
	/*
	 * When set, only the lines keep says yes to are stored: a reader that
	 * knows the addresses it will look up keeps the lines covering them
	 * (every line covering such an address, so the later one still wins
	 * there).  Every line is still read, parsed and counted in the stats.
	 */
	bool (*keep)(void *arg, uint64_t start, uint64_t end);
	void *keep_arg;
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
	SP_PERF_MAP_FOREIGN,  /* owned by neither the process's user nor root */
};

/* sp_perf_map_load's owner when the process's is not known. */
#define SP_PERF_MAP_OWNER_UNKNOWN (-1)

/* Slack for file times against a process's start: coarse file clocks, clock slew. */
#define SP_PERF_MAP_TIME_MARGIN_US 2000000ull

/*
 * Was a file last written at written_us left by an earlier process with the
 * pid of one that began at not_before_us (both µs since the epoch; 0: not
 * known, never stale)?  More than SP_PERF_MAP_TIME_MARGIN_US before it.
 */
static inline bool sp_perf_map_stale(uint64_t written_us, uint64_t not_before_us)
{
	return not_before_us && written_us + SP_PERF_MAP_TIME_MARGIN_US < not_before_us;
}

/*
 * Read DIR/perf-PID.map into m (freshly initialised) once it passes the
 * checks a file written by someone else deserves: opened without following
 * a symlink, a regular file, not writable by group or others (mode & 022),
 * owned by root or by owner, the process's effective uid
 * (docs/DESIGN.md, decision 9: any user can write /tmp/perf-PID.map for any pid); with owner
 * SP_PERF_MAP_OWNER_UNKNOWN (a spool without OWNER records), by root or the
 * caller's effective uid.  When not_before_us is non-zero (the process's start, µs since the
 * epoch), a file last modified more than SP_PERF_MAP_TIME_MARGIN_US before
 * it was written by an earlier process with the same pid (its birth time
 * does not count: a runtime that got a reused pid rewrites the old file).  *verdict says which
 * check failed; m is then left empty.  Returns 0 (whatever the verdict),
 * -ENOMEM, or -errno when reading fails.
 */
int sp_perf_map_load(struct sp_perf_map *m, const char *dir, int32_t pid, int64_t owner,
		     uint64_t not_before_us, const struct sp_perf_map_limits *lim,
		     unsigned *verdict);

/*
 * The checks of sp_perf_map_load for any file a process writes about its
 * code (a perf map, a jitdump): *out is the file opened read-only (the
 * caller's to close) when *verdict is SP_PERF_MAP_USED, else -1.  path is
 * not followed as a symlink.  Returns 0 or -ENOMEM.
 */
int sp_perf_map_open(const char *path, int64_t owner, uint64_t not_before_us, unsigned *verdict,
		     int *out);

/* One function a map names, in file order (its index is its age): [start, end). */
struct sp_perf_map_entry {
	uint64_t start, end;
	uint32_t name; /* from sp_perf_map_add_name */
};
/* Copy name[0, n) into m's names: *off its offset.  0 or -ENOMEM. */
int sp_perf_map_add_name(struct sp_perf_map *m, const char *name, size_t n, uint32_t *off);
/* Build m's ranges (m holds none yet) from e[0, n), later entries winning.  0 or -ENOMEM. */
int sp_perf_map_build(struct sp_perf_map *m, const struct sp_perf_map_entry *e, size_t n);

/* The range holding addr, or NULL. */
const struct sp_perf_map_range *sp_perf_map_find(const struct sp_perf_map *m, uint64_t addr);
static inline const char *sp_perf_map_name(const struct sp_perf_map *m,
					   const struct sp_perf_map_range *r)
{
	return m->names + r->name;
}

/* ---- jitdump files (jitdump.c) ---------------------------------------- */

/*
 * The jitdump format (Linux tools/perf/Documentation/jitdump-specification.txt):
 * a runtime that generates code writes jit-PID.dump (node --perf-prof in its
 * working directory, CPython 3.13 -X perf_jit in /tmp) and maps it executable
 * so that perf's mmap records name it.  A 40-byte (or longer) header, then
 * records of { u32 id, u32 total_size, u64 timestamp } and a body, appended
 * while the process runs.  The file is the target's: untrusted and bounded.
 */
enum sp_jitdump_rec_id {
	SP_JIT_CODE_LOAD = 0,
	SP_JIT_CODE_MOVE = 1,
	SP_JIT_CODE_DEBUG_INFO = 2,
	SP_JIT_CODE_CLOSE = 3,
	SP_JIT_CODE_UNWINDING_INFO = 4,
};
#define SP_JITDUMP_RECORD_MAX (16u << 20) /* larger records are skipped, unread */

struct sp_jitdump_rec {
	uint32_t id;          /* enum sp_jitdump_rec_id; others are skipped */
	const uint8_t *body;  /* after the 16-byte record header */
	size_t body_len;
};

/* JIT_CODE_LOAD: the function at [code_addr, code_addr + code_size), its name. */
struct sp_jitdump_load {
	uint64_t code_addr, code_size;
	const char *name;     /* NUL-terminated inside the record's body */
	size_t name_len;
};
/* JIT_CODE_UNWINDING_INFO, for the next code load: its .eh_frame bytes. */
struct sp_jitdump_unwind {
	const uint8_t *eh_frame;
	size_t eh_frame_len;  /* 0: the runtime gave a header only (no FDE) */
};
/* false when the body is too short, the name unterminated or the code range wraps. */
bool sp_jitdump_code_load(const struct sp_jitdump_rec *r, struct sp_jitdump_load *out);
/* false when the sizes disagree with the body. */
bool sp_jitdump_unwinding(const struct sp_jitdump_rec *r, struct sp_jitdump_unwind *out);

/*
 * Reads the records of a jitdump as they are appended: a record is returned
 * only once it is complete, so a reader can be called again as the file
 * grows.  Reads at most max_bytes of the file in all (0: 1 GiB).
 */
struct sp_jitdump_reader {
	int fd;               /* borrowed */
	uint64_t pos;         /* file offset of buf[0] */
	uint8_t *buf;
	size_t len, off, cap;
	uint64_t max_bytes;
	bool header_read;
	bool bad;             /* not a jitdump this reader understands, or a malformed record */
	bool limited;         /* max_bytes stopped the reading */
	uint64_t skipped;     /* records over SP_JITDUMP_RECORD_MAX, passed over */
};
void sp_jitdump_reader_init(struct sp_jitdump_reader *rd, int fd, uint64_t max_bytes);
void sp_jitdump_reader_release(struct sp_jitdump_reader *rd);
/*
 * The next complete record: 1 (rec valid until the next call), 0 when none is
 * complete yet (or the file is bad or limited: see the flags), -ENOMEM.
 */
int sp_jitdump_reader_next(struct sp_jitdump_reader *rd, struct sp_jitdump_rec *rec);

/* Does path's last component read jit-DIGITS.dump (the name runtimes give a jitdump)? */
bool sp_jitdump_is_path(const char *path);
/*
 * The functions a jitdump's code loads name, as a perf map (a later load
 * over the same addresses wins), after the checks of sp_perf_map_open; at
 * most 2^20 loads and 1 GiB of the file are read (stats.limited).
 * Returns 0 (whatever the verdict) or -ENOMEM; a file that is not a jitdump
 * gives an empty map with verdict SP_PERF_MAP_USED and stats.malformed 1.
 */
int sp_jitdump_load(struct sp_perf_map *m, const char *path, int64_t owner,
		    uint64_t not_before_us, unsigned *verdict);

/* ---- Go's function table: .gopclntab (gopclntab.c) ------------------- */

/*
 * Go keeps a table of its functions in every binary, stripped or not
 * (`go build -ldflags='-s -w'` drops the ELF symbols and DWARF, not this):
 * the runtime needs it for tracebacks.  Its layout is the Go runtime's
 * (runtime/symtab.go, pcHeader and _func), by the magic of its header:
 * Go 1.16-1.17, 1.18-1.19 and 1.20 onwards; the earlier layout is not
 * read.  A little-endian table only.  The table is the binary's: every
 * offset is checked against its length, every walk is bounded.
 */
enum sp_gopclntab_version {
	SP_GOPCLNTAB_116 = 116, /* magic 0xfffffffa: absolute entries, word-sized function table */
	SP_GOPCLNTAB_118 = 118, /* magic 0xfffffff0: 32-bit entries from the text start */
	SP_GOPCLNTAB_120 = 120, /* magic 0xfffffff1: as 1.18, the function's start line added */
};

/* A parsed table: a view of borrowed bytes (offsets are into data). */
struct sp_gopclntab {
	const uint8_t *data;
	size_t len;
	unsigned version;       /* enum sp_gopclntab_version */
	uint8_t quantum;        /* instruction size unit of the pc deltas: 1 on x86, 4 on arm64 */
	uint8_t ptr_size;       /* 4 or 8 */
	uint64_t nfunc;         /* functions in the table */
	uint64_t text_start;    /* what entry offsets count from (1.18+) */
	uint64_t funcnames, cutab, filetab, pctab, functab; /* each table's offset in data */
};

/* One function of the table, as sp_gopclntab_find found it. */
struct sp_gofunc {
	uint64_t entry, end; /* its code: [entry, end), addresses of the binary (its file's vaddrs) */
	const char *name;    /* NUL-terminated in the table (borrowed), NULL when its offset is bad */
	uint64_t func;       /* its _func record's offset in the table */
	uint32_t pcfile, pcln, cu; /* its pc-to-file and pc-to-line tables, its CU's first file */
};

/*
 * Read the header of the table data[0, len) (a .gopclntab section's bytes,
 * borrowed for t's life).  text_addr is the binary's .text address, used
 * when the header's text start is 0 (a position-independent binary, whose
 * header a relocation fills).  Returns 0, or -SP_E_ELF_MALFORMED when the
 * magic is not one of the versions above or the header is out of bounds.
 */
int sp_gopclntab_parse(struct sp_gopclntab *t, const uint8_t *data, size_t len,
		       uint64_t text_addr);
/* The function whose code holds pc: 1 and *out, or 0 (none, or its records are out of bounds). */
int sp_gopclntab_find(const struct sp_gopclntab *t, uint64_t pc, struct sp_gofunc *out);
/*
 * The source file (borrowed from the table, NULL when unknown) and line (0
 * when unknown) of pc in fn, from its pc-value tables.  False when neither
 * is known.
 */
bool sp_gopclntab_line(const struct sp_gopclntab *t, const struct sp_gofunc *fn, uint64_t pc,
		       const char **file, uint32_t *line);

/*
 * Where Go 1.18+ keeps its functions' data (the inline trees): the bytes of
 * the section holding them (borrowed), that section's address, and the
 * base the table's function-data offsets count from (moduledata.gofunc).
 */
struct sp_gofuncdata {
	const uint8_t *data;
	size_t len;
	uint64_t addr;
	uint64_t gofunc;
};

/*
 * Find gofunc: the runtime's module record (moduledata) in data[0, len),
 * the bytes of .noptrdata, is the one whose first word is table_addr (the
 * table's address) and whose second the function names' address; its
 * rodata field must read rodata_addr.  64-bit tables of Go 1.18 and later
 * only.  True and *gofunc when found.
 */
bool sp_gopclntab_gofunc(const struct sp_gopclntab *t, uint64_t table_addr, const uint8_t *data,
			 size_t len, uint64_t rodata_addr, uint64_t *gofunc);

/* One function of an inline chain. */
struct sp_goinline {
	const char *name;   /* borrowed from the table, NULL when its offset is bad */
	const char *file;   /* the position at this level, as sp_gopclntab_line gives it */
	uint32_t line;
};

/*
 * The chain of functions the compiler inlined at pc in fn, innermost first,
 * from fn's inline tree (its function data FUNCDATA_InlTree in fd, indexed
 * by its pc-value table PCDATA_InlTreeIndex): out[0, n - 1) the inlined
 * ones, out[n - 1] fn itself, each with its position (the innermost's at
 * pc, the others' at their call sites).  fd NULL (or a Go 1.16-1.17 table)
 * gives fn alone.  At most max entries (max >= 1); returns n.
 */
size_t sp_gopclntab_inline(const struct sp_gopclntab *t, const struct sp_gofunc *fn, uint64_t pc,
			   const struct sp_gofuncdata *fd, struct sp_goinline *out, size_t max);

#endif
