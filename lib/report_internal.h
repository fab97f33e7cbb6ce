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

/* A function of the flat table: one (name, module) pair. */
struct sp_agg_func {
	const char *name, *module; /* borrowed from the symbolizer */
	uint64_t self;             /* samples whose leaf frame is this function */
	uint64_t total;            /* samples whose stack contains it (once per stack) */
	uint32_t name_id;          /* interned name alone (folded output merges by name) */
	uint32_t stamp;            /* last stack id counted in total, plus one */
};

/*
 * A spool aggregated on interned ids: sample counts per stack id, every frame
 * used by a sampled stack resolved once and mapped to a function id.  Marker
 * frames (truncation) map to SP_AGG_NO_FUNC and count in no function.
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
	uint32_t *frame_func;       /* by frame id: function id or SP_AGG_NO_FUNC */
	struct sp_agg_func *funcs;
	size_t nfuncs, funcs_cap;
	const char **names;         /* by name id */
	size_t nnames, names_cap;
	struct sp_map func_index, name_index; /* content hash -> id */
	uint32_t *path;             /* scratch: one stack's frame ids, leaf first */
	size_t path_cap;
};

/* Function of a frame of a sampled stack; SP_AGG_NO_FUNC for markers and bad ids. */
static inline uint32_t sp_agg_frame_func(const struct sp_agg *a, uint32_t frame_id)
{
	uint32_t f = frame_id < a->nframes ? a->frame_func[frame_id] : SP_AGG_NO_FUNC;
	return f < a->nfuncs ? f : SP_AGG_NO_FUNC;
}

/* Count, resolve and attribute every sample.  0, -ENOMEM or a resolve error. */
int sp_agg_build(struct sp_agg *a, const struct sp_spool *s, struct sp_symbolizer *sym);
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

#endif
