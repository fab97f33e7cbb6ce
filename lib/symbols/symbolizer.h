/* SPDX-License-Identifier: MIT */
/*
 * The symbolizer's private layout, shared by the files of lib/symbols/ that
 * make up the symbolizer: its tables by module and frame id (id_tables.c),
 * the order in which a frame's sources of names are asked (resolve_order.c),
 * and each source: module files (elf_files.c), ELF symbols (elf_symbols.c),
 * DWARF inline chains (dwarf_inline.c), the answers kept per file address
 * and the symbol cache (file_lookups.c), separate debug files
 * (debug_search.c), kallsyms (kernel_frames.c), perf maps and jitdumps
 * (perfmap_frames.c, frame_pids.c), the spool's stored names (stored_frames.c), a native
 * plug-in (native_frames.c); on top, streamed stacks (streamed_stacks.c),
 * Python processes (python_pids.c) and following a growing spool
 * (followed_spool.c, with frame ids by process: ids_by_pid.c).
 * resolve_order.c calls the sources; a source calls only downward
 * (id_tables.c, the parsers of lib/formats/, and for file_lookups.c the
 * ELF, DWARF and debug-file sources it combines), never resolve_order.c
 * (scripts/check-layers finds no circle).
 */
#ifndef SP_SYMBOLIZER_H
#define SP_SYMBOLIZER_H

#include "symbols/symbols.h"

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <string.h>

#define NO_FILE UINT32_MAX
#define DEFAULT_DEBUG_PATH ":.debug:/usr/lib/debug"

enum file_state {
	FILE_UNOPENED = 0,
	FILE_PROVEN,     /* symbols usable */
	FILE_UNPROVEN,   /* opened, but not the recorded file: never use its symbols */
	FILE_UNREADABLE, /* missing, unreadable, not ELF, or libdwfl refused it */
};

#define DEFAULT_KALLSYMS "/proc/kallsyms"
#define DEFAULT_PERF_MAP_DIR "/tmp"

/* Frame pids for frames outside every module: none seen yet, or several processes. */
#define PID_NONE INT32_MIN
#define PID_MANY (INT32_MIN + 1)

enum source_state {
	SOURCE_UNLOADED = 0,
	SOURCE_LOADED,
	SOURCE_UNUSABLE, /* disabled, denied, missing or rejected: the fallback form */
};

/* Where a process's perf map came from (what to watch for a change). */
enum map_source {
	MAP_NONE = 0,  /* not read: denied, missing, stale, not to be trusted */
	MAP_FILE,      /* its perf-PID.map file */
	MAP_JITDUMP,   /* a jitdump the process mapped */
	MAP_STORED,    /* the perf map lines the spool stores */
	MAP_GIVEN,     /* a file the caller opened (sp_symbolizer_use_perf_map_fd) */
};

/* What identifies one state of a file: it changed when any of these did. */
struct file_stamp {
	uint64_t ino, size;
	int64_t mtime_ns;
	bool exists;
};

/*
 * One process's perf map, looked for on its first frame in anonymous code
 * (state SOURCE_UNLOADED until then, and again once a follower forgets it).
 */
struct proc_map {
	int32_t pid;
	uint8_t state;      /* enum source_state */
	uint8_t source;     /* enum map_source */
	uint8_t verdict;    /* enum sp_perf_map_verdict counted in the stats when looked for */
	bool allowed;       /* the policy let it be looked for */
	const char *module; /* "perf-PID.map", the module shown for its JIT frames */
	struct sp_perf_map map;
	/* Followed spools: the file looked at and the jitdump read, as they were then. */
	struct file_stamp stamp, jit_stamp;
	const char *jit_path;
};

/*
 * One function at an address as DWARF describes it: an inlined function, or
 * the function that holds the code.  Entries of one address are contiguous
 * in elf_names.src, innermost first.
 */
struct src_entry {
	const char *name; /* NULL: the containing function, unknown to DWARF (the ELF symbol names it) */
	const char *file; /* source file, NULL when unknown */
	uint32_t line;    /* 0 when unknown */
	bool is_inline;
};

/* Cached result of one (file, svma) lookup. */
struct sym_hit {
	const char *name; /* NULL: no symbol covers the address */
	uint64_t offset;  /* svma - symbol start */
	uint32_t src;     /* first entry in elf_names.src */
	uint32_t nsrc;    /* entries; 0 when DWARF says nothing of the address */
	bool used;        /* asked for by this symbolizer (not only read from the cache) */
};

/* One code range of a function defined in a CU, to find the function holding an address. */
struct fn_range {
	uint64_t lo, hi; /* [lo, hi), DWARF addresses */
	Dwarf_Die die;   /* the DW_TAG_subprogram: valid as long as its Dwarf */
};

/* The functions of one CU, sorted by lo: built on the CU's first lookup. */
struct cu_funcs {
	struct fn_range *r;
	size_t n, cap;
	int err; /* -ENOMEM while collecting */
};

/* The symbol cache (lib/symbols/symcache.c) of one module file. */
enum symcache_state {
	SYMCACHE_UNREAD = 0,
	SYMCACHE_READ, /* read, or nothing usable there */
	SYMCACHE_OFF,  /* no cache directory, no build-id, or names made another way */
};

/* A lookup's answer, by address, as the cache file keeps it. */
struct file_hit {
	uint64_t svma;
	uint32_t hit; /* index into elf_names.hits */
};

/* Separate debug file search of one module file. */
enum debug_state {
	DEBUG_UNSEARCHED = 0,
	DEBUG_FOUND,     /* debug_path names it */
	DEBUG_NONE,      /* searched, nothing usable */
};

struct elf_names;
struct go_table;

/*
 * One module file, shared by every module (in any process) that maps it.
 * Keyed by build-id when recorded, else by path + inode + dev + size + mtime
 * (so that a module is proven exactly when its file entry is).
 */
struct file_entry {
	uint32_t rep;                /* first module seen with this key: path and identity (sp_sym_file_rep) */
	const char *open_path;       /* rep->path without a " (deleted)" suffix */
	uint8_t state;               /* enum file_state */
	Dwfl *dwfl;                  /* one handle per file, base 0: addresses are svmas */
	Dwfl_Module *mod;
	struct sp_elf_info info;     /* PT_LOAD segments, for modules without a recorded bias */
	struct sp_symtab symtab;     /* built on the first lookup */
	bool symtab_built;
	struct sp_map cache;         /* svma -> index into elf_names.hits */
	struct elf_names *owner;     /* for the debug file search, called back by libdwfl */
	const char *debuglink;       /* the file's .gnu_debuglink name, or NULL */
	uint32_t debuglink_crc;
	uint8_t debug_state;         /* enum debug_state */
	const char *debug_path;      /* the separate debug file in use, or NULL */
	bool debug_cached;           /* read from its decompressed copy (counted once) */
	bool debug_bounded;          /* its sections past the inflation bounds were counted */
	bool debug_debuginfod;       /* debug_path came from a debuginfod server */
	bool own_dwarf;              /* the proven image has DWARF of its own (.debug_info) */
	struct sp_map cu_index;      /* CU DIE offset -> index into elf_names.cus */
	/* CUs by their address ranges, for files without .debug_aranges (built on first need) */
	struct cu_range *cu_ranges;
	size_t ncu_ranges;
	bool cu_ranges_built;
	int given_fd;                /* +1: an image handed over by sp_symbolizer_use_file, or 0 */
	char *map_files;             /* the /proc/PID/map_files path tried, or NULL */
	uint8_t symcache;            /* enum symcache_state */
	/* sp_symcache_witness of the proven image and of debug_path's file; 0: unknown */
	uint64_t witness, debug_witness;
	bool symcache_new;           /* a lookup found what the cache file lacks */
	struct file_hit *fhits;      /* every hit of this file, for the cache file */
	size_t nfhits, fhits_cap;
	uint8_t go_state;            /* enum go_table_state */
	struct go_table *go;         /* Go's function table (go_names.c), or NULL */
};

/* One address range of a CU (DW_AT_ranges / low_pc-high_pc), in DWARF addresses. */
struct cu_range {
	uint64_t lo, hi;
	Dwarf_Die *cu;   /* libdwfl's, lives as long as the file's Dwfl */
	Dwarf_Addr bias;
};

/* Frame ids by process (ids_by_pid.c): a list per pid, in the order added. */
struct pid_ids {
	int32_t pid;
	uint32_t *ids;
	size_t n, cap;
};

struct pid_ids_set {
	struct pid_ids *lists;
	size_t n, cap;
	struct sp_map index; /* pid -> index into lists */
};

void sp_pid_ids_init(struct pid_ids_set *set);
void sp_pid_ids_release(struct pid_ids_set *set);
/* Append id to pid's list.  0 or -ENOMEM. */
int sp_pid_ids_add(struct pid_ids_set *set, int32_t pid, uint32_t id);
/* pid's list, or NULL when it has none. */
struct pid_ids *sp_pid_ids_get(struct pid_ids_set *set, int32_t pid);

/*
 * Resolved frames by frame id, in blocks of 1 << FRAME_BLOCK_SHIFT that never
 * move, so what sp_symbolizer_resolve hands out stays put while a followed
 * spool grows.
 */
#define FRAME_BLOCK_SHIFT 10
#define FRAME_BLOCK (1u << FRAME_BLOCK_SHIFT)

/* Per-frame bits of a followed spool's symbolizer: perf map counts to take back when resolved again. */
enum frame_counted {
	COUNTED_MAP_DENIED = 1u << 0,   /* stats.perf_map_frames_denied */
	COUNTED_MAP_UNMAPPED = 1u << 1, /* stats.perf_map_frames_unmapped */
};

/*
 * What a symbolizer built on a tail (sp_tail_symbolizer) has taken in, and
 * what it keeps to take in the next batch in proportion to its size.
 */
struct sym_follow {
	size_t nexecs, nowners, npmlines, nsymframes; /* records taken in */
	struct pid_ids_set modules;  /* module ids by process: a new one over an earlier one */
	struct pid_ids_set map_deps; /* frames whose names a process's perf map decides */
	uint8_t *counted;            /* by frame id: enum frame_counted */
};

/*
 * The kernel frames' source of names (kernel_frames.c): kallsyms, read for
 * the kernel frames of the spool at once, and again for those a followed
 * spool brings.  What it borrows from the symbolizer is given once, by
 * sp_sym_kernel_init.
 */
struct kernel_names {
	const struct sp_spool *spool;
	const char *kallsyms_path;         /* opts.kallsyms_path: NULL for the running kernel's */
	bool off;                          /* opts.no_kernel_symbols */
	struct sp_arena *strings;          /* the symbolizer's: names made here */
	struct sp_symbolizer_stats *stats; /* the symbolizer's: kallsyms_* and kernel_frames_* */
	struct sp_kallsyms *ksyms;   /* sparse: the symbols of this spool's kernel frames */
	uint8_t state;               /* enum source_state */
	size_t upto;                 /* kernel frames below this id were asked of kallsyms */
	struct sp_kallsyms **more;   /* read again for kernel frames a followed spool brought */
	size_t nmore;
};

/*
 * The names the spool stores as its source (stored_frames.c): chains that
 * `symbolize` or the recorder's end wrote, used as they are.  What it
 * borrows from the symbolizer is given once, by sp_sym_stored_init.
 */
struct stored_names {
	const struct sp_spool *spool;
	const struct sp_symbolizer_opts *opts; /* stored_symbols, no_kernel_symbols, perf_map_policy, no_inline */
	struct sp_symbolizer_stats *stats;     /* the symbolizer's */
	struct inline_chains *chains;          /* the symbolizer's */
	uint32_t *by_frame; /* by frame id: the spool's symbol record, or NULL (lib/spool/spool_symrec.c) */
};

/*
 * A native symbolizer plug-in as the source of names of file-backed modules
 * (native_frames.c), in place of ELF/DWARF.  What it borrows from the
 * symbolizer is given once, by sp_sym_setup_native.
 */
struct native_names {
	const struct sp_spool *spool;
	struct sp_arena *strings;          /* the symbolizer's: names copied here */
	struct sp_symbolizer_stats *stats; /* the symbolizer's: native_backend_errors, frames_with_lines */
	struct inline_chains *chains;      /* the symbolizer's */
	bool no_inline;                    /* opts.no_inline */
	struct sp_native_groups *groups;   /* NULL: no plug-in */
};

/*
 * The perf maps' source of names (perfmap_frames.c): one map per process,
 * read on its first frame in anonymous code, under the map policy.  What it
 * borrows from the symbolizer is given once, by sp_sym_perf_maps_init.
 */
struct perf_map_names {
	const struct sp_spool *spool;
	const struct sp_symbolizer_opts *opts; /* perf_map_policy, perf_map_dir, no_demangle */
	struct sp_arena *strings;          /* the symbolizer's: names made here */
	struct sp_symbolizer_stats *stats; /* the symbolizer's: perf_map* and python_runtime_frames */
	struct sym_follow *follow;         /* the symbolizer's: counted frames, map dependencies */
	bool following;                    /* a tail is followed: stamps kept, dependencies noted */
	struct proc_map *procs;
	size_t nprocs, procs_cap;
	struct sp_map index;               /* pid -> index into procs */
	int32_t *pids;                     /* SP_PERF_MAPS_PIDS: sorted copy of opts->perf_map_pids */
	/*
	 * The spool's stored perf map lines by pid, indexed as they come (a
	 * followed spool grows): each pid's lines in spool order, chained
	 * through line_next from line_first to line_last.
	 */
	struct sp_map line_first, line_last; /* pid -> index into spool->pmlines */
	uint32_t *line_next;               /* by line: the pid's next line, or UINT32_MAX */
	size_t nlines_indexed, line_next_cap;
	/*
	 * The addresses perf maps will be asked about, gathered from the
	 * spool's frames when the first map is read, so that a map keeps only
	 * the lines covering them (docs/DESIGN.md, decision 9); a follower's
	 * spool grows, so it keeps every line and gathers nothing.  want_addr
	 * holds the frames of anonymous modules, by process (want_pid, sorted,
	 * then address); loose_addr those outside every module, which may be
	 * any process's (sorted).
	 */
	bool wants_gathered;
	int32_t *want_pid;
	uint64_t *want_addr;
	size_t nwant;
	uint64_t *loose_addr;
	size_t nloose;
};

/* Resolved frames of inline chains, allocated in blocks that never move. */
struct chain_block {
	struct chain_block *next;
	size_t used, cap;
	struct sp_resolved_frame f[];
};

/*
 * The module files' source of names: each file opened and proven once
 * (elf_files.c), its ELF symbols (elf_symbols.c) and DWARF chains and lines
 * (dwarf_inline.c), the answers kept per file address and in the symbol
 * cache (file_lookups.c), separate debug files (debug_search.c).  What it
 * borrows from the symbolizer is given once, by sp_sym_elf_init.
 */
struct elf_names {
	const struct sp_spool *spool;
	const struct sp_symbolizer_opts *opts; /* no_demangle */
	struct sp_arena *strings;          /* the symbolizer's: names made here */
	struct sp_symbolizer_stats *stats; /* the symbolizer's */
	Dwfl_Callbacks callbacks;    /* must outlive every Dwfl */
	char *debuginfo_path;        /* pointed to by callbacks (alternate files, debuginfod) */
	const char *debug_dirs;      /* searched first for separate debug files, or NULL */
	bool debuginfod;             /* DEBUGINFOD_URLS is set: ask servers last */
	char *cache_dir;             /* decompressed debug file copies, or NULL */
	uint64_t cache_max;          /* the cache's size bound, bytes (sp_cache_max_bytes) */
	char *cache_dir_refused;     /* the cache directory when sp_cache_dir_check refused it */
	struct sp_budget_account budget; /* this symbolizer's pass: what it inflated, read for CRCs */
	struct file_entry *files;
	size_t nfiles, files_cap;
	struct sp_map file_keys;     /* file key hash -> index into files (probing past collisions) */
	struct sym_hit *hits;
	size_t nhits, hits_cap;
	struct src_entry *src;       /* DWARF functions of every hit, by hit->src */
	size_t nsrc, src_cap;
	struct cu_funcs *cus;        /* the function ranges of every CU looked into */
	size_t ncus, cus_cap;
};

/* The inline chains of resolved frames, which the sources of names fill. */
struct inline_chains {
	/* By frame id: the inline chain (innermost first, the frame's copy last), or NULL. */
	struct sp_resolved_frame **by_frame;
	uint32_t *len;
	struct chain_block *blocks;
	uint64_t *inline_frames; /* the symbolizer's stats.inline_frames */
	uint64_t *inline_cut;    /* the symbolizer's stats.inline_frames_cut */
};

struct sp_symbolizer {
	const struct sp_spool *spool;
	struct sp_symbolizer_opts opts;
	struct sp_arena strings;
	const char *printable_seen[61]; /* strings found printable, by address (printable_frame) */
	struct elf_names elf;        /* module files: ELF, DWARF, debug files, symbol cache */
	uint32_t *module_file;       /* by module id: file index or NO_FILE */
	const char **module_name;    /* by module id: display basename */
	size_t nmodules, modules_cap;
	struct sp_resolved_frame **frame_blocks; /* by frame id (sp_sym_frame) */
	size_t nframe_blocks;
	uint8_t *resolved;                /* by frame id: the frame is filled */
	size_t nframes, frames_cap;       /* frames taken in; room in every by-frame-id array */
	size_t nsamples, nstacks;         /* samples and stack nodes taken in */
	struct inline_chains chains; /* by frame id (id_tables.c) */
	struct kernel_names kernel;  /* kallsyms (kernel_frames.c) */
	struct perf_map_names perf_maps; /* perf maps and jitdumps (perfmap_frames.c) */
	int32_t *frame_pid;          /* by frame id: the one process whose samples hold it */
	int32_t *stack_pid;          /* following: by stack node, its samples' process (or PID_MANY) */
	size_t stack_pid_cap;
	struct stored_names stored_names; /* the spool's symbol records (stored_frames.c) */
	uint8_t *frame_src;          /* by frame id: enum sp_frame_src */
	struct sp_symbolizer_stats stats;
	struct native_names native;      /* a plug-in in place of ELF/DWARF (native_frames.c) */
	struct sp_stack_cache *stacks;   /* streamed (pid, stack id) pairs (lib/symbols/streamed_stacks.c) */
	struct sp_tail *tail;            /* the tail followed (sp_tail_symbolizer), or NULL */
	struct sym_follow follow;        /* with a tail */
};

/* The resolved frame of frame_id (below sym->nframes). */
static inline struct sp_resolved_frame *sp_sym_frame(const struct sp_symbolizer *sym,
						     uint32_t frame_id)
{
	return &sym->frame_blocks[frame_id >> FRAME_BLOCK_SHIFT][frame_id & (FRAME_BLOCK - 1)];
}

/* The module that gave f its path and identity. */
static inline const struct sp_module *sp_sym_file_rep(const struct elf_names *names,
						      const struct file_entry *f)
{
	/* By id: a followed spool's module array moves as it grows. */
	return sp_spool_module(names->spool, f->rep);
}

/* ---- growing with a followed spool (id_tables.c, resolve_order.c) ------ */

/*
 * Take in modules up to n (indexed, files shared by key, display names) and
 * frames up to n: room in every by-id array.  0 or -ENOMEM (what was taken
 * in stays).
 */
int sp_sym_take_modules(struct sp_symbolizer *sym, size_t n);
int sp_sym_take_frames(struct sp_symbolizer *sym, size_t n);
/*
 * Resolve frame_id again if it was resolved (its sources changed): *changed
 * when its chain now differs in any field.  The frame's earlier counts are
 * taken back from the stats first.  0 or -ENOMEM (the frame is then left
 * unresolved, to be resolved on its next use).
 */
int sp_sym_resolve_again(struct sp_symbolizer *sym, uint32_t frame_id, bool *changed);

/* Does m name a file to open?  Kernel, anonymous and pseudo-path modules do not. */
static inline bool sp_sym_is_vdso(const char *path)
{
	return !strcmp(path, "[vdso]");
}

static inline bool sp_sym_has_file(const struct sp_module *m)
{
	if (m->flags & (SP_MODULE_KERNEL | SP_MODULE_ANON))
		return false;
	/*
	 * Pseudo-paths ([heap], anon:...) name no file to open; [vdso] stands
	 * for our own vDSO, used when its build-id proves it the recorded one.
	 */
	return m->path && (m->path[0] == '/' || (sp_sym_is_vdso(m->path) && m->build_id_len));
}

/* ---- inline chain storage (id_tables.c) -------------------------------- */

/* Room for n resolved frames that stay where they are for the symbolizer's life; NULL: no memory. */
struct sp_resolved_frame *sp_sym_chain_alloc(struct inline_chains *ch, size_t n);
/* frame_id's inline chain is c[0..n), innermost first: kept and counted. */
void sp_sym_chain_set(struct inline_chains *ch, uint32_t frame_id, struct sp_resolved_frame *c,
		      size_t n);

/* ---- module files (elf_files.c) ---------------------------------------- */

/* Give names the symbolizer's spool, options, strings and stats, which outlive it. */
void sp_sym_elf_init(struct elf_names *names, const struct sp_spool *s,
		     const struct sp_symbolizer_opts *opts, struct sp_arena *strings,
		     struct sp_symbolizer_stats *stats);

/*
 * Open, prove and hand f to libdwfl, once; the outcome is kept in f->state
 * (FILE_PROVEN: f->dwfl and f->mod are usable) and counted.
 */
void sp_sym_open_file(struct elf_names *names, struct file_entry *f);
/* names->files moved (grown): point libdwfl's userdata of each open file at its new place. */
void sp_sym_files_moved(struct elf_names *names);
/* Static address of a frame in its module's file, or false when it has none. */
bool sp_sym_frame_svma(const struct sp_module *m, const struct file_entry *f,
		       const struct sp_frame *fr, uint64_t *svma);

/* ---- ELF symbols (elf_symbols.c) --------------------------------------- */

/*
 * The ELF symbol holding svma in proven file f: hit->name (demangled unless
 * no_demangle, symbol version cut) and hit->offset; hit->name NULL when no
 * symbol holds it.  0 or -ENOMEM.
 */
int sp_sym_elf_symbol(struct elf_names *names, struct file_entry *f, uint64_t svma,
		      struct sym_hit *hit);

/* ---- Go's function table (go_names.c) --------------------------------- */

enum go_table_state {
	GO_TABLE_UNREAD = 0,
	GO_TABLE_READ,
	GO_TABLE_NONE, /* no .gopclntab, or not one this reader understands */
};

/*
 * The Go function holding svma in proven file f, from its .gopclntab:
 * hit->name and hit->offset, and in names->src the functions inlined at
 * svma (Go 1.18+, from the inline tree moduledata leads to), innermost
 * first, then the function's own entry, each with its source file and line;
 * nothing when f has no such table or no function holds svma.
 * For a binary without ELF symbols or DWARF.  0 or -ENOMEM.
 */
int sp_sym_go_symbol(struct elf_names *names, struct file_entry *f, uint64_t svma,
		     struct sym_hit *hit);

/* ---- DWARF inline chains and lines (dwarf_inline.c) -------------------- */

/* Append e to names->src.  0 or -ENOMEM. */
int sp_sym_push_src(struct elf_names *names, const struct src_entry *e);
/*
 * The functions DWARF places at svma in f, innermost first, into names->src
 * (hit->src, hit->nsrc; 0 entries without DWARF).  0 or -ENOMEM.
 */
int sp_sym_lookup_source(struct elf_names *names, struct file_entry *f, uint64_t svma,
			 struct sym_hit *hit);

/* ---- separate debug files (debug_search.c) ----------------------------- */

/*
 * Count the compressed sections of the file at path skipped for the
 * inflation bounds, as ist counted them (the first such path is kept for
 * the warning).
 */
void sp_sym_note_not_inflated(struct elf_names *names, const struct sp_inflate_stats *ist,
			      const char *path);
/* libdwfl's find_debuginfo callback (Dwfl_Callbacks): the search of lib/symbols/debugfile.c, counted. */
int sp_sym_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
			  Dwarf_Addr base, const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name);
/*
 * Is f's separate debug file on this machine (not from debuginfod)?  Found,
 * it is counted and kept as the callback would.
 */
bool sp_sym_debug_file_found_again(struct elf_names *names, struct file_entry *f);

/* ---- answers per (file, address), the symbol cache (file_lookups.c) ---- */

/* The names of svma in proven file f, found once: *out lives as long as the symbolizer. */
int sp_sym_lookup_symbol(struct elf_names *names, struct file_entry *f, uint64_t svma,
			 const struct sym_hit **out);
/* Write f's answers to its symbol cache file when worth keeping; failures are silent. */
void sp_sym_symcache_save(struct elf_names *names, struct file_entry *f);

/* ---- kernel frames (kernel_frames.c) ----------------------------------- */

/* Set k up over the symbolizer's spool, options, strings and stats, which outlive it. */
void sp_sym_kernel_init(struct kernel_names *k, const struct sp_spool *s,
			const struct sp_symbolizer_opts *opts, struct sp_arena *strings,
			struct sp_symbolizer_stats *stats);
void sp_sym_kernel_release(struct kernel_names *k);
/*
 * Name kernel frame frame_id from kallsyms (read once, and again for frames a
 * followed spool brought since), else [kernel]+0xADDR.  nframes: the frames
 * taken in so far, all asked for at the next read.  0 or -ENOMEM.
 */
int sp_sym_resolve_kernel(struct kernel_names *k, size_t nframes, uint32_t frame_id,
			  const struct sp_frame *fr, struct sp_resolved_frame *rf);
/* 1 and *out when frame fr (resolved, named from kallsyms) has its symbol in the sets read. */
int sp_sym_kernel_frame_source(const struct kernel_names *k, const struct sp_frame *fr,
			       struct sp_frame_source *out);

/* ---- anonymous code: perf maps (frame_pids.c, perfmap_frames.c) ------- */

/* sym->frame_pid: the one process whose samples hold each frame (frame_pids.c).  0 or -ENOMEM. */
int sp_sym_compute_frame_pids(struct sp_symbolizer *sym);
/*
 * Fold samples [first, end) into sym->frame_pid (when computed): the frames
 * whose process changed, resolved ones outside every module, appended to
 * *changed (*n entries, malloc'd).  0 or -ENOMEM.
 */
int sp_sym_frame_pids_add(struct sp_symbolizer *sym, size_t first, size_t end,
			  uint32_t **changed, size_t *n, size_t *cap);
/* Set maps up over the symbolizer's spool, options, strings, stats and follower state. */
void sp_sym_perf_maps_init(struct perf_map_names *maps, const struct sp_spool *s,
			   const struct sp_symbolizer_opts *opts, struct sp_arena *strings,
			   struct sp_symbolizer_stats *stats, struct sym_follow *follow);
void sp_sym_perf_maps_release(struct perf_map_names *maps);
/* Name frame_id, anonymous code of pid, from its perf map; rf untouched when it cannot. */
int sp_sym_resolve_perf_map(struct perf_map_names *maps, int32_t pid, uint32_t frame_id,
			    const struct sp_frame *fr, bool in_anon, struct sp_resolved_frame *rf);
/* Flag a Python runtime frame that a perf map's py:: frames stand in for. */
int sp_sym_flag_python_runtime(struct sp_symbolizer *sym, uint32_t frame_id,
			       const struct sp_frame *fr);
/* Copy o->perf_map_pids (the caller's), sorted, into maps->pids, and point o at it.  0 or -ENOMEM. */
int sp_sym_setup_perf_map_pids(struct perf_map_names *maps, struct sp_symbolizer_opts *o);
/*
 * Followed spools: has the file pid's perf map was read from (or looked for
 * and not used) changed since?  False when it was not looked for.
 */
bool sp_sym_perf_map_changed(struct perf_map_names *maps, int32_t pid);
/*
 * Forget pid's perf map, to be looked for again on the next need, with its
 * counts in the stats; the frames whose names it decided move to *frames
 * (*n, malloc'd, NULL when none), to be resolved again.  0 or -ENOMEM.
 */
int sp_sym_perf_map_forget(struct perf_map_names *maps, int32_t pid, uint32_t **frames,
			   size_t *n);
/* 1 and *out when frame fr of pid (resolved, named from a perf map) has its line in pid's loaded map. */
int sp_sym_perf_map_frame_source(const struct perf_map_names *maps, int32_t pid,
				 const struct sp_frame *fr, struct sp_frame_source *out);

/* ---- the spool's stored names (stored_frames.c) ------------------------ */

/* Set st up over the symbolizer's spool, options, stats and chains (no records indexed yet). */
void sp_sym_stored_init(struct stored_names *st, const struct sp_spool *s,
			const struct sp_symbolizer_opts *opts, struct sp_symbolizer_stats *stats,
			struct inline_chains *chains);
/*
 * Take frame_id's chain from the spool's symbol records: *done when it was
 * used; *src (the frame's enum sp_frame_src) says whether it was.
 */
int sp_sym_resolve_stored(struct stored_names *st, uint32_t frame_id,
			  struct sp_resolved_frame *rf, uint8_t *src, bool *done);

/* ---- a native plug-in (native_frames.c) -------------------------------- */

/*
 * Set nn up over the symbolizer's spool, strings, stats and chains, and
 * o->native's groups for modules [0, nmodules) (the plug-in is copied;
 * o->native is cleared).  0, -ENOMEM or the plug-in's error.
 */
int sp_sym_setup_native(struct native_names *nn, const struct sp_spool *s,
			struct sp_symbolizer_opts *o, struct sp_arena *strings,
			struct sp_symbolizer_stats *stats, struct inline_chains *chains,
			size_t nmodules);
/* Give modules [first, nmodules) their groups (a followed spool's new ones).  0 or -ENOMEM. */
int sp_sym_native_take_modules(struct native_names *nn, size_t first, size_t nmodules);
/* Name a file-backed module's frame through the plug-in; rf untouched when it knows nothing. */
int sp_sym_resolve_native(struct native_names *nn, uint32_t frame_id,
			  const struct sp_frame *fr, struct sp_resolved_frame *rf);

/* ---- streamed stacks' cache (id_tables.c; filled by streamed_stacks.c) -- */

/* One streamed (pid, stack id) pair: its frame ids, leaf first, in cache->ids. */
struct stack_entry {
	uint32_t off, len;
};

struct sp_stack_cache {
	struct sp_map index; /* (pid << 32 | stack id) -> entry: the key is exact, no probing */
	struct stack_entry *entries;
	size_t nentries, entries_cap;
	uint32_t *ids;
	size_t nids, ids_cap;
	uint64_t hits, misses;
};

#endif
