/* SPDX-License-Identifier: MIT */
/* stackpulse's public API, the symbolizer: frames resolved to functions, inline chains, lines; symbols stored in a spool.  Include <stackpulse.h>, not this file. */
#ifndef STACKPULSE_SYMBOLIZER_H
#define STACKPULSE_SYMBOLIZER_H

#ifndef STACKPULSE_H
#error "include stackpulse.h, which includes this file"
#endif

/* ---------------------------------------------------------------------- */
/* Symbolizer                                                             */

enum sp_frame_kind {
	SP_KIND_NATIVE = 0,
	SP_KIND_KERNEL = 1,
	SP_KIND_PYTHON = 2,
	SP_KIND_UNKNOWN = 3,
	SP_KIND_TRUNCATED = 4,
};

enum sp_symbol_origin {
	SP_ORIGIN_ELF = 0,
	SP_ORIGIN_PERF_MAP = 1,
	SP_ORIGIN_KERNEL_SYMBOLS = 2,
	SP_ORIGIN_ADDRESS_ONLY = 3,
};

/* Flags of a resolved frame: what views may do with it. */
enum sp_resolved_flags {
	/* A native frame of the Python runtime (see sp_symbolizer_resolve). */
	SP_RFRAME_PYTHON_RUNTIME = 1u << 0,
	/* Views hide it by default (sp_report_opts.show_runtime shows it). */
	SP_RFRAME_HIDDEN_DEFAULT = 1u << 1,
	SP_RFRAME_JIT = 1u << 2,       /* named from a perf map, not a py:: entry */
	SP_RFRAME_INLINE = 1u << 3,    /* an inlined function (sp_symbolizer_resolve_all) */
	SP_RFRAME_TRUNCATED = 1u << 4, /* the truncation marker */
};

/*
 * A displayable frame.  Strings live as long as the symbolizer.  A native
 * frame whose module has DWARF carries its source position: for the
 * innermost function of a raw frame, the line of the sampled (or calling)
 * instruction; for a function that an inlined function was inlined into,
 * the line of that inlined call.
 */
struct sp_resolved_frame {
	const char *name;   /* function, or "module+0xOFFSET", or "[truncated]" */
	const char *module; /* display name of the module (basename), or "" */
	const char *file;   /* source file (as DWARF names it, usually absolute), or NULL */
	uint32_t line;      /* 0 when unknown */
	uint8_t kind;       /* enum sp_frame_kind */
	uint8_t origin;     /* enum sp_symbol_origin */
	uint32_t flags;     /* enum sp_resolved_flags; SP_RFRAME_INLINE: an inlined function */
	uint64_t pc;        /* abs_ip of the raw frame */
	uint64_t symbol_offset; /* pc - symbol start, when named; 0 for inline frames */
};

/* Which processes' perf maps (/tmp/perf-PID.map) may name their anonymous code. */
enum sp_perf_map_policy {
	SP_PERF_MAPS_ALL = 0,    /* every process (the default) */
	SP_PERF_MAPS_PYTHON = 1, /* processes whose latest exec marker says Python runtime */
	SP_PERF_MAPS_NONE = 2,   /* none: anonymous code keeps its address form */
	SP_PERF_MAPS_PIDS = 3,   /* the processes listed in opts.perf_map_pids only */
};

/*
 * A module as a native symbolizer plug-in sees it:
 * one file-backed user module of the process group, its runtime range and
 * its image base, so the plug-in needs no /proc and no layout parsing.
 */
struct sp_sym_module {
	const struct sp_module *module; /* the recorded module (build-id, inode, ...), borrowed */
	const char *path;               /* file path, without the " (deleted)" suffix */
	uint64_t avma_start, avma_end;  /* runtime addresses [start, end) */
	/*
	 * avma - svma for this mapping (its image base), from the
	 * PT_LOAD segment the recorder found for it: svma = addr - image_base.
	 * Without has_image_base (the recorder could not read the file), use
	 * the file offset: addr - avma_start + module->file_offset.
	 */
	uint64_t image_base;
	bool has_image_base;
};

/* One function a plug-in found at an address; strings need only last until its next call. */
struct sp_native_symbol {
	const char *name;       /* required: a plug-in entry without a name is ignored */
	const char *file;       /* source file, or NULL */
	uint32_t line;          /* 0 when unknown */
	uint64_t symbol_offset; /* svma - the function's start, 0 when unknown */
};

/*
 * A native symbolizer plug-in (a factory of per-module-group instances):
 * it names the addresses of file-backed user modules in place of the
 * built-in ELF/DWARF backend, while kernel frames (kallsyms), perf-map
 * frames and the address fallback stay built in.  The
 * symbolizer makes one instance per module group: the file-backed modules
 * of one process that do not overlap (a mapping recorded over an earlier one
 * starts a new group), so each instance sees one consistent address space.
 * Instances are made on the group's first frame, called from the thread
 * that resolves, and freed with the symbolizer.  A callback returning
 * non-zero (e.g. -errno) leaves the frames it concerns in the address form
 * and is counted in stats.native_backend_errors; -ENOMEM fails the resolve.
 */
struct sp_native_backend {
	void *ctx; /* passed to create, owned by the caller; must outlive the symbolizer */
	/* The factory: a new instance for a group of pid's modules into *instance.  0 or -errno. */
	int (*create)(void *ctx, int32_t pid, void **instance);
	/*
	 * The group's modules (n >= 1), once, before any symbolize_one.  The
	 * array and its strings are borrowed for this call only; the module
	 * pointers live as long as the spool.
	 */
	int (*set_modules)(void *instance, const struct sp_sym_module *modules, size_t n);
	/*
	 * Name addr (a runtime address, abs_ip of the raw frame, inside one of
	 * the group's modules): up to max functions into out, the innermost
	 * inlined function first and the function that holds the code last;
	 * *n = how many (0: nothing known, the frame keeps the module+0xOFFSET
	 * form).  Called once per distinct frame; results are copied.
	 */
	int (*symbolize_one)(void *instance, uint64_t addr, struct sp_native_symbol *out,
			     size_t max, size_t *n);
	void (*free)(void *instance); /* may be NULL */
};

/* Which symbol records stored in the spool (stackpulse symbolize) a symbolizer uses. */
enum sp_stored_symbols {
	SP_STORED_ALL = 0,   /* every stored frame (the default) */
	SP_STORED_NAMED = 1, /* named ones; address-only frames are resolved again */
	SP_STORED_NONE = 2,  /* none: every frame is resolved from the files */
};

/* Zero-initialised options are the defaults.  Strings are copied by sp_symbolizer_new. */
struct sp_symbolizer_opts {
	bool no_demangle;
	bool no_kernel_symbols;    /* kernel frames keep the [kernel]+0xADDRESS form */
	/*
	 * A saved kallsyms file of the recording's boot; NULL reads
	 * /proc/kallsyms, and only when the running kernel's release is the
	 * recorded one (a reboot into the same release is not detected: the
	 * kernel's load address changes, so use a copy saved at recording time).
	 */
	const char *kallsyms_path;
	const char *perf_map_dir;  /* where perf-PID.map files are read; NULL: /tmp */
	uint32_t perf_map_policy;  /* enum sp_perf_map_policy */
	/*
	 * Inlined functions are not frames of their own: sp_symbolizer_resolve_all
	 * gives the containing function alone, at the line where the inlined
	 * code sits in it.
	 */
	bool no_inline;
	/*
	 * Colon-separated absolute directories searched first for separate
	 * debug files; NULL reads $STACKPULSE_DEBUG_DIRS.
	 */
	const char *debug_dirs;
	/*
	 * Where decompressed copies of debug files with compressed DWARF are
	 * kept (DIR/debug/BUILDID.debug, made on first use); NULL reads
	 * $STACKPULSE_CACHE_DIR, else $XDG_CACHE_HOME/stackpulse, else
	 * $HOME/.cache/stackpulse; "" keeps no copies.
	 */
	const char *cache_dir;
	/*
	 * The cache's largest total size in bytes (its debug/ and symbols/
	 * files): least recently used files go first when a new one would
	 * exceed it.  0 reads $STACKPULSE_CACHE_SIZE, else SP_CACHE_DEFAULT_MAX
	 * (2 GiB).
	 */
	uint64_t cache_max_bytes;
	/*
	 * With SP_PERF_MAPS_PIDS, the only processes whose perf maps are read
	 * npids pids, copied.  See sp_spool_python_pids for the pids a
	 * spool records as Python runtimes.
	 */
	const int32_t *perf_map_pids;
	size_t perf_map_npids;
	/*
	 * A native symbolizer plug-in in place of the built-in ELF/DWARF backend
	 * (the struct is copied; its ctx is not).  NULL: the built-in backend,
	 * which debug_dirs and no_inline configure.
	 */
	const struct sp_native_backend *native;
	/*
	 * enum sp_stored_symbols.  A stored frame is used as stored, without
	 * opening any file, except where these options exclude its source:
	 * no_demangle ignores every stored frame (they hold demangled names),
	 * no_kernel_symbols the kallsyms-named ones, a perf_map_policy other
	 * than ALL the perf-map-named ones; no_inline keeps a stored chain's
	 * last frame.
	 */
	uint32_t stored_symbols;
};

struct sp_symbolizer;

/*
 * Build a symbolizer for a loaded spool.  Module files are opened lazily,
 * once per file (libdwfl), and proven to be the recorded file (build-id, or
 * inode + size + mtime) before their symbols are used.  Symbols and DWARF
 * come from the file itself or from its separate debug file, looked for in
 * opts->debug_dirs (else $STACKPULSE_DEBUG_DIRS) by build-id
 * (DIR/.build-id/xx/rest.debug) and by .gnu_debuglink name (DIR/LINK,
 * DIR/FILEDIR/LINK), then in /usr/lib/debug/.build-id, then by debug link
 * beside the file, in its .debug/ and under /usr/lib/debug/FILEDIR; last,
 * when $DEBUGINFOD_URLS is set, from debuginfod servers (libdw loads
 * libdebuginfod.so.1 at run time).  A debug file is used only when its
 * build-id is the module file's (the debug link's CRC-32 when the file has
 * no build-id); others are refused and counted in the stats.  The spool
 * must outlive the symbolizer; opts may be NULL (defaults).  Errors:
 * -SP_E_BAD_ARG (no spool, an unknown perf_map_policy), -ENOMEM.
 */
int sp_symbolizer_new(const struct sp_spool *s, const struct sp_symbolizer_opts *opts,
		      struct sp_symbolizer **out);

/*
 * Resolve one interned frame (cached per frame id).  *out is borrowed and
 * lives as long as the symbolizer.  Resolution order (docs/DESIGN.md, decision 9):
 * a frame in anonymous code (an SP_MODULE_ANON module, or no module) is
 * looked up in its process's perf map, allowed by the policy and checked
 * (a regular file, not writable by group or others, not older than the
 * process when the recording saw its exec); "py::FUNC:FILE" entries give
 * SP_KIND_PYTHON frames, others SP_RFRAME_JIT ones, both SP_ORIGIN_PERF_MAP.
 * A file-backed frame gets the ELF symbols of its proven module file (or,
 * when they have none for the address, its DWARF subprogram's name), and
 * its source position from DWARF; when the address is inlined code, *out is
 * the function that holds it, the last of sp_symbolizer_resolve_all's
 * frames.  A kernel frame gets its kallsyms name (SP_ORIGIN_KERNEL_SYMBOLS, module
 * "[kernel.kallsyms]" or "[MODULE]"); kallsyms is read once, on the first
 * kernel frame, keeping only the symbols the spool's kernel frames need.
 * Otherwise the module+0xOFFSET, [kernel]+0xADDRESS or [unknown]+0xADDRESS
 * fallback.  With opts.native, a file-backed frame is named by the plug-in
 * instead of ELF/DWARF (struct sp_native_backend).  A native frame of a
 * module sp_is_python_module names, in a process an exec marker ever showed
 * as a Python runtime and whose perf map the policy allows and could be read,
 * gets SP_RFRAME_PYTHON_RUNTIME | SP_RFRAME_HIDDEN_DEFAULT (views may
 * hide it): its py:: frames stand in for the interpreter's, while without
 * a perf map nothing could, so nothing is flagged.  Errors: -SP_E_BAD_ARG for an unknown frame id, -ENOMEM.  An
 * unreadable kallsyms or perf map is not an error: it is counted in the
 * stats and its frames keep the fallback form.
 */
int sp_symbolizer_resolve(struct sp_symbolizer *sym, uint32_t frame_id,
			  const struct sp_resolved_frame **out);

/*
 * Resolve one interned frame into every function it stands for: *frames is
 * a borrowed array of *n >= 1 frames that lives as long as the symbolizer,
 * cached per frame id.  When the module's DWARF (its own, or a separate
 * debug file's) shows the address inside inlined code, the array holds the
 * inline chain: the innermost inlined function first, each flagged
 * SP_RFRAME_INLINE and named from DWARF (C++ linkage names demangled), and
 * the containing function last, named as sp_symbolizer_resolve names it
 * (which returns that last frame).  Otherwise, and with opts.no_inline,
 * *n is 1.  Source file and line: see struct sp_resolved_frame.  The chain
 * follows DWARF's DW_TAG_inlined_subroutine scopes and their DW_AT_call_file
 * and DW_AT_call_line (DWARF 5, section 3.3.8).  Errors as
 * sp_symbolizer_resolve.
 */
int sp_symbolizer_resolve_all(struct sp_symbolizer *sym, uint32_t frame_id,
			      const struct sp_resolved_frame **frames, size_t *n);

void sp_symbolizer_free(struct sp_symbolizer *sym);

/*
 * Bounds on compressed sections (SHF_COMPRESSED, GNU .zdebug_*; Debian's
 * -dbg packages, gcc and clang -gz).  A section is inflated only when its
 * compression header claims at most SP_INFLATE_SECTION_MAX bytes, and the
 * sections of one file together at most SP_INFLATE_FILE_MAX (in section
 * order); the claims are read before anything is inflated, and a section
 * past them is skipped and counted, never inflated (deflate inflates up to
 * about 1,032 times: a 4 MB library can claim gigabytes).
 */
#define SP_INFLATE_SECTION_MAX ((uint64_t)256 << 20)
#define SP_INFLATE_FILE_MAX ((uint64_t)1 << 30)
/*
 * And all the files of one pass together at most SP_INFLATE_RUN_MAX: the
 * bounds above hold per file, and a process that loads many files claiming
 * as much would multiply them.  A pass is a symbolizer (one spool's names:
 * report --diff has one per side), renewed at each refresh of top and
 * report --follow; the recorder and annotate's own images are one pass for
 * the whole run.  All passes of a process together hold at most
 * SP_INFLATE_PROCESS_MAX at a time (what a freed symbolizer held is given
 * back).  A section kept takes its claim from both; one that no longer fits
 * is skipped and counted like the others.
 */
#define SP_INFLATE_RUN_MAX ((uint64_t)512 << 20)
#define SP_INFLATE_PROCESS_MAX ((uint64_t)1 << 30)
/*
 * A file another user can influence (owned by a user other than root,
 * writable by group or others, or in a directory that is not root's or that
 * group or others can write: sp_file_trust) draws on a smaller budget as
 * well: all such files of a pass inflate at most SP_INFLATE_UNTRUSTED_RUN_MAX
 * together, and such debug-link candidates are read at most
 * SP_DEBUGLINK_CRC_UNTRUSTED_RUN_MAX together.  Root's files in root's
 * directories (distribution debug files, which can be large) keep the full
 * budgets; four libraries of another user claiming 250 MiB each no longer
 * cost a report or a recording half a gigabyte.
 */
#define SP_INFLATE_UNTRUSTED_RUN_MAX ((uint64_t)64 << 20)
#define SP_DEBUGLINK_CRC_UNTRUSTED_RUN_MAX ((uint64_t)64 << 20)
/*
 * MiniDebugInfo (.gnu_debugdata: an xz-compressed ELF file holding only a
 * symbol table, which libdwfl unpacks whole for a stripped module): xz's
 * sizes are claims its decoder checks only at the end, so the section is
 * decoded once, into scratch, up to this bound, with a dictionary of at most
 * SP_XZ_MEMLIMIT; past either it is skipped like a compressed section.
 */
#define SP_INFLATE_DEBUGDATA_MAX ((uint64_t)64 << 20)
/*
 * A debug file proven by its debug link's CRC (a module without a build-id)
 * is read whole; all such reads of one pass (as above) together stop at
 * SP_DEBUGLINK_CRC_RUN_MAX bytes, all of a process's passes at
 * SP_DEBUGLINK_CRC_PROCESS_MAX (never given back: it bounds time), and a
 * candidate larger than what is left is refused unread.
 */
#define SP_DEBUGLINK_CRC_RUN_MAX ((uint64_t)512 << 20)
#define SP_DEBUGLINK_CRC_PROCESS_MAX ((uint64_t)2 << 30)
#define SP_XZ_MEMLIMIT ((uint64_t)64 << 20)
/* The cache's size bound (DIR/debug and DIR/symbols) unless opts or STACKPULSE_CACHE_SIZE say. */
#define SP_CACHE_DEFAULT_MAX ((uint64_t)2 << 30)

/*
 * At most this many entries in one frame's inline chain (the frame's own
 * function included), from DWARF or stored in a spool: the innermost are
 * kept, the inlined callers past them dropped and counted (a hostile spool
 * stores chains of any length, and every view repeats them for every stack
 * they are in).
 */
#define SP_INLINE_CHAIN_MAX 64

/* What a symbolizer could and could not use, counted as it resolves. */
struct sp_symbolizer_stats {
	uint64_t files_proven;        /* module files opened and proven the recorded file */
	uint64_t files_unproven;      /* build-id, or inode + size + mtime, differ */
	uint64_t files_unreadable;    /* missing, unreadable or not ELF */
	uint64_t frames_named;        /* distinct frames named (ELF, kallsyms or perf map) */
	uint64_t frames_address_only; /* distinct frames given the address form */
	uint64_t frames_with_lines;   /* distinct frames given a source file and line (DWARF) */
	uint64_t inline_frames;       /* inlined-function frames those frames expanded into */
	/* Inlined-function entries dropped from chains longer than SP_INLINE_CHAIN_MAX. */
	uint64_t inline_frames_cut;
	/* Separate debug files, looked for once per module file without its own DWARF or symbols. */
	uint64_t debug_files_used;    /* found and used (build-id or debug link CRC matched) */
	/* Of those, found by libdwfl's own search once DEBUGINFOD_URLS is set (debuginfod). */
	uint64_t debug_files_debuginfod;
	/* Of those, read from a decompressed copy in the cache (cache_dir); written now. */
	uint64_t debug_files_cached, debug_files_cache_written;
	/*
	 * The cache directory when it was refused (a symlink on the way, owned by
	 * another user, writable by others; sp_cache_dir_check) and why; the
	 * cache is then off.  Both NULL when it was used or there was none.
	 */
	const char *cache_dir_refused, *cache_dir_refusal;
	uint64_t debug_files_mismatched; /* refused: another build-id, wrong CRC, not trusted */
	const char *debug_file_mismatched; /* the first refused candidate's path, or NULL */
	/* Of those, refused unread: past what was left of SP_DEBUGLINK_CRC_RUN_MAX (this symbolizer) or SP_DEBUGLINK_CRC_PROCESS_MAX. */
	uint64_t debug_files_over_crc_budget;
	/*
	 * Of those, refused for SP_DEBUGLINK_CRC_UNTRUSTED_RUN_MAX (candidates
	 * another user can influence), and why the first was such (sp_file_trust).
	 */
	uint64_t debug_files_over_untrusted_crc_budget;
	const char *debug_file_untrusted_why;
	/*
	 * Compressed sections of module and debug files skipped, never
	 * inflated: over SP_INFLATE_SECTION_MAX, SP_INFLATE_FILE_MAX or what
	 * was left of SP_INFLATE_RUN_MAX (names, inline chains or lines they
	 * held are missing).  The first such file's path, or NULL.  Of those,
	 * sections_over_run_budget were skipped for the run's total alone.
	 */
	uint64_t sections_not_inflated, sections_over_run_budget;
	const char *section_not_inflated_file;
	/*
	 * Of those, skipped for SP_INFLATE_UNTRUSTED_RUN_MAX (files another user
	 * can influence), the first such file and why (sp_file_trust), or NULL.
	 */
	uint64_t sections_over_untrusted_budget;
	const char *section_untrusted_file, *section_untrusted_why;
	/*
	 * The cache's size bound in bytes (cache_max_bytes, STACKPULSE_CACHE_SIZE
	 * or SP_CACHE_DEFAULT_MAX); cache_size_invalid is STACKPULSE_CACHE_SIZE
	 * when it could not be read (the default was used), else NULL.  Files
	 * removed to keep the cache within it (least recently used first), and
	 * copies not kept because they alone would not fit.
	 */
	uint64_t cache_max_bytes;
	const char *cache_size_invalid;
	uint64_t cache_files_evicted, cache_files_too_large;
	/* Kernel symbols: kallsyms is read once, for every kernel frame of the spool. */
	int kallsyms_error;           /* 0, or -errno why kallsyms could not be read */
	bool kallsyms_read;           /* a kallsyms file was read */
	bool kallsyms_restricted;     /* it showed every address as 0 (kernel.kptr_restrict) */
	bool kallsyms_other_kernel;   /* /proc/kallsyms not used: the recording ran another kernel release */
	uint64_t kallsyms_lines;      /* lines read */
	uint64_t kallsyms_kept;       /* symbols kept: only those nearest below a kernel frame */
	uint64_t kallsyms_malformed;  /* lines skipped as malformed */
	uint64_t kernel_frames_named; /* distinct kernel frames named from kallsyms */
	uint64_t kernel_frames_unnamed; /* distinct kernel frames left as addresses */
	/* Perf maps, read once per process that has a frame in anonymous code. */
	uint64_t perf_maps_read;      /* map files read */
	uint64_t jitdumps_read;       /* of those, jitdumps read for a process without a perf map */
	uint64_t perf_maps_missing;   /* processes with anonymous-code frames and no map file */
	uint64_t perf_maps_stale;     /* map files older than their process (pid reuse): ignored */
	uint64_t perf_maps_insecure;  /* not a regular file, or writable by group or others: ignored */
	/* owned by neither the process's user (its OWNER record) nor root: ignored */
	uint64_t perf_maps_foreign;
	uint64_t perf_maps_limited;   /* map files read only in part (size or line limits) */
	uint64_t perf_map_lines_malformed; /* lines skipped (bad numbers or names, wrapping ranges) */
	uint64_t perf_map_frames_named;    /* distinct frames named from a perf map */
	uint64_t perf_map_frames_denied;   /* distinct frames of processes the policy excludes */
	/* distinct frames in anonymous code of processes with no usable perf map (missing, stale, insecure) */
	uint64_t perf_map_frames_unmapped;
	/* Distinct native frames of a Python runtime flagged PYTHON_RUNTIME | HIDDEN_DEFAULT. */
	uint64_t python_runtime_frames;
	uint64_t native_backend_errors;    /* plug-in callbacks that failed (create, set_modules, symbolize_one) */
	/* sp_symbolizer_for_each_*: stacks streamed from the (pid, stack id) cache, and first walks. */
	uint64_t stack_cache_hits;
	uint64_t stack_cache_misses;
	uint64_t frames_stored;       /* distinct frames taken from the spool's symbol records */
};

void sp_symbolizer_stats(const struct sp_symbolizer *sym, struct sp_symbolizer_stats *out);
/*
 * Start a new pass of sym's budgets (SP_INFLATE_RUN_MAX and
 * SP_DEBUGLINK_CRC_RUN_MAX full again; the process's totals still bound
 * them): a symbolizer that lives as long as a live view (top, report
 * --follow) gets them per refresh, not once for its whole run.
 */
void sp_symbolizer_renew_budgets(struct sp_symbolizer *sym);

/*
 * Stream the resolved frames of stack_id as sampled in process pid to visit,
 * leaf to root, each raw frame's inline chain innermost first (exactly the
 * frames sp_symbolizer_resolve_all gives, frame after frame), with arg.
 * Streamed stacks are cached: the first walk of a (pid, stack id) pair
 * resolves its frames and keeps their compact frame ids (4 bytes a frame,
 * no copies of resolved frames), so a repeated stack is streamed from
 * that list without walking the prefix tree again (counted in
 * stats.stack_cache_hits / stack_cache_misses).  The frames passed are
 * borrowed and live as long as the symbolizer; every frame is passed,
 * SP_RFRAME_HIDDEN_DEFAULT ones too: display policy is the caller's.  A
 * non-zero return from visit stops the walk and is returned.  Stack 0
 * visits nothing.  Errors: -SP_E_BAD_ARG for an unknown stack id, -ENOMEM,
 * and resolve errors.  Not thread-safe, like every symbolizer call.
 */
int sp_symbolizer_for_each_stack_frame(struct sp_symbolizer *sym, int32_t pid, uint32_t stack_id,
				       int (*visit)(const struct sp_resolved_frame *frame,
						    void *arg),
				       void *arg);

/* The same for one sample: its thread's pid and its stack_id.  -SP_E_BAD_ARG for a bad thread. */
int sp_symbolizer_for_each_sample_frame(struct sp_symbolizer *sym, const struct sp_sample *sample,
					int (*visit)(const struct sp_resolved_frame *frame,
						     void *arg),
					void *arg);

/*
 * The pids a spool's exec markers record as Python runtimes, sorted, into
 * *pids (malloc'd, the caller frees; NULL when *n is 0).  ever false: those
 * whose latest marker says Python (a pid reused by a later process that is
 * not Python is left out); ever true: those ever marked Python, the broader
 * set sp_symbolizer_new_recorded_python uses.  0 or -ENOMEM.
 */
int sp_spool_python_pids(const struct sp_spool *s, bool ever, int32_t **pids, size_t *n);

/*
 * A symbolizer for a spool's recorded Python runtimes: sp_symbolizer_new
 * with opts (may be NULL) except that perf maps are read only for the
 * processes ever recorded as Python runtimes (SP_PERF_MAPS_PIDS with
 * sp_spool_python_pids(s, true, ...)).  SP_PERF_MAPS_PYTHON is the strict
 * form (latest marker).  Errors as sp_symbolizer_new.
 */
int sp_symbolizer_new_recorded_python(const struct sp_spool *s,
				      const struct sp_symbolizer_opts *opts,
				      struct sp_symbolizer **out);

/* ---------------------------------------------------------------------- */
/* Storing symbols in a spool (stackpulse symbolize)                      */

/* Frames of one module file (or of the kernel, or of anonymous code) left address-only. */
struct sp_unresolved {
	const char *what;     /* the module file's recorded path, "[kernel]", "perf-PID.map", ... */
	uint8_t build_id_len; /* the recorded build-id, 0 when none */
	uint8_t build_id[SP_BUILD_ID_MAX];
	uint64_t frames;      /* distinct frames left in the address form */
	const char *why;      /* why it gave no names */
	char **places;        /* every place looked, in order: file, map_files, debug files, ... */
	size_t nplaces;
};

struct sp_symbolize_result {
	uint64_t frames;              /* distinct frames the samples use (truncation markers aside) */
	uint64_t frames_named;        /* of those, named (ELF/DWARF, kallsyms or perf map) */
	uint64_t frames_address_only; /* of those, left as module+offset or an address */
	uint64_t kernel_frames, kernel_frames_named;
	uint64_t perf_map_frames_named;
	uint64_t frames_stored_before; /* taken from symbol records the spool already had */
	uint64_t frames_written;      /* SYM_FRAME records appended */
	uint64_t kernel_symbols_written, perf_map_lines_written;
	uint64_t bytes_written;       /* bytes of symbol records appended */
	bool input_truncated;         /* the input ended mid-record: its intact prefix was kept */
	struct sp_symbolizer_stats stats;
	struct sp_unresolved *unresolved; /* owned, by module file in first-seen order */
	size_t nunresolved;
};

/*
 * Resolve every frame the samples of the spool at spool_path use, exactly
 * as a report would (opts as for sp_symbolizer_new; stored_symbols
 * SP_STORED_NAMED retries address-only frames an earlier run stored), and
 * append what was resolved now as symbol records (stackpulse-spool(5),
 * types 11 to 14): each frame's chain, and the kallsyms symbols and perf map
 * lines used.  The output (out_path, or NULL: spool_path itself) is written
 * whole beside its final name and renamed over it, so a reader never sees a
 * half-written spool; it is left alone when in place and nothing is new.
 * The output must be absent or a regular file (lstat(2), before any work):
 * -ELOOP for a symbolic link, -EISDIR for a directory, -EINVAL for a FIFO,
 * device node or socket, which rename(2) would replace.  A replaced file
 * keeps its owner (when the caller may chown(2) it) and mode; -EEXIST when
 * the output was created or replaced by someone else while this ran;
 * -SP_E_SPOOL_BUSY when a recording still writes the output (in place, the
 * rest of the recording would be lost: sp_spool_is_growing).
 * res (released with sp_symbolize_result_release, also on failure) gets the
 * counts and the unresolved frames by module.  Returns 0, or -errno and the
 * reader's -SP_E_* errors; frames left unresolved are not an error.
 */
int sp_spool_symbolize(const char *spool_path, const char *out_path,
		       const struct sp_symbolizer_opts *opts, struct sp_symbolize_result *res);
void sp_symbolize_result_release(struct sp_symbolize_result *res);

#endif
