/* SPDX-License-Identifier: MIT */
/* Private interfaces shared by the symbolizer, the aggregation and the report views. */
#ifndef SP_REPORT_INTERNAL_H
#define SP_REPORT_INTERNAL_H

#include "internal.h"

#include <elfutils/libdwfl.h>

/* ---- C++ name demangling (lib/demangle.c) ------------------------------ */

/*
 * Demangle an Itanium C++ ABI name ("_Z...").  Returns a malloc'd string the
 * caller frees, or NULL when name is not mangled, the demangler rejects it,
 * or no C++ runtime is available (the caller keeps the raw name).
 */
char *sp_demangle(const char *name);

/* ---- sorted function symbols of a module file (lib/symtab.c) ----------- */

struct sp_symtab_entry {
	uint64_t addr, size; /* module (static) addresses; size 0 covers nothing */
	const char *name;    /* borrowed from libelf: lives as long as the Dwfl */
	uint64_t end_hint;   /* while building: end of the symbol's section */
	uint8_t rank;        /* binding: global 0, weak 1, local 2 */
	uint32_t ndx;        /* index in libdwfl's symbol table */
};

struct sp_symtab {
	struct sp_symtab_entry *e;
	size_t n;
};

/*
 * Collect the function symbols libdwfl finds for mod (its symbol table, a
 * separate debug file's, .dynsym, .gnu_debugdata), one per address, sorted.
 * Labels without a size extend to the next symbol within their section.
 * 0 or -ENOMEM; a module without symbols gives an empty table.
 */
int sp_symtab_build(struct sp_symtab *t, Dwfl_Module *mod);
void sp_symtab_release(struct sp_symtab *t);
/* The symbol whose [addr, addr + size) holds addr, or NULL. */
const struct sp_symtab_entry *sp_symtab_find(const struct sp_symtab *t, uint64_t addr);

/* ---- separate debug files (lib/debugfile.c) ------------------------------ */

/* A module file whose debug information may be in a separate file. */
struct sp_debug_query {
	const char *path;        /* the module file (absolute), or NULL */
	const uint8_t *build_id; /* its GNU build-id, when build_id_len > 0 */
	size_t build_id_len;
	const char *debuglink;   /* its .gnu_debuglink file name, or NULL */
	uint32_t debuglink_crc;  /* the CRC-32 the debug link records */
	const char *dirs;        /* colon-separated directories searched first, or NULL */
};

/* What a search found and refused. */
struct sp_debug_found {
	int fd;               /* the debug file, open read-only; -1 when none was found */
	char *path;           /* its path (malloc'd), NULL when none */
	uint32_t mismatched;  /* candidates refused: another build-id, or the wrong CRC */
	char *first_mismatch; /* the first refused candidate's path (malloc'd), or NULL */
};

/*
 * True when the ELF file open on fd is q's debug file: the same build-id
 * when q has one (a candidate without one is refused), else the CRC-32 of
 * the whole file equals q's debug link CRC.
 */
bool sp_debug_file_matches(const struct sp_debug_query *q, int fd);
/*
 * Look for q's separate debug file, in this order (GDB's and libdwfl's
 * conventions): for each absolute directory DIR of q->dirs,
 * DIR/.build-id/xx/rest.debug, DIR/LINK and DIR/FILEDIR/LINK; then
 * /usr/lib/debug/.build-id/xx/rest.debug; then FILEDIR/LINK (not the file
 * itself), FILEDIR/.debug/LINK and /usr/lib/debug/FILEDIR/LINK, where LINK
 * is the debug link name and FILEDIR the module file's directory.  The first
 * candidate that sp_debug_file_matches wins; those that exist but do not
 * match are counted and the first is named.  Returns 0 (out->fd says whether
 * one was found) or -ENOMEM; release out with sp_debug_found_release.
 */
int sp_debug_file_find(const struct sp_debug_query *q, struct sp_debug_found *out);
void sp_debug_found_release(struct sp_debug_found *f);
/*
 * Every path sp_debug_file_find would try for q, in its order, none opened:
 * *paths is a malloc'd array of *n malloc'd strings.  0 or -ENOMEM.
 */
int sp_debug_file_candidates(const struct sp_debug_query *q, char ***paths, size_t *n);

/* ---- decompressed copies of debug files (lib/debugcache.c) -------------- */

/*
 * The cache directory: dir when not NULL, else $STACKPULSE_CACHE_DIR, else
 * $XDG_CACHE_HOME/stackpulse, else $HOME/.cache/stackpulse.  An empty or
 * relative dir or $STACKPULSE_CACHE_DIR switches the cache off (NULL).
 * Returns a malloc'd path or NULL.
 */
char *sp_debug_cache_dir(const char *dir);
/*
 * When the debug file open on fd keeps at least 256 KiB of compressed
 * sections (SHF_COMPRESSED; libdw would inflate them all on every open),
 * return an fd on its copy with every section inflated:
 * CACHE_DIR/debug/HEXBUILDID.debug, made now (and *made set) when missing.
 * A copy is used only when it is a regular file of this user that group and
 * others cannot write, with the given build-id.  *path is its malloc'd path.
 * -1 when no copy is needed or none can be made: go on with fd.
 */
int sp_debug_cache_open(const char *cache_dir, const uint8_t *build_id, size_t build_id_len,
			int fd, char **path, bool *made);
/* mkdir -p of a cache directory, each level made private to the user (0700).  0 or -errno. */
int sp_cache_make_dirs(const char *path);
/*
 * Open a cache file we may trust: a regular file (not through a symlink) of
 * this user that group and others cannot write; *st is its fstat.  An fd,
 * or -1 when it is missing or not trusted.
 */
struct stat;
struct sp_arena;
int sp_cache_open_own(const char *path, struct stat *st);

/* ---- names found before, kept by build-id (lib/symcache.c) -------------- */

/* Deepest inline chain kept for one address; a longer one is not cached. */
#define SYMCACHE_MAX_SRC 256

/* One function DWARF places at an address (lib/symbolizer.c's src entries). */
struct sp_symcache_src {
	const char *name; /* NULL: the containing function, unknown to DWARF */
	const char *file; /* NULL when unknown */
	uint32_t line;    /* 0 when unknown */
	bool is_inline;
};

/* What one (file, svma) lookup found: the ELF symbol and the DWARF chain, innermost first. */
struct sp_symcache_hit {
	uint64_t svma;
	const char *name; /* NULL: no symbol covers the address */
	uint64_t offset;  /* svma - symbol start */
	uint32_t nsrc;
	const struct sp_symcache_src *src;
};

/* Append h to b in the cache's entry encoding.  0, -E2BIG (h left out) or -ENOMEM. */
int sp_symcache_put(struct sp_buf *b, const struct sp_symcache_hit *h);
/* Where a cached file's DWARF was: what must be found again before its cache is used. */
enum sp_symcache_source {
	SP_SYMCACHE_OWN = 0,      /* in the module file itself */
	SP_SYMCACHE_SEPARATE = 1, /* in a separate debug file, found on this machine */
};

/*
 * Replace CACHE_DIR/symbols/HEXBUILDID.sym with the count entries of
 * entries (made by sp_symcache_put), atomically (a temporary file renamed).
 * 0, or -errno / -E2BIG when it was not written.
 */
int sp_symcache_write(const char *cache_dir, const uint8_t *build_id, size_t build_id_len,
		      uint8_t source, const struct sp_buf *entries, size_t count);

/* A cache file read whole and checked (magic, format, CRC-32). */
struct sp_symcache_file {
	uint8_t *data;
	size_t len;
	uint8_t source; /* enum sp_symcache_source */
};

/*
 * Read CACHE_DIR/symbols/HEXBUILDID.sym when it is to be trusted (see
 * sp_cache_open_own) and whole.  0; -ENOENT when there is none to trust;
 * -SP_E_SPOOL_CORRUPT when it is damaged; -ENOMEM.  Close with
 * sp_symcache_close.
 */
int sp_symcache_open(const char *cache_dir, const uint8_t *build_id, size_t build_id_len,
		     struct sp_symcache_file *out);
void sp_symcache_close(struct sp_symcache_file *cf);
/*
 * Call fn for each entry of cf: its strings are copied into a, its src
 * array is valid during the call only.  0; -SP_E_SPOOL_CORRUPT at the first
 * value out of bounds (the entries before it were passed); fn's error or
 * -ENOMEM.
 */
int sp_symcache_each(const struct sp_symcache_file *cf, struct sp_arena *a,
		     int (*fn)(void *ctx, const struct sp_symcache_hit *h), void *ctx);

/* ---- string arena (lib/arena.c) ----------------------------------------- */

/* Strings that live as long as their owner; freed all at once. */
struct sp_arena {
	struct sp_arena_block *blocks;
};

void sp_arena_init(struct sp_arena *a);
void sp_arena_release(struct sp_arena *a);
/* Copy n bytes of s plus a NUL terminator; NULL on allocation failure. */
const char *sp_arena_strndup(struct sp_arena *a, const char *s, size_t n);
const char *sp_arena_printf(struct sp_arena *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* ---- aggregation of a spool by stack id (lib/aggregate.c) --------------- */

/*
 * A function of the flat table: one (name, module, inline) triple, and with
 * opts->lines one source position of it: (name, module, inline, file, line).
 */
struct sp_agg_func {
	const char *name, *module; /* borrowed from the symbolizer */
	const char *file;          /* with lines: the source file, or NULL; else NULL */
	uint32_t line;             /* with lines: the line, or 0; else 0 */
	bool is_inline;            /* an inlined function (SP_RFRAME_INLINE) */
	uint64_t self;             /* samples whose innermost function is this one */
	uint64_t total;            /* samples whose stack contains it (once per stack) */
	uint32_t name_id;          /* interned name alone (folded output merges by name) */
	uint32_t stamp;            /* last stack id counted in total, plus one */
};

/*
 * A spool aggregated on interned ids: sample counts per stack id, every frame
 * used by a sampled stack resolved once (sp_symbolizer_resolve_all) and
 * mapped to its function ids: the inlined functions at its address, innermost
 * first, then the function that holds them.  Marker frames (truncation) map
 * to no function and count in none.
 */
#define SP_AGG_NO_FUNC UINT32_MAX

/*
 * Frames hidden by default (SP_RFRAME_HIDDEN_DEFAULT, unless show_runtime)
 * leave every stack that holds a Python frame to stand in for them.
 */
enum sp_agg_hidden {
	SP_AGG_VISIBLE = 0,
	SP_AGG_HIDDEN,       /* no functions interned (yet) */
	SP_AGG_HIDDEN_SHOWN, /* functions interned: some stack without a stand-in shows it */
	SP_AGG_STAND_IN,     /* a Python frame: its stack hides the hidden ones */
};

struct sp_agg {
	const struct sp_spool *spool;
	struct sp_symbolizer *sym;
	uint64_t samples;           /* every sample, empty ones included */
	uint64_t empty_samples;     /* stack id 0 */
	uint64_t truncated_samples; /* root-end frame is a truncation marker */
	uint64_t first_ns, last_ns; /* sample timestamps, 0 when no samples */
	uint64_t all_samples;       /* samples in the spool, before filters and scope */
	uint64_t whole;             /* the denominator of shares: samples, or the report's */
	uint64_t *keep;             /* by sample index: bit set when kept; NULL keeps all */
	const struct sp_report_filter *filter; /* the filters applied, NULL when none */
	size_t nstacks, nframes;
	uint64_t *stack_count;      /* by stack id */
	uint8_t *stack_truncated;   /* by stack id, valid where stack_count > 0 */
	bool lines;                 /* functions are told apart by source line too */
	bool show_runtime;          /* keep SP_RFRAME_HIDDEN_DEFAULT frames in stacks */
	uint8_t *frame_hidden;      /* by frame id: enum sp_agg_hidden */
	uint32_t *frame_func;       /* by frame id: containing function id or SP_AGG_NO_FUNC */
	uint32_t *frame_first;      /* by frame id: its first function in chain */
	uint32_t *frame_nfuncs;     /* by frame id: its functions in chain (0: none, a marker) */
	uint32_t *chain;            /* function ids of every frame, innermost first */
	size_t nchain, chain_cap;
	struct sp_agg_func *funcs;
	size_t nfuncs, funcs_cap;
	const char **names;         /* by name id */
	size_t nnames, names_cap;
	struct sp_map func_index, name_index; /* content hash -> id */
	uint32_t *path;             /* scratch: one stack's frame ids, leaf first */
	size_t path_cap;
};

/*
 * The function holding a frame of a sampled stack (the last of its inline
 * chain); SP_AGG_NO_FUNC for markers and bad ids.
 */
static inline uint32_t sp_agg_frame_func(const struct sp_agg *a, uint32_t frame_id)
{
	uint32_t f = frame_id < a->nframes ? a->frame_func[frame_id] : SP_AGG_NO_FUNC;
	return f < a->nfuncs ? f : SP_AGG_NO_FUNC;
}

/*
 * Every function of a frame of a sampled stack, innermost inlined function
 * first, the containing function last, into *funcs (borrowed from a);
 * returns how many: 0 for markers and bad ids.
 */
static inline size_t sp_agg_frame_funcs(const struct sp_agg *a, uint32_t frame_id,
					const uint32_t **funcs)
{
	*funcs = NULL;
	if (frame_id >= a->nframes || a->frame_func[frame_id] >= a->nfuncs)
		return 0;
	*funcs = a->chain + a->frame_first[frame_id];
	return a->frame_nfuncs[frame_id];
}

/*
 * Count, resolve and attribute every sample.  opts (may be NULL) gives
 * lines.  0, -ENOMEM or a resolve error.
 */
int sp_agg_build(struct sp_agg *a, const struct sp_spool *s, struct sp_symbolizer *sym,
		 const struct sp_report_opts *opts);

/* A part of the samples: one process or one thread (the sections of --group-by). */
struct sp_agg_scope {
	uint32_t kind;  /* enum sp_report_group; SP_GROUP_NONE: every sample */
	int32_t pid;    /* with SP_GROUP_PROCESS */
	uint32_t thread; /* with SP_GROUP_THREAD: index in the spool's thread table */
};

/*
 * sp_agg_build counting only the samples that pass opts->filter (opts may be
 * NULL) and lie in scope (may be NULL).  Every count, stack_count included,
 * is of kept samples; views and exports that walk samples themselves skip
 * those sp_agg_kept refuses.
 */
int sp_agg_build_scoped(struct sp_agg *a, const struct sp_spool *s, struct sp_symbolizer *sym,
			const struct sp_report_opts *opts, const struct sp_agg_scope *scope);

/* Whether the sample at index i of the spool counts in a. */
static inline bool sp_agg_kept(const struct sp_agg *a, size_t i)
{
	return !a->keep || (a->keep[i / 64] >> (i % 64) & 1);
}
void sp_agg_release(struct sp_agg *a);
/*
 * Frame ids of stack_id, leaf first, into a->path; returns the depth.  The
 * pointer is valid until the next call.
 */
size_t sp_agg_stack_frames(struct sp_agg *a, uint32_t stack_id, const uint32_t **frames);

/* Groups of id sequences with a sample count each (stacks merged by names). */
struct sp_seq_group {
	size_t off;     /* into ids */
	uint32_t len;
	uint64_t count;
};

struct sp_seq_groups {
	struct sp_map index; /* sequence hash -> group */
	uint32_t *ids;
	size_t nids, ids_cap;
	struct sp_seq_group *groups;
	size_t ngroups, groups_cap;
};

void sp_seq_groups_init(struct sp_seq_groups *g);
void sp_seq_groups_release(struct sp_seq_groups *g);
/* Add count to the group of ids[0..n); 0 or -ENOMEM. */
int sp_seq_groups_add(struct sp_seq_groups *g, const uint32_t *ids, uint32_t n, uint64_t count);

/* ---- sample filters (lib/report_filter.c) ------------------------------- */

/* Whether any filter is set. */
bool sp_filter_active(const struct sp_report_filter *f);
/* Whether samples of thread t may pass (pid, tid, comm). */
bool sp_filter_thread(const struct sp_report_filter *f, const struct sp_thread *t);
/* Whether a timestamp lies in the time window; origin_ns is the recording's start. */
bool sp_filter_time(const struct sp_report_filter *f, uint64_t ts_ns, uint64_t origin_ns);
/*
 * Whether the stack stack_id passes module, focus and exclude, its frames
 * resolved through a->sym.  0 with *pass set, or a resolve error.
 */
int sp_filter_stack(struct sp_agg *a, uint32_t stack_id, bool *pass);
/* The recording's start for time windows: the header's monotonic start, else the first sample. */
uint64_t sp_filter_origin_ns(const struct sp_spool *s);

/* ---- views (lib/report_text.c, lib/report_folded.c) --------------------- */

int sp_report_text(struct sp_agg *a, const struct sp_report_opts *opts, FILE *out);
int sp_report_folded(struct sp_agg *a, FILE *out);

/* Shared by the text views (lib/report_text.c). */
#define SP_TEXT_COLUMNS 80
#define SP_TEXT_MIN_COLUMNS 80
/* 100 * part / whole, 0 when whole is 0. */
double sp_text_pct(uint64_t part, uint64_t whole);
/* The order of the flat table (opts->sort), ties by name. */
int sp_text_func_cmp(const struct sp_agg *a, uint32_t x, uint32_t y, uint32_t sort);
/*
 * The functions of the flat table in order (opts->sort, ties by name), those
 * under opts->percent_limit left out: a malloc'd array of *shown ids.
 */
int sp_text_func_order(const struct sp_agg *a, const struct sp_report_opts *opts,
		       uint32_t **order, size_t *shown);
/* By name, module, inline, file and line: the identity of a function across spools. */
int sp_text_name_cmp(const struct sp_agg_func *x, const struct sp_agg_func *y);
/* A function (name and marks) in a column of width w, cut with "..." when longer. */
void sp_text_put_func(FILE *out, const struct sp_agg_func *f, size_t w, bool pad);
void sp_text_put_cell(FILE *out, const char *s, size_t w, bool pad);
/* The header: spool, counters, filters. */
void sp_text_header(const struct sp_agg *a, const struct sp_report_opts *opts, FILE *out);
/* Print the filters set and how many samples they kept; nothing when none is. */
void sp_text_filters(const struct sp_agg *a, const struct sp_report_opts *opts, FILE *out);

/* Call trees (lib/report_tree.c): top-down, or bottom-up with opts->inverted. */
int sp_report_tree(struct sp_agg *a, const struct sp_report_opts *opts, FILE *out);
/* JSON summary (lib/report_json.c). */
int sp_report_json(struct sp_agg *a, const struct sp_report_opts *opts, FILE *out);
/*
 * The complete stacks of a merged by function sequence (leaf first), into g,
 * and their order, heaviest first, ties by names (malloc'd *order).  0 or -ENOMEM.
 */
int sp_agg_heaviest(struct sp_agg *a, struct sp_seq_groups *g, uint32_t **order);

/* ---- exports (lib/export.c, lib/export_*.c) ----------------------------- */

/*
 * The CPU time one sample stands for, in ns: 1e9 / the recorded frequency
 * (rounded), else the header's sample interval, else the default frequency's.
 */
uint64_t sp_export_period_ns(const struct sp_spool *s);
/*
 * Sample indexes sorted by timestamp, ties in file order: a malloc'd array
 * of sp_spool_sample_count() entries the caller frees.  0 or -ENOMEM.
 */
int sp_export_time_order(const struct sp_spool *s, uint32_t **order);

/* Byte strings interned to dense ids 0, 1, ... in first-seen order. */
struct sp_intern {
	struct sp_map index; /* hash -> id */
	struct sp_buf keys;  /* every key, back to back */
	size_t *off;         /* key i is keys[off[i], off[i + 1]) */
	size_t n, cap;
};

void sp_intern_init(struct sp_intern *t);
void sp_intern_release(struct sp_intern *t);
/* The id of key[0..len), added when new (*added, may be NULL).  0 or -ENOMEM. */
int sp_intern(struct sp_intern *t, const void *key, size_t len, uint32_t *id, bool *added);
/* The bytes of id; valid until the next sp_intern. */
const void *sp_intern_key(const struct sp_intern *t, uint32_t id, size_t *len);

/* Append s with every byte that is not well-formed UTF-8 replaced by U+FFFD. */
int sp_export_put_utf8(struct sp_buf *b, const char *s);
/* Append s as a quoted JSON string (RFC 8259): escapes, and \ufffd for non-UTF-8 bytes. */
int sp_json_put_string(struct sp_buf *b, const char *s);

int sp_export_pprof(struct sp_agg *a, const struct sp_report_opts *opts, FILE *out);
int sp_export_speedscope(struct sp_agg *a, const struct sp_report_opts *opts, FILE *out);
int sp_export_perf_script(struct sp_agg *a, FILE *out);

/*
 * Append s as XML text (character data or an attribute value): non-UTF-8
 * bytes and the control characters XML 1.0 forbids as U+FFFD, & < > " ' as
 * entities.  0 or -ENOMEM.
 */
int sp_xml_put_text(struct sp_buf *b, const char *s);
/* The interactive flame graph: one self-contained SVG, described in stackpulse-report(1). */
int sp_export_flamegraph(struct sp_agg *a, const struct sp_report_opts *opts, FILE *out);

#endif
