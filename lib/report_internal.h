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

struct sp_agg {
	const struct sp_spool *spool;
	struct sp_symbolizer *sym;
	uint64_t samples;           /* every sample, empty ones included */
	uint64_t empty_samples;     /* stack id 0 */
	uint64_t truncated_samples; /* root-end frame is a truncation marker */
	uint64_t first_ns, last_ns; /* sample timestamps, 0 when no samples */
	size_t nstacks, nframes;
	uint64_t *stack_count;      /* by stack id */
	uint8_t *stack_truncated;   /* by stack id, valid where stack_count > 0 */
	bool lines;                 /* functions are told apart by source line too */
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

/* ---- views (lib/report_text.c, lib/report_folded.c) --------------------- */

int sp_report_text(struct sp_agg *a, const struct sp_report_opts *opts, FILE *out);
int sp_report_folded(struct sp_agg *a, FILE *out);

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
