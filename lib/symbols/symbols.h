/* SPDX-License-Identifier: MIT */
/*
 * lib/symbols/: names for a spool's frames (private, not installed).
 *
 * Owns: the symbolizer, over the private layout in symbolizer.h: its tables
 * by module and frame id (id_tables.c) and the order in which a frame's
 * sources of names are asked (resolve_order.c); the sources of names, each
 * working on a context of its own embedded in the symbolizer (struct
 * elf_names, kernel_names, perf_map_names, stored_names, native_names):
 * module files proven to be the recorded ones (elf_files.c), ELF symbols
 * (elf_symbols.c, symtab.c), DWARF inline chains and lines
 * (dwarf_inline.c), Go's function table in stripped Go binaries
 * (go_names.c), the answers kept per file address and the symbol cache
 * (file_lookups.c, symcache.c), separate debug files (debug_search.c,
 * debugfile.c, debugcache.c), the cache directory and its size bound
 * (cache_dir.c), kernel frames from kallsyms (kernel_frames.c), anonymous
 * code from perf maps and jitdumps (perfmap_frames.c, by the process of each
 * frame: frame_pids.c), names stored in the spool (stored_frames.c), a
 * native plug-in (native_frames.c, native_backend.c), C++ and Rust
 * demangling (demangle.c); and on top of the
 * symbolizer, streamed stacks (streamed_stacks.c), Python processes
 * (python_pids.c), following a spool as it is written (followed_spool.c,
 * ids_by_pid.c), and names written into spools: `symbolize`, and the naming
 * of replaced images and containers' JIT code at record end
 * (names_to_spool.c).  The files others write (kallsyms, perf maps,
 * jitdumps) are parsed in lib/formats/; symbol records are encoded and
 * decoded in lib/spool/spool_symrec.c.
 * May call: formats, spool (reader, writer, stack walks) and util.  Never
 * record, unwind or report.
 */
#ifndef SP_SYMBOLS_H
#define SP_SYMBOLS_H

#include "formats/formats.h"
#include "spool/spool.h"

#include <elfutils/libdwfl.h>

/* ---- name demangling (demangle.c) -------------------------------------- */

/*
 * Demangle a C++ (Itanium ABI, "_Z..."), Rust legacy ("_ZN...17h<hash>E",
 * hash dropped) or Rust v0 ("_R...") name with libiberty.  Returns a malloc'd
 * string the caller frees, or NULL when name is not mangled or the demangler
 * rejects it (the caller keeps the raw name).
 */
char *sp_demangle(const char *name);

/* ---- sorted function symbols of a module file (symtab.c) --------------- */

struct sp_symtab_entry {
	uint64_t addr, size; /* module (static) addresses; size 0 covers nothing */
	const char *name;    /* borrowed from libelf: lives as long as the Dwfl */
	uint64_t end_hint;   /* while building: end of the symbol's section */
	uint8_t rank;        /* binding: global 0, weak 1, local 2 */
	uint32_t ndx;        /* index in libdwfl's symbol table; SP_SYMTAB_PLT: a PLT entry */
};
#define SP_SYMTAB_PLT UINT32_MAX

struct sp_symtab {
	struct sp_symtab_entry *e;
	size_t n;
	char *plt_names;     /* "NAME@plt" strings of the PLT entries, owned */
};

/*
 * Collect the function symbols libdwfl finds for mod (its symbol table, a
 * separate debug file's, .dynsym, .gnu_debugdata), one per address, sorted.
 * Labels without a size extend to the next symbol within their section.
 * Each PLT entry (.plt, .plt.sec, .plt.got: a jmp *GOT(%rip)) whose GOT slot
 * a JUMP_SLOT or GLOB_DAT relocation names gets NAME@plt, as perf shows it.
 * 0 or -ENOMEM; a module without symbols gives an empty table.
 */
int sp_symtab_build(struct sp_symtab *t, Dwfl_Module *mod);
void sp_symtab_release(struct sp_symtab *t);
/* The symbol whose [addr, addr + size) holds addr, or NULL. */
const struct sp_symtab_entry *sp_symtab_find(const struct sp_symtab *t, uint64_t addr);

/* ---- separate debug files (debugfile.c) -------------------------------- */

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
	uint32_t mismatched;  /* candidates refused: another build-id, the wrong CRC, untrusted */
	char *first_mismatch; /* the first refused candidate's path (malloc'd), or NULL */
};

/*
 * True when the ELF file open on fd is q's debug file: the same build-id
 * when q has one (a candidate without one is refused), else the CRC-32 of
 * the whole file equals q's debug link CRC.  The CRC is not computed for a
 * file over 1 GiB, nor finished once SIGINT or SIGTERM is pending (blocked
 * by the caller): false then.  The bytes read are taken from the charged
 * account's CRC budget (sp_budget_charge_to); a candidate that no longer
 * fits is refused unread and counted there.
 */
bool sp_debug_file_matches(const struct sp_debug_query *q, int fd);
/*
 * Look for q's separate debug file, in this order (GDB's and libdwfl's
 * conventions): for each absolute directory DIR of q->dirs,
 * DIR/.build-id/xx/rest.debug, DIR/LINK and DIR/FILEDIR/LINK; then
 * /usr/lib/debug/.build-id/xx/rest.debug; then FILEDIR/LINK (not the file
 * itself), FILEDIR/.debug/LINK and /usr/lib/debug/FILEDIR/LINK, where LINK
 * is the debug link name and FILEDIR the module file's directory.  The first
 * candidate that sp_debug_file_matches wins.  A candidate must be a regular
 * file of root, of the module file's owner or of ours, that others cannot
 * write (nor its group, unless root owns it), reached without a symlink as
 * its last component except in the build-id trees.  Those that exist but are
 * refused (not trusted, or no match) are counted and the first is named.
 * Returns 0 (out->fd says whether one was found) or -ENOMEM; release out
 * with sp_debug_found_release.
 */
int sp_debug_file_find(const struct sp_debug_query *q, struct sp_debug_found *out);
void sp_debug_found_release(struct sp_debug_found *f);
/*
 * Open path, found for q before, again under the search's rules (a path that
 * is none of q's candidates, such as a debuginfod download, as a candidate
 * beside the module file), checked with sp_debug_file_matches: an fd, or -1.
 */
int sp_debug_file_open(const struct sp_debug_query *q, const char *path);
/*
 * Every path sp_debug_file_find would try for q, in its order, none opened:
 * *paths is a malloc'd array of *n malloc'd strings.  0 or -ENOMEM.
 */
int sp_debug_file_candidates(const struct sp_debug_query *q, char ***paths, size_t *n);

/* ---- the cache directory and its size bound (cache_dir.c) -------------- */

/*
 * The cache directory: dir when not NULL, else $STACKPULSE_CACHE_DIR, else
 * $XDG_CACHE_HOME/stackpulse, else $HOME/.cache/stackpulse.  An empty or
 * relative dir or $STACKPULSE_CACHE_DIR switches the cache off (NULL).
 * Returns a malloc'd path or NULL.
 */
char *sp_debug_cache_dir(const char *dir);
/*
 * Whether the absolute path may be used as (or inside) the cache: walked from
 * / one component at a time, never through a symlink; every directory on the
 * way owned by root or this user and, when group or others may write it,
 * sticky (/tmp); the last one owned by this user and writable by no one else.
 * create makes missing levels (mode 0700).  0; -EPERM with *why (a static
 * phrase: "owned by another user", ...) when refused; -ENOENT when a level is
 * missing and !create; other -errno.  why may be NULL.
 */
int sp_cache_dir_check(const char *path, bool create, const char **why);
/*
 * sp_cache_dir_check of path, then of each of its subdirectories subs[0,
 * nsubs) (single names) that exists, in one walk: 0 when all pass (a missing
 * subdirectory passes); else the error of the first refused, *which = 0 for
 * path itself, i + 1 for subs[i].
 */
int sp_cache_dir_check_tree(const char *path, const char *const *subs, size_t nsubs,
			    size_t *which, const char **why);
/* sp_cache_dir_check(path, true, NULL): mkdir -p of a cache directory, each level checked. */
int sp_cache_make_dirs(const char *path);
/*
 * Open a cache file we may trust: a regular file (not through a symlink) of
 * this user that group and others cannot write; *st is its fstat.  An fd,
 * or -1 when it is missing or not trusted.
 */
struct stat;
struct sp_arena;
int sp_cache_open_own(const char *path, struct stat *st);
/*
 * Mark the cache file open on fd (st: its fstat) as used now, for
 * sp_cache_make_room: its mtime is set to now when it is an hour old or
 * more (atime is not kept on noatime mounts).  Failures are ignored.
 */
void sp_cache_touch(int fd, const struct stat *st);
/*
 * The cache's size bound in bytes: max when not 0, else
 * $STACKPULSE_CACHE_SIZE ("2147483648", or with a K, M, G or T suffix,
 * powers of 1024; 0 keeps nothing), else SP_CACHE_DEFAULT_MAX.  *invalid
 * (may be NULL) gets the variable's value when it cannot be read (the
 * default is then returned), else NULL.
 */
uint64_t sp_cache_max_bytes(uint64_t max, const char **invalid);
/*
 * Make room for a file of incoming bytes in the cache at cache_dir: while the
 * files in cache_dir/debug and cache_dir/symbols take more than
 * max - incoming bytes, remove the least recently used (oldest mtime; see
 * sp_cache_touch).  Only regular files of this user count and are removed,
 * by name in directories that sp_cache_dir_check accepts (never through a
 * symlink); a directory it refuses stops everything.  *evicted gets how
 * many were removed.  0; -EFBIG when incoming > max (nothing removed: the
 * file should not be written); -EPERM or other -errno, -ENOMEM.
 */
int sp_cache_make_room(const char *cache_dir, uint64_t max, uint64_t incoming,
		       uint64_t *evicted);

/* ---- debug files made fit for libdw (debugcache.c) ---------------------- */

/* What sp_debug_cache_open did with a debug file. */
struct sp_debug_copy {
	int fd;          /* the copy to use instead of the file, or -1: use the file itself */
	char *path;      /* the copy's path in the cache (malloc'd), NULL for a copy in memory */
	bool made;       /* the cache copy was written now */
	bool refused;    /* the file could not be made safe: use none of it */
	bool too_large;  /* a cache copy would alone pass the cache's bound: none made */
	uint64_t evicted; /* cache files removed to make room for the copy */
	struct sp_inflate_stats inflate; /* its compressed sections: kept and skipped */
};

/*
 * Make the debug file open on fd fit for libdw.  Its compressed sections
 * past SP_INFLATE_SECTION_MAX / SP_INFLATE_FILE_MAX are never inflated
 * (sp_elf_bound_inflation; out->inflate counts them): when there are such,
 * the file is used only as a copy without them, in the cache or else in
 * memory (its other sections left compressed).  When it keeps at least
 * 256 KiB of compressed sections (libdw would inflate them all on every
 * open), the copy is CACHE_DIR/debug/HEXBUILDID.debug with every section
 * inflated, made now (out->made) when missing, after sp_cache_make_room
 * within cache_max bytes.  A cached copy is used only when it is a regular
 * file of this user that group and others cannot write, with the given
 * build-id, and no larger than the file's copy can be (else it is made
 * again: a copy from before the bounds holds what they leave out).  Without
 * cache_dir or a build-id, only the copy in memory is made, when needed.
 * Returns out->fd: -1 when the file is to be used as it is, or, with
 * out->refused, not at all.  Free out->path.
 */
int sp_debug_cache_open(const char *cache_dir, uint64_t cache_max, const uint8_t *build_id,
			size_t build_id_len, int fd, struct sp_debug_copy *out);
/* ---- names found before, kept by build-id (symcache.c) ----------------- */

/* Deepest inline chain kept for one address; a longer one is not cached. */
#define SYMCACHE_MAX_SRC 256

/* One function DWARF places at an address (lib/symbols/symbolizer.h's src entries). */
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
 * The witness of the file a cache file's names came from (the module file or
 * its debug file): a hash of its device, inode, size, mtime and ctime, never
 * 0.  Any ELF can claim any build-id; a forged copy is another file, so its
 * names go to another cache file and never answer for the genuine one.  Its
 * owner can set the mtime back after rewriting it (utimensat(2)), not the
 * ctime, which every write and every utimensat moves.
 */
uint64_t sp_symcache_witness(const struct stat *st);

/*
 * Replace CACHE_DIR/symbols/HEXBUILDID-WITNESS.sym with the count entries
 * of entries (made by sp_symcache_put), atomically (a temporary file
 * renamed).  0, or -errno / -E2BIG when it was not written.
 */
int sp_symcache_write(const char *cache_dir, const uint8_t *build_id, size_t build_id_len,
		      uint64_t witness, uint8_t source, const struct sp_buf *entries,
		      size_t count);

/* A cache file read whole and checked (magic, format, CRC-32). */
struct sp_symcache_file {
	uint8_t *data;
	size_t len;
	uint8_t source; /* enum sp_symcache_source */
};

/*
 * Read CACHE_DIR/symbols/HEXBUILDID-WITNESS.sym when it is to be trusted
 * (see sp_cache_open_own) and whole.  0; -ENOENT when there is none to
 * trust; -SP_E_SPOOL_CORRUPT when it is damaged; -ENOMEM.  Close with
 * sp_symcache_close.
 */
int sp_symcache_open(const char *cache_dir, const uint8_t *build_id, size_t build_id_len,
		     uint64_t witness, struct sp_symcache_file *out);
void sp_symcache_close(struct sp_symcache_file *cf);
/*
 * Call fn for each entry of cf: its strings are copied into a, its src
 * array is valid during the call only.  0; -SP_E_SPOOL_CORRUPT at the first
 * value out of bounds (the entries before it were passed); fn's error or
 * -ENOMEM.
 */
int sp_symcache_each(const struct sp_symcache_file *cf, struct sp_arena *a,
		     int (*fn)(void *ctx, const struct sp_symcache_hit *h), void *ctx);

/* ---- what `symbolize` and the recorder ask of a symbolizer ------------- */
/* (lib/symbols/resolve_order.c, elf_files.c for use_file, debug_search.c for lookup places) */

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

/*
 * pid's perf map is the open file fd (the caller keeps it, and checked who
 * owns it when opening it): read now, and used instead of looking for one.
 * 0; -SP_E_BAD_ARG when pid's map was already looked for; -ENOMEM.
 * (lib/symbols/perfmap_frames.c)
 */
int sp_symbolizer_use_perf_map_fd(struct sp_symbolizer *sym, int32_t pid, int fd);

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

/* ---- a native symbolizer plug-in's instances (native_backend.c) -------- */

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
/*
 * Group the modules a followed spool brought, [what ng has, n), eligible
 * indexed from the first of them, as sp_native_groups_new would; except that
 * a group whose instance was made already (its modules handed over, once)
 * takes no more: the module starts a new group.  0 or -ENOMEM.
 */
int sp_native_groups_add(struct sp_native_groups *ng, size_t n, const bool *eligible);
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

/* ---- streamed stacks (streamed_stacks.c, id_tables.c), pid order -------- */

/* Frame ids of the (pid, stack id) pairs streamed so far. */
struct sp_stack_cache;

void sp_stack_cache_free(struct sp_stack_cache *c);
/* Adds the cache's hit and miss counts to st. */
void sp_stack_cache_add_stats(const struct sp_stack_cache *c, struct sp_symbolizer_stats *st);
/* qsort/bsearch order of int32_t pids (lib/symbols/perfmap_frames.c). */
int sp_cmp_pid(const void *a, const void *b);

/* ---- naming replaced images at record end (names_to_spool.c) ----------- */

/*
 * At record end, name the frames of modules whose file was deleted or
 * replaced from the images the recorder kept open
 * (docs/DESIGN.md, decision 7: a module is named from the very image that was sampled):
 * fd_by_module[id] (n entries) is such an image's fd, or -1.  Reads the
 * spool written so far back, resolves the frames of those modules that the
 * samples use, and appends their symbol records to w (lib/symbols/names_to_spool.c).
 * *frames gets how many were stored.  0 or -errno.
 */
int sp_symbolize_images(struct sp_spool_writer *w, const int *fd_by_module, size_t n,
			uint64_t *frames);

/*
 * At record end, name the frames of JIT code of processes in containers from
 * the perf maps the recorder kept open (their /tmp goes with the container):
 * pids[i]'s map is the open file fds[i] (-1: none), n entries.  Reads the
 * spool written so far back, resolves those processes' frames in anonymous
 * code or outside every mapping from the maps, and appends the named ones
 * and their perf map lines as symbol records to w.  *frames gets how many
 * were stored.  0 or -errno.
 */
int sp_symbolize_perf_maps(struct sp_spool_writer *w, const int32_t *pids, const int *fds, size_t n,
			   uint64_t *frames);

#endif
