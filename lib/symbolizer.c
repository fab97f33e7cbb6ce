/* SPDX-License-Identifier: MIT */
/* Resolve a spool's frames: ELF symbols, DWARF inline chains and lines, kallsyms, perf maps. */
#include "report_internal.h"
#include "symbols_internal.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

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

/* One process's perf map, looked for on its first frame in anonymous code. */
struct proc_map {
	int32_t pid;
	uint8_t state;      /* enum source_state */
	const char *module; /* "perf-PID.map", the module shown for its JIT frames */
	struct sp_perf_map map;
};

/*
 * One function at an address as DWARF describes it: an inlined function, or
 * the function that holds the code.  Entries of one address are contiguous
 * in sym->src, innermost first.
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
	uint32_t src;     /* first entry in sym->src */
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

/* The symbol cache (lib/symcache.c) of one module file. */
enum symcache_state {
	SYMCACHE_UNREAD = 0,
	SYMCACHE_READ, /* read, or nothing usable there */
	SYMCACHE_OFF,  /* no cache directory, no build-id, or names made another way */
};

/* A lookup's answer, by address, as the cache file keeps it. */
struct file_hit {
	uint64_t svma;
	uint32_t hit; /* index into sym->hits */
};

/* Separate debug file search of one module file. */
enum debug_state {
	DEBUG_UNSEARCHED = 0,
	DEBUG_FOUND,     /* debug_path names it */
	DEBUG_NONE,      /* searched, nothing usable */
};

/*
 * One module file, shared by every module (in any process) that maps it.
 * Keyed by build-id when recorded, else by path + inode + dev + size + mtime
 * (so that a module is proven exactly when its file entry is).
 */
struct file_entry {
	const struct sp_module *rep; /* first module seen with this key: path and identity */
	const char *open_path;       /* rep->path without a " (deleted)" suffix */
	uint8_t state;               /* enum file_state */
	Dwfl *dwfl;                  /* one handle per file, base 0: addresses are svmas */
	Dwfl_Module *mod;
	struct sp_elf_info info;     /* PT_LOAD segments, for modules without a recorded bias */
	struct sp_symtab symtab;     /* built on the first lookup */
	bool symtab_built;
	struct sp_map cache;         /* svma -> index into sym->hits */
	struct sp_symbolizer *owner; /* for the debug file search, called back by libdwfl */
	const char *debuglink;       /* the file's .gnu_debuglink name, or NULL */
	uint32_t debuglink_crc;
	uint8_t debug_state;         /* enum debug_state */
	const char *debug_path;      /* the separate debug file in use, or NULL */
	bool debug_cached;           /* read from its decompressed copy (counted once) */
	bool debug_debuginfod;       /* debug_path came from a debuginfod server */
	bool own_dwarf;              /* the proven image has DWARF of its own (.debug_info) */
	struct sp_map cu_index;      /* CU DIE offset -> index into sym->cus */
	int given_fd;                /* +1: an image handed over by sp_symbolizer_use_file, or 0 */
	char *map_files;             /* the /proc/PID/map_files path tried, or NULL */
	uint8_t symcache;            /* enum symcache_state */
	bool symcache_new;           /* a lookup found what the cache file lacks */
	struct file_hit *fhits;      /* every hit of this file, for the cache file */
	size_t nfhits, fhits_cap;
};

/* Resolved frames of inline chains, allocated in blocks that never move. */
struct chain_block {
	struct chain_block *next;
	size_t used, cap;
	struct sp_resolved_frame f[];
};

struct sp_symbolizer {
	const struct sp_spool *spool;
	struct sp_symbolizer_opts opts;
	struct sp_arena strings;
	Dwfl_Callbacks callbacks;    /* must outlive every Dwfl */
	char *debuginfo_path;        /* pointed to by callbacks (alternate files, debuginfod) */
	const char *debug_dirs;      /* searched first for separate debug files, or NULL */
	bool debuginfod;             /* DEBUGINFOD_URLS is set: ask servers last */
	char *cache_dir;             /* decompressed debug file copies, or NULL */
	struct file_entry *files;
	size_t nfiles;
	uint32_t *module_file;       /* by module id: file index or NO_FILE */
	const char **module_name;    /* by module id: display basename */
	size_t nmodules;
	struct sp_resolved_frame *frames; /* by frame id */
	uint8_t *resolved;                /* by frame id: frames[i] is filled */
	size_t nframes;
	/* By frame id: the inline chain (innermost first, frames[i]'s copy last), or NULL. */
	struct sp_resolved_frame **chain;
	uint32_t *chain_len;
	struct chain_block *chain_blocks;
	struct sym_hit *hits;
	size_t nhits, hits_cap;
	struct src_entry *src;       /* DWARF functions of every hit, by hit->src */
	size_t nsrc, src_cap;
	struct cu_funcs *cus;        /* the function ranges of every CU looked into */
	size_t ncus, cus_cap;
	struct sp_kallsyms *ksyms;   /* sparse: the symbols of this spool's kernel frames */
	uint8_t ksyms_state;         /* enum source_state */
	struct proc_map *maps;
	size_t nmaps, maps_cap;
	struct sp_map map_index;     /* pid -> index into maps */
	int32_t *frame_pid;          /* by frame id: the one process whose samples hold it */
	uint32_t *stored;            /* by frame id: the spool's symbol record, or NULL (lib/symstore.c) */
	uint8_t *frame_src;          /* by frame id: enum sp_frame_src */
	struct sp_symbolizer_stats stats;
	int32_t *perf_map_pids;      /* SP_PERF_MAPS_PIDS: sorted copy of opts.perf_map_pids */
	struct sp_native_groups *native; /* a plug-in in place of ELF/DWARF, or NULL */
	struct sp_stack_cache *stacks;   /* streamed (pid, stack id) pairs (lib/symbolizer_api.c) */
};

static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
			  Dwarf_Addr base, const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name);
/* The seeds' API around the core (the end of this file). */
static int setup_api_opts(struct sp_symbolizer *sym);
static void symcache_save(struct sp_symbolizer *sym, struct file_entry *f);
static int resolve_native_plugin(struct sp_symbolizer *sym, uint32_t frame_id,
				 const struct sp_frame *fr, struct sp_resolved_frame *rf);
static int flag_python_runtime(struct sp_symbolizer *sym, uint32_t frame_id,
			       const struct sp_frame *fr);

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ULL; /* FNV-1a */
	return h;
}

static uint64_t file_key_hash(const struct sp_module *m)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	if (m->build_id_len)
		return sp_hash64(hash_bytes(h ^ 1, m->build_id, m->build_id_len));
	const char *path = m->path ? m->path : "";
	h = hash_bytes(h, path, strlen(path));
	uint64_t ids[] = {m->inode, m->dev_major, m->dev_minor, m->file_size,
			  (uint64_t)m->mtime_ns};
	return sp_hash64(hash_bytes(h, ids, sizeof(ids)));
}

static bool same_file_key(const struct sp_module *a, const struct sp_module *b)
{
	if (a->build_id_len || b->build_id_len)
		return a->build_id_len == b->build_id_len &&
		       !memcmp(a->build_id, b->build_id, a->build_id_len);
	return a->inode == b->inode && a->dev_major == b->dev_major &&
	       a->dev_minor == b->dev_minor && a->file_size == b->file_size &&
	       a->mtime_ns == b->mtime_ns && !strcmp(a->path ? a->path : "", b->path ? b->path : "");
}

static bool has_file(const struct sp_module *m)
{
	if (m->flags & (SP_MODULE_KERNEL | SP_MODULE_ANON))
		return false;
	/* Pseudo-paths ([vdso], [heap], anon:...) name no file to open. */
	return m->path && m->path[0] == '/';
}

static const char *display_name(struct sp_arena *a, const struct sp_module *m)
{
	if (m->flags & SP_MODULE_KERNEL)
		return "[kernel]";
	const char *p = m->path;
	/* perf names anonymous executable mappings "//anon". */
	if (!p || !*p || !strcmp(p, "//anon"))
		return "[anon]";
	size_t n;
	p = sp_path_name_span(p, &n);
	return sp_arena_strndup(a, p, n);
}

/* Give every module its file entry, merging modules that share a key. */
static int index_modules(struct sp_symbolizer *sym)
{
	struct sp_map by_key;
	int err = 0;
	sp_map_init(&by_key);
	for (size_t i = 0; i < sym->nmodules; i++) {
		const struct sp_module *m = sp_spool_module(sym->spool, (uint32_t)i);
		sym->module_file[i] = NO_FILE;
		sym->module_name[i] = m ? display_name(&sym->strings, m) : "[unknown]";
		if (!sym->module_name[i]) {
			err = -ENOMEM;
			goto out;
		}
		if (!m || !has_file(m))
			continue;
		/* Probe past hash collisions: the key hash is not the key. */
		uint64_t h = file_key_hash(m);
		uint32_t idx;
		while (sp_map_get(&by_key, h, &idx) && !same_file_key(sym->files[idx].rep, m))
			h = sp_hash64(h + 1);
		if (!sp_map_get(&by_key, h, &idx)) {
			idx = (uint32_t)sym->nfiles++;
			sym->files[idx].rep = m;
			/*
			 * A deleted file is looked for at its old path: whatever
			 * is there now is used only if the proof below holds.
			 */
			sym->files[idx].open_path = sp_arena_strndup(&sym->strings, m->path,
								     sp_path_len_undeleted(m->path));
			if (!sym->files[idx].open_path) {
				err = -ENOMEM;
				goto out;
			}
			sp_map_init(&sym->files[idx].cache);
			sp_map_init(&sym->files[idx].cu_index);
			sym->files[idx].owner = sym;
			err = sp_map_put(&by_key, h, idx);
			if (err)
				goto out;
		}
		sym->module_file[i] = idx;
	}
out:
	sp_map_release(&by_key);
	return err;
}

int sp_symbolizer_new(const struct sp_spool *s, const struct sp_symbolizer_opts *opts,
		      struct sp_symbolizer **out)
{
	if (!s || !out || (opts && (opts->perf_map_policy > SP_PERF_MAPS_PIDS ||
				    opts->stored_symbols > SP_STORED_NONE)))
		return -SP_E_BAD_ARG;
	struct sp_symbolizer *sym = calloc(1, sizeof(*sym));
	if (!sym)
		return -ENOMEM;
	int err = -ENOMEM;
	sym->spool = s;
	if (opts)
		sym->opts = *opts;
	sp_arena_init(&sym->strings);
	sp_map_init(&sym->map_index);
	/* The caller's strings need not outlive this call. */
	if (sym->opts.kallsyms_path &&
	    !(sym->opts.kallsyms_path = sp_arena_strndup(&sym->strings, sym->opts.kallsyms_path,
							  strlen(sym->opts.kallsyms_path))))
		goto fail;
	if (!sym->opts.perf_map_dir)
		sym->opts.perf_map_dir = DEFAULT_PERF_MAP_DIR;
	else if (!(sym->opts.perf_map_dir = sp_arena_strndup(&sym->strings,
							       sym->opts.perf_map_dir,
							       strlen(sym->opts.perf_map_dir))))
		goto fail;
	sym->nmodules = sp_spool_module_count(s);
	sym->nframes = sp_spool_frame_count(s);
	sym->files = calloc(sym->nmodules ? sym->nmodules : 1, sizeof(*sym->files));
	sym->module_file = calloc(sym->nmodules ? sym->nmodules : 1, sizeof(*sym->module_file));
	sym->module_name = calloc(sym->nmodules ? sym->nmodules : 1, sizeof(*sym->module_name));
	sym->frames = calloc(sym->nframes ? sym->nframes : 1, sizeof(*sym->frames));
	sym->resolved = calloc(sym->nframes ? sym->nframes : 1, 1);
	sym->chain = calloc(sym->nframes ? sym->nframes : 1, sizeof(*sym->chain));
	sym->chain_len = calloc(sym->nframes ? sym->nframes : 1, sizeof(*sym->chain_len));
	sym->frame_src = calloc(sym->nframes ? sym->nframes : 1, 1);
	if (!sym->files || !sym->module_file || !sym->module_name || !sym->frames ||
	    !sym->resolved || !sym->chain || !sym->chain_len || !sym->frame_src)
		goto fail;
	/* Stored names are demangled: --no-demangle needs the files. */
	if (sym->opts.stored_symbols != SP_STORED_NONE && !sym->opts.no_demangle &&
	    sp_symstore_index(s, &sym->stored))
		goto fail;

	/*
	 * Separate debug files are looked for by find_debuginfo below, which
	 * counts the candidates it refuses; libdwfl's own search (this path:
	 * the user's directories, beside the file, .debug/, /usr/lib/debug)
	 * serves only DWARF alternate files (dwz) and, when DEBUGINFOD_URLS is
	 * set, debuginfod.
	 */
	const char *dirs = sym->opts.debug_dirs ? sym->opts.debug_dirs
						: getenv("STACKPULSE_DEBUG_DIRS");
	if (dirs && *dirs) {
		if (!(sym->debug_dirs = sp_arena_strndup(&sym->strings, dirs, strlen(dirs))))
			goto fail;
		if (asprintf(&sym->debuginfo_path, "%s:%s", dirs, DEFAULT_DEBUG_PATH) < 0) {
			sym->debuginfo_path = NULL;
			goto fail;
		}
	} else if (!(sym->debuginfo_path = strdup(DEFAULT_DEBUG_PATH))) {
		goto fail;
	}
	sym->opts.debug_dirs = sym->debug_dirs;
	sym->cache_dir = sp_debug_cache_dir(sym->opts.cache_dir);
	sym->opts.cache_dir = NULL;
	const char *urls = getenv("DEBUGINFOD_URLS");
#ifdef SP_NO_DEBUGINFOD
	(void)urls; /* built with configure --disable-debuginfod */
	sym->debuginfod = false;
#else
	sym->debuginfod = urls && *urls;
#endif
	sym->callbacks = (Dwfl_Callbacks){
		.find_elf = dwfl_build_id_find_elf,
		.find_debuginfo = find_debuginfo,
		.section_address = dwfl_offline_section_address,
		.debuginfo_path = &sym->debuginfo_path,
	};
	err = index_modules(sym);
	if (!err)
		err = setup_api_opts(sym);
	if (err)
		goto fail;
	sp_elf_init();
	*out = sym;
	return 0;
fail:
	sp_symbolizer_free(sym);
	return err;
}

void sp_symbolizer_free(struct sp_symbolizer *sym)
{
	if (!sym)
		return;
	for (size_t i = 0; i < sym->nfiles; i++) {
		struct file_entry *f = &sym->files[i];
		if (f->symcache_new)
			symcache_save(sym, f);
		free(f->fhits);
		if (f->dwfl)
			dwfl_end(f->dwfl);
		sp_elf_info_release(&f->info);
		sp_symtab_release(&f->symtab);
		sp_map_release(&f->cache);
		sp_map_release(&f->cu_index);
		if (f->given_fd)
			close(f->given_fd - 1);
		free(f->map_files);
	}
	for (size_t i = 0; i < sym->ncus; i++)
		free(sym->cus[i].r);
	free(sym->cus);
	free(sym->files);
	free(sym->module_file);
	free(sym->module_name);
	free(sym->frames);
	free(sym->resolved);
	free(sym->chain);
	free(sym->chain_len);
	for (struct chain_block *b = sym->chain_blocks, *next; b; b = next) {
		next = b->next;
		free(b);
	}
	free(sym->hits);
	free(sym->src);
	sp_kallsyms_free(sym->ksyms);
	for (size_t i = 0; i < sym->nmaps; i++)
		sp_perf_map_release(&sym->maps[i].map);
	free(sym->maps);
	sp_map_release(&sym->map_index);
	free(sym->frame_pid);
	free(sym->perf_map_pids);
	sp_native_groups_free(sym->native);
	sp_stack_cache_free(sym->stacks);
	free(sym->stored);
	free(sym->frame_src);
	free(sym->debuginfo_path);
	free(sym->cache_dir);
	sp_arena_release(&sym->strings);
	free(sym);
}

void sp_symbolizer_stats(const struct sp_symbolizer *sym, struct sp_symbolizer_stats *out)
{
	*out = sym->stats;
	sp_stack_cache_add_stats(sym->stacks, out);
}

/*
 * DESIGN decision 7: a path names whatever is there now, so the file must be
 * shown to be the recorded one.  Build-id when the module recorded one (a
 * file without a build-id then fails); otherwise inode + size + mtime, and a
 * recording that did not capture them cannot be proven.
 */
static bool file_is_recorded(const struct sp_module *m, const struct stat *st,
			     const struct sp_elf_info *info)
{
	if (m->build_id_len)
		return info->build_id_len == m->build_id_len &&
		       !memcmp(info->build_id, m->build_id, m->build_id_len);
	int64_t mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	return m->inode != 0 && m->file_size != 0 && m->mtime_ns != 0 &&
	       (uint64_t)st->st_ino == m->inode && (uint64_t)st->st_size == m->file_size &&
	       mtime_ns == m->mtime_ns;
}

/*
 * Does elf hold DWARF itself?  A stripped file keeps the build-id of the
 * build it came from, so the symbol cache must ask the file in hand.
 */
static bool has_debug_info(Elf *elf)
{
	size_t shstrndx;
	if (elf_getshdrstrndx(elf, &shstrndx))
		return false;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;
		if (gelf_getshdr(scn, &sh) && sh.sh_type != SHT_NOBITS && sh.sh_size &&
		    (name = elf_strptr(elf, shstrndx, sh.sh_name)) &&
		    (!strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info")))
			return true;
	}
	return false;
}

/*
 * Prove the image open on fd and hand it to libdwfl: FILE_PROVEN (libdwfl
 * owns fd), else FILE_UNPROVEN or FILE_UNREADABLE with fd closed.
 */
static uint8_t open_image(struct sp_symbolizer *sym, struct file_entry *f, int fd)
{
	const struct sp_module *m = f->rep;
	sp_elf_info_release(&f->info);
	struct stat st;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		goto close_fd;
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		goto close_fd;
	int err = sp_elf_info_read(elf, &f->info);
	f->own_dwarf = !err && has_debug_info(elf);
	/* Its debug link, to tell libdwfl's request for it from one for an alternate file. */
	GElf_Word crc = 0;
	const char *link = err ? NULL : dwelf_elf_gnu_debuglink(elf, &crc);
	if (link && *link) {
		f->debuglink = sp_arena_strndup(&sym->strings, link, strlen(link));
		f->debuglink_crc = crc;
	}
	elf_end(elf);
	if (err)
		goto close_fd;
	if (!file_is_recorded(m, &st, &f->info)) {
		close(fd);
		return FILE_UNPROVEN;
	}
	f->dwfl = dwfl_begin(&sym->callbacks);
	if (!f->dwfl)
		goto close_fd;
	dwfl_report_begin(f->dwfl);
	/*
	 * Base 0 with add_p_vaddr places the file at its own p_vaddrs (bias 0),
	 * so lookups take static addresses whatever the file type.  The same
	 * fd is the one that was proven; libdwfl consumes it on success.
	 */
	f->mod = dwfl_report_elf(f->dwfl, f->open_path, f->open_path, fd, 0, true);
	if (!f->mod || dwfl_report_end(f->dwfl, NULL, NULL)) {
		if (!f->mod)
			close(fd);
		dwfl_end(f->dwfl);
		f->dwfl = NULL;
		f->mod = NULL;
		sp_elf_info_release(&f->info);
		return FILE_UNREADABLE;
	}
	/* find_debuginfo gets the module's userdata slot: it leads back to f. */
	void **userdata;
	dwfl_module_info(f->mod, &userdata, NULL, NULL, NULL, NULL, NULL, NULL);
	*userdata = f;
	return FILE_PROVEN;
close_fd:
	close(fd);
	sp_elf_info_release(&f->info);
	return FILE_UNREADABLE;
}

/*
 * Open, prove and hand a file to libdwfl, once; the outcome is remembered in
 * f->state.  An image handed over by the recorder is the only candidate.
 * Otherwise the path, then, when it does not prove to be the recorded file
 * and the process still runs, its mapping's /proc/PID/map_files entry: the
 * image that was sampled, even deleted or replaced (DESIGN decision 7).
 */
static void open_file(struct sp_symbolizer *sym, struct file_entry *f)
{
	const struct sp_module *m = f->rep;
	/* O_NONBLOCK: a path that now names a FIFO must not hang the report. */
	int fd = f->given_fd ? fcntl(f->given_fd - 1, F_DUPFD_CLOEXEC, 0)
			     : open(f->open_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	f->state = fd < 0 ? FILE_UNREADABLE : open_image(sym, f, fd);
	if (f->state != FILE_PROVEN && !f->given_fd && m->pid > 0 && !f->map_files &&
	    (asprintf(&f->map_files, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)m->pid,
		      m->start, m->end) >= 0 || (f->map_files = NULL))) {
		fd = open(f->map_files, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		uint8_t st = fd < 0 ? FILE_UNREADABLE : open_image(sym, f, fd);
		if (st == FILE_PROVEN || f->state == FILE_UNREADABLE)
			f->state = st;
	}
	if (f->state == FILE_PROVEN)
		sym->stats.files_proven++;
	else if (f->state == FILE_UNPROVEN)
		sym->stats.files_unproven++;
	else
		sym->stats.files_unreadable++;
}

/* Count a refused debug file; the first one's path is kept for the warning. */
static void note_mismatch(struct sp_symbolizer *sym, uint32_t n, const char *path)
{
	sym->stats.debug_files_mismatched += n;
	if (n && path && !sym->stats.debug_file_mismatched)
		sym->stats.debug_file_mismatched = sp_arena_strndup(&sym->strings, path,
								    strlen(path));
}

/*
 * libdwfl's find_debuginfo callback: asked for a module file's separate
 * debug file when the file lacks DWARF (dwfl_module_addrdie) or a symbol
 * table (dwfl_module_getsymtab), and for a DWARF alternate file (dwz).  The
 * search is sp_debug_file_find's, once per file, so that the candidates it
 * refuses are counted; libdwfl's own search serves alternate files (found
 * and checked by build-id) and debuginfod, whose file is checked here too.
 * Returns an fd libdwfl takes over, with its malloc'd name, or -1 (errno).
 */
/* What sp_debug_file_find looks for: f's separate debug file. */
static struct sp_debug_query debug_query(const struct file_entry *f)
{
	return (struct sp_debug_query){
		.path = f->open_path,
		.build_id = f->info.build_id,
		.build_id_len = f->info.build_id_len,
		.debuglink = f->debuglink,
		.debuglink_crc = f->debuglink_crc,
		.dirs = f->owner->debug_dirs,
	};
}

static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
			  Dwarf_Addr base, const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	struct file_entry *f = *userdata;
	/* The main request names the file's own debug link, or none when it has none. */
	bool own = f && (!debuglink_file ||
			 (f->debuglink && !strcmp(debuglink_file, f->debuglink)));
	if (!own)
		return dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name,
						    debuglink_file, debuglink_crc,
						    debuginfo_file_name);
	struct sp_symbolizer *sym = f->owner;
	struct sp_debug_query q = debug_query(f);
	int fd = -1;
	if (f->debug_state == DEBUG_FOUND) {
		/* Asked again (libdwfl gave up on the first fd): the same file, checked again. */
		fd = open(f->debug_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (fd >= 0 && !sp_debug_file_matches(&q, fd)) {
			close(fd);
			fd = -1;
		}
	} else if (f->debug_state == DEBUG_UNSEARCHED) {
		f->debug_state = DEBUG_NONE;
		struct sp_debug_found found;
		if (sp_debug_file_find(&q, &found))
			goto none; /* -ENOMEM: no debug file rather than a failed report */
		note_mismatch(sym, found.mismatched, found.first_mismatch);
		if (found.fd < 0 && sym->debuginfod && q.build_id_len) {
			char *name = NULL;
			found.fd = dwfl_standard_find_debuginfo(mod, userdata, modname, base,
								file_name, debuglink_file,
								debuglink_crc, &name);
			found.path = name;
			if (found.fd >= 0 && !sp_debug_file_matches(&q, found.fd)) {
				note_mismatch(sym, 1, name);
				close(found.fd);
				found.fd = -1;
			} else if (found.fd >= 0) {
				sym->stats.debug_files_debuginfod++;
				f->debug_debuginfod = true;
			}
		}
		if (found.fd >= 0 && found.path &&
		    (f->debug_path = sp_arena_strndup(&sym->strings, found.path,
						      strlen(found.path)))) {
			f->debug_state = DEBUG_FOUND;
			sym->stats.debug_files_used++;
			fd = found.fd;
			found.fd = -1;
		}
		sp_debug_found_release(&found);
	}
	if (fd >= 0) {
		/*
		 * Asked again, libdwfl still holds the name it got the first time
		 * (its open_elf failed on that file and keeps the name): replace it.
		 */
		free(*debuginfo_file_name);
		*debuginfo_file_name = NULL;
		char *cached = NULL;
		bool made;
		int cfd = sp_debug_cache_open(sym->cache_dir, q.build_id, q.build_id_len, fd,
					      &cached, &made);
		if (cfd >= 0) {
			close(fd);
			fd = cfd;
			if (!f->debug_cached)
				sym->stats.debug_files_cached++;
			f->debug_cached = true;
			sym->stats.debug_files_cache_written += made;
			*debuginfo_file_name = cached;
		} else {
			*debuginfo_file_name = strdup(f->debug_path);
		}
		return fd;
	}
none:
	errno = ENOENT;
	return -1;
}

/* Static address of a frame in its module's file, or false when it has none. */
static bool frame_svma(const struct sp_module *m, const struct file_entry *f,
		       const struct sp_frame *fr, uint64_t *svma)
{
	if (m->flags & SP_MODULE_HAS_BIAS) {
		*svma = fr->abs_ip - m->load_bias;
		return true;
	}
	/* No recorded bias: rel_ip is a file offset; the PT_LOAD holding it maps it. */
	for (size_t i = 0; i < f->info.nsegs; i++) {
		const struct sp_load_segment *s = &f->info.segs[i];
		if (fr->rel_ip >= s->offset && fr->rel_ip - s->offset < s->filesz) {
			*svma = s->vaddr + (fr->rel_ip - s->offset);
			return true;
		}
	}
	return false;
}

/* ---- DWARF: inline chains and source lines ------------------------------ */

/*
 * A function DIE's name, looked up through DW_AT_abstract_origin and
 * DW_AT_specification, so an inlined instance gets its abstract function's
 * name: a C++ linkage name demangled (qualified, with parameters, as ELF
 * symbols are shown; mangled with no_demangle), else DW_AT_name.  Other
 * linkage names are C asm labels (glibc's "__GI___mmap64" for __mmap64):
 * the source's name reads better.  NULL when the DIE has no name.
 */
static int die_function_name(struct sp_symbolizer *sym, Dwarf_Die *die, const char **out)
{
	Dwarf_Attribute attr;
	const char *name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
	if (!name)
		name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
	if (name && !strncmp(name, "_Z", 2)) {
		char *dem = sym->opts.no_demangle ? NULL : sp_demangle(name);
		if (dem) {
			*out = sp_arena_strndup(&sym->strings, dem, strlen(dem));
			free(dem);
			return *out ? 0 : -ENOMEM;
		}
		if (sym->opts.no_demangle) {
			*out = name;
			return 0;
		}
	}
	*out = dwarf_diename(die);
	if (!*out)
		*out = name;
	return 0;
}

/* Where an inlined call sits in its caller: DW_AT_call_file in its CU's file table. */
static void call_site(Dwarf_Die *inl, const char **file, uint32_t *line)
{
	Dwarf_Attribute attr;
	Dwarf_Word idx, ln;
	Dwarf_Die cu;
	Dwarf_Files *files;
	size_t nfiles;
	*file = NULL;
	*line = dwarf_formudata(dwarf_attr(inl, DW_AT_call_line, &attr), &ln) || ln > UINT32_MAX
			? 0 : (uint32_t)ln;
	if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_file, &attr), &idx) ||
	    !dwarf_diecu(inl, &cu, NULL, NULL) || dwarf_getsrcfiles(&cu, &files, &nfiles) ||
	    idx >= nfiles)
		return;
	const char *name = dwarf_filesrc(files, idx, NULL, NULL);
	/* libdw names DWARF 4's unused entry 0 "???". */
	*file = name && strcmp(name, "???") ? name : NULL;
}

static int push_src(struct sp_symbolizer *sym, const struct src_entry *e)
{
	if (sp_array_reserve((void **)&sym->src, &sym->src_cap, sym->nsrc + 1,
			     sizeof(*sym->src)))
		return -ENOMEM;
	sym->src[sym->nsrc++] = *e;
	return 0;
}

static int collect_function(Dwarf_Die *die, void *arg)
{
	struct cu_funcs *c = arg;
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;
	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
		if (hi <= lo)
			continue;
		if (sp_array_reserve((void **)&c->r, &c->cap, c->n + 1, sizeof(*c->r))) {
			c->err = -ENOMEM;
			return DWARF_CB_ABORT;
		}
		c->r[c->n++] = (struct fn_range){.lo = lo, .hi = hi, .die = *die};
	}
	return DWARF_CB_OK;
}

static int by_lo(const void *pa, const void *pb)
{
	const struct fn_range *a = pa, *b = pb;
	return a->lo < b->lo ? -1 : a->lo > b->lo;
}

/* How far back a lookup looks past ranges that start later but end sooner. */
#define FUNCTION_SCAN 8

/*
 * The function of cu whose code holds pc, or NULL.  Why not dwarf_getscopes
 * alone: it walks the whole CU for every address, and dwarf_getscopes_die
 * walks it again; on libpython's big CUs that made 2300 frames take 2.3 s.
 * A CU's function ranges are collected once (dwarf_getfuncs) and searched.
 */
static int find_function(struct sp_symbolizer *sym, struct file_entry *f, Dwarf_Die *cu,
			 Dwarf_Addr pc, const struct fn_range **out)
{
	*out = NULL;
	uint64_t key = dwarf_dieoffset(cu);
	uint32_t idx;
	if (!sp_map_get(&f->cu_index, key, &idx)) {
		if (sp_array_reserve((void **)&sym->cus, &sym->cus_cap, sym->ncus + 1,
				     sizeof(*sym->cus)))
			return -ENOMEM;
		struct cu_funcs *c = &sym->cus[sym->ncus];
		*c = (struct cu_funcs){0};
		dwarf_getfuncs(cu, collect_function, c, 0);
		if (c->err) {
			free(c->r);
			return c->err;
		}
		qsort(c->r, c->n, sizeof(*c->r), by_lo);
		idx = (uint32_t)sym->ncus;
		int err = sp_map_put(&f->cu_index, key, idx);
		if (err) {
			free(c->r);
			return err;
		}
		sym->ncus++;
	}
	const struct cu_funcs *c = &sym->cus[idx];
	size_t lo = 0, hi = c->n;
	while (lo < hi) { /* first range starting above pc */
		size_t mid = lo + (hi - lo) / 2;
		if (c->r[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo, seen = 0; i-- > 0 && seen < FUNCTION_SCAN; seen++)
		if (pc < c->r[i].hi) {
			*out = &c->r[i];
			break;
		}
	return 0;
}

/* Deeper than any compiler nests scopes; a bound against hostile DWARF. */
#define MAX_SCOPE_DEPTH 512

/*
 * The DIEs nesting pc inside the function fn, innermost first, fn last, into
 * *out (malloc'd): at each level the child scope (lexical block, inlined
 * function, ...) whose ranges hold pc.  Returns the count or -ENOMEM.
 */
static int scopes_in_function(const Dwarf_Die *fn, Dwarf_Addr pc, Dwarf_Die **out)
{
	size_t n = 0, cap = 16;
	Dwarf_Die *v = malloc(cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	v[n++] = *fn;
	while (n < MAX_SCOPE_DEPTH) {
		Dwarf_Die child;
		bool deeper = false;
		if (dwarf_child(&v[n - 1], &child) != 0)
			break;
		do {
			switch (dwarf_tag(&child)) {
			case DW_TAG_inlined_subroutine:
			case DW_TAG_lexical_block:
			case DW_TAG_subprogram:
			case DW_TAG_try_block:
			case DW_TAG_catch_block:
			case DW_TAG_with_stmt:
				deeper = dwarf_haspc(&child, pc) > 0;
				break;
			default:
				break;
			}
		} while (!deeper && dwarf_siblingof(&child, &child) == 0);
		if (!deeper)
			break;
		if (n == cap) {
			cap *= 2;
			Dwarf_Die *w = realloc(v, cap * sizeof(*v));
			if (!w) {
				free(v);
				return -ENOMEM;
			}
			v = w;
		}
		v[n++] = child;
	}
	for (size_t i = 0; i < n / 2; i++) {
		Dwarf_Die t = v[i];
		v[i] = v[n - 1 - i];
		v[n - 1 - i] = t;
	}
	*out = v;
	return (int)n;
}

/*
 * The functions DWARF places at svma, innermost first, into hit->src: each
 * DW_TAG_inlined_subroutine scope holding the address, then the
 * DW_TAG_subprogram that holds them (eu-addr2line -i's model).  The
 * innermost gets the line table's position of the address; each outer one
 * the call site of the inlined function it holds.  When no subprogram holds
 * the address, a last entry without a name keeps the position for the ELF
 * symbol.  A module without DWARF leaves hit->nsrc 0.  0 or -ENOMEM.
 */
static int lookup_source(struct sp_symbolizer *sym, struct file_entry *f, uint64_t svma,
			 struct sym_hit *hit)
{
	Dwarf_Addr bias = 0;
	Dwarf_Die *cu = dwfl_module_addrdie(f->mod, svma, &bias);
	if (!cu || svma < bias)
		return 0;
	Dwarf_Addr pc = svma - bias;
	const struct fn_range *fn;
	int err = find_function(sym, f, cu, pc, &fn);
	if (err)
		return err;
	Dwarf_Die *scopes = NULL;
	int n;
	if (fn) {
		n = scopes_in_function(&fn->die, pc, &scopes);
		if (n < 0)
			return n;
	} else {
		/*
		 * No function of the CU holds pc.  libdwfl's address ranges have
		 * no gaps: an address past a CU's end (crt1.o's _start, with no
		 * DWARF) still finds that CU, and its line table then answers
		 * with the CU's last line, so the CU's own ranges decide.  Code
		 * the CU does hold (assembly) is looked up the slow way:
		 * dwarf_getscopes follows an innermost inlined function to its
		 * abstract definition, so the DIEs that really nest it are the
		 * parents (dwarf_getscopes_die) of its innermost scope.
		 */
		if ((dwarf_hasattr(cu, DW_AT_ranges) || dwarf_hasattr(cu, DW_AT_low_pc)) &&
		    dwarf_haspc(cu, pc) <= 0)
			return 0;
		Dwarf_Die *inner = NULL;
		n = dwarf_getscopes(cu, pc, &inner);
		if (n > 0)
			n = dwarf_getscopes_die(&inner[0], &scopes);
		free(inner);
	}
	struct src_entry e = {0};
	Dwarf_Line *dl = dwarf_getsrc_die(cu, pc);
	int lineno;
	if (dl) {
		e.file = dwarf_linesrc(dl, NULL, NULL);
		e.line = !dwarf_lineno(dl, &lineno) && lineno > 0 ? (uint32_t)lineno : 0;
	}
	size_t start = sym->nsrc;
	bool closed = false;
	for (int i = 0; i < n && !closed && !err; i++) {
		int tag = dwarf_tag(&scopes[i]);
		if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram)
			continue;
		err = die_function_name(sym, &scopes[i], &e.name);
		if (err)
			break;
		e.is_inline = tag == DW_TAG_inlined_subroutine;
		if (e.is_inline && !e.name)
			e.name = "??"; /* what addr2line prints for a function without a name */
		closed = !e.is_inline;
		err = push_src(sym, &e);
		if (e.is_inline)
			call_site(&scopes[i], &e.file, &e.line);
	}
	free(scopes);
	if (!err && !closed && (e.file || sym->nsrc > start)) {
		e.name = NULL;
		e.is_inline = false;
		err = push_src(sym, &e);
	}
	if (err) {
		sym->nsrc = start;
		return err;
	}
	hit->src = (uint32_t)start;
	hit->nsrc = (uint32_t)(sym->nsrc - start);
	return 0;
}

/* ---- the symbol cache: names found before, by build-id ------------------ */

/* Keep hit as f's answer for svma (room in sym->hits was reserved). */
static int add_hit(struct sp_symbolizer *sym, struct file_entry *f, uint64_t svma,
		   const struct sym_hit *hit)
{
	uint32_t idx = (uint32_t)sym->nhits;
	if ((f->symcache == SYMCACHE_READ &&
	     sp_array_reserve((void **)&f->fhits, &f->fhits_cap, f->nfhits + 1,
			      sizeof(*f->fhits))) ||
	    sp_map_put(&f->cache, svma, idx))
		return -ENOMEM;
	if (f->symcache == SYMCACHE_READ)
		f->fhits[f->nfhits++] = (struct file_hit){.svma = svma, .hit = idx};
	sym->hits[sym->nhits++] = *hit;
	return 0;
}

static int symcache_entry(void *ctx, const struct sp_symcache_hit *h)
{
	struct file_entry *f = ctx;
	struct sp_symbolizer *sym = f->owner;
	uint32_t idx;
	if (sp_map_get(&f->cache, h->svma, &idx))
		return 0;
	if (sp_array_reserve((void **)&sym->hits, &sym->hits_cap, sym->nhits + 1,
			     sizeof(*sym->hits)))
		return -ENOMEM;
	struct sym_hit hit = {.name = h->name, .offset = h->offset, .src = (uint32_t)sym->nsrc,
			      .nsrc = h->nsrc};
	for (uint32_t i = 0; i < h->nsrc; i++) {
		const struct sp_symcache_src *c = &h->src[i];
		struct src_entry e = {.name = c->name, .file = c->file, .line = c->line,
				      .is_inline = c->is_inline};
		int err = push_src(sym, &e);
		if (err)
			return err;
	}
	return add_hit(sym, f, h->svma, &hit);
}

/*
 * The separate debug file a cache file's names came from, looked for again
 * (found on this machine, not from debuginfod): the cache stands in for its
 * DWARF only while a report without the cache would read it too.  Found, it
 * is counted and remembered as find_debuginfo would (libdwfl's later request
 * reopens it); not found, nothing is counted, so find_debuginfo's own search
 * still counts what it refuses.
 */
static bool debug_file_found_again(struct sp_symbolizer *sym, struct file_entry *f)
{
	if (f->debug_state != DEBUG_UNSEARCHED)
		return f->debug_state == DEBUG_FOUND && !f->debug_debuginfod;
	struct sp_debug_query q = debug_query(f);
	struct sp_debug_found found;
	if (sp_debug_file_find(&q, &found))
		return false;
	bool ok = found.fd >= 0 && found.path &&
		  (f->debug_path = sp_arena_strndup(&sym->strings, found.path, strlen(found.path)));
	if (ok) {
		note_mismatch(sym, found.mismatched, found.first_mismatch);
		f->debug_state = DEBUG_FOUND;
		sym->stats.debug_files_used++;
	}
	sp_debug_found_release(&found);
	return ok;
}

/*
 * Before f's first lookup: what the cache file of its build-id holds.  The
 * file was proven first, so these are its names, and they stand when the
 * DWARF they came from is still there: in the file in hand (a stripped copy
 * keeps the build-id), or in its debug file found again.  A report then
 * prints the same with or without the cache.
 * Off without a cache directory or a build-id, and with no_demangle (the
 * cache holds demangled names).  0 or -ENOMEM; a missing or damaged cache
 * file is no error.
 */
static int symcache_load(struct sp_symbolizer *sym, struct file_entry *f)
{
	if (!sym->cache_dir || !f->info.build_id_len || sym->opts.no_demangle) {
		f->symcache = SYMCACHE_OFF;
		return 0;
	}
	f->symcache = SYMCACHE_READ;
	struct sp_symcache_file cf;
	int err = sp_symcache_open(sym->cache_dir, f->info.build_id, f->info.build_id_len, &cf);
	if (!err && (cf.source == SP_SYMCACHE_OWN ? f->own_dwarf
						  : !f->own_dwarf && debug_file_found_again(sym, f)))
		err = sp_symcache_each(&cf, &sym->strings, symcache_entry, f);
	sp_symcache_close(&cf);
	if (err == -ENOMEM)
		return err;
	if (err == -SP_E_SPOOL_CORRUPT)
		f->symcache_new = true; /* rewritten whole at the end */
	return 0;
}

/*
 * Where f's DWARF is, when its names are worth keeping: full DWARF (with no
 * alternate file, which could go missing apart from it), in the file itself
 * or in a debug file our own search found.  Such a file cannot be named
 * better later.  -1 when there is no DWARF or it came another way.
 */
static int dwarf_source(struct file_entry *f)
{
	Dwarf_Addr bias;
	Dwarf *dw = f->mod ? dwfl_module_getdwarf(f->mod, &bias) : NULL;
	if (!dw)
		return -1;
	const char *alt_name;
	const void *alt_id;
	if (dwelf_dwarf_gnu_debugaltlink(dw, &alt_name, &alt_id) != 0)
		return -1;
	if (dwarf_getelf(dw) == dwfl_module_getelf(f->mod, &bias))
		return SP_SYMCACHE_OWN;
	return f->debug_state == DEBUG_FOUND && !f->debug_debuginfod ? SP_SYMCACHE_SEPARATE : -1;
}

/*
 * Addresses kept per cache file.  Every report that reaches the file decodes
 * all of it, so past this many (about 1 MB of file) only the addresses the
 * last report asked for are kept.
 */
#define SYMCACHE_MAX_ENTRIES 16384

/* Write f's hits, those read and those found, to its cache file; failures are silent. */
static void symcache_save(struct sp_symbolizer *sym, struct file_entry *f)
{
	int source = f->symcache == SYMCACHE_READ ? dwarf_source(f) : -1;
	if (source < 0)
		return;
	struct sp_buf b;
	sp_buf_init(&b);
	size_t count = 0;
	struct sp_symcache_src src[SYMCACHE_MAX_SRC];
	bool only_used = f->nfhits > SYMCACHE_MAX_ENTRIES;
	for (size_t i = 0; i < f->nfhits && count < SYMCACHE_MAX_ENTRIES; i++) {
		const struct sym_hit *h = &sym->hits[f->fhits[i].hit];
		if (h->nsrc > SYMCACHE_MAX_SRC || (only_used && !h->used))
			continue;
		for (uint32_t k = 0; k < h->nsrc; k++) {
			const struct src_entry *e = &sym->src[h->src + k];
			src[k] = (struct sp_symcache_src){.name = e->name, .file = e->file,
							  .line = e->line, .is_inline = e->is_inline};
		}
		struct sp_symcache_hit ch = {.svma = f->fhits[i].svma, .name = h->name,
					     .offset = h->offset, .nsrc = h->nsrc, .src = src};
		int err = sp_symcache_put(&b, &ch);
		if (err == -ENOMEM)
			break;
		count += !err;
	}
	sp_symcache_write(sym->cache_dir, f->info.build_id, f->info.build_id_len, (uint8_t)source,
			  &b, count);
	sp_buf_release(&b);
}

/* Name of svma in a proven file, cached per (file, svma). */
static int lookup_symbol(struct sp_symbolizer *sym, struct file_entry *f, uint64_t svma,
			 const struct sym_hit **out)
{
	uint32_t idx;
	if (f->symcache == SYMCACHE_UNREAD) {
		int err = symcache_load(sym, f);
		if (err)
			return err;
	}
	if (sp_map_get(&f->cache, svma, &idx)) {
		sym->hits[idx].used = true;
		*out = &sym->hits[idx];
		return 0;
	}
	if (sp_array_reserve((void **)&sym->hits, &sym->hits_cap, sym->nhits + 1,
			     sizeof(*sym->hits)))
		return -ENOMEM;
	if (!f->symtab_built) {
		int err = sp_symtab_build(&f->symtab, f->mod);
		if (err)
			return err;
		f->symtab_built = true;
	}
	struct sym_hit hit = {.used = true};
	const struct sp_symtab_entry *se = sp_symtab_find(&f->symtab, svma);
	if (se) {
		const char *name = se->name;
		/*
		 * libdwfl appends the symbol version of .dynsym names
		 * ("__libc_start_main@@GLIBC_2.34"): noise in a profile, and
		 * the demangler rejects it, so it is cut off first.
		 */
		const char *at = strchr(name + 1, '@');
		const char *bare = at ? sp_arena_strndup(&sym->strings, name, (size_t)(at - name))
				      : name;
		char *dem = !bare || sym->opts.no_demangle ? NULL : sp_demangle(bare);
		if (dem)
			hit.name = sp_arena_strndup(&sym->strings, dem, strlen(dem));
		else if (bare && bare != name)
			hit.name = bare;
		else if (bare)
			hit.name = sp_arena_strndup(&sym->strings, name, strlen(name));
		free(dem);
		if (!hit.name)
			return -ENOMEM;
		hit.offset = svma - se->addr;
	}
	int err = lookup_source(sym, f, svma, &hit);
	if (err)
		return err;
	/* No ELF symbol (a stripped file whose debug file has none): DWARF's name for it. */
	const struct src_entry *outer = hit.nsrc ? &sym->src[hit.src + hit.nsrc - 1] : NULL;
	if (!hit.name && outer && outer->name) {
		hit.name = outer->name;
		hit.offset = 0;
	}
	idx = (uint32_t)sym->nhits;
	err = add_hit(sym, f, svma, &hit);
	if (err)
		return err;
	f->symcache_new = f->symcache == SYMCACHE_READ;
	*out = &sym->hits[idx];
	return 0;
}

/* ---- kernel frames: kallsyms ------------------------------------------- */

static bool is_kernel_frame(const struct sp_spool *s, const struct sp_frame *fr)
{
	if (fr->mode == SP_FRAME_KERNEL)
		return true;
	const struct sp_module *m = fr->module_id == SP_NO_MODULE ? NULL
								 : sp_spool_module(s, fr->module_id);
	return fr->mode == SP_FRAME_USER && m && (m->flags & SP_MODULE_KERNEL);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/*
 * Read kallsyms once, for every kernel address of the spool at once: the
 * file is streamed a single time and only the symbols those addresses need
 * are kept (DESIGN decision 9).  Trouble leaves ksyms_state UNUSABLE and is
 * counted; only -ENOMEM is an error.
 */
static int load_kallsyms(struct sp_symbolizer *sym)
{
	sym->ksyms_state = SOURCE_UNUSABLE;
	if (sym->opts.no_kernel_symbols)
		return 0;
	const char *path = sym->opts.kallsyms_path;
	if (!path) {
		/* The running kernel's symbols name another kernel's addresses wrongly. */
		const struct sp_spool_meta *meta = sp_spool_meta(sym->spool);
		struct utsname uts;
		if (meta && meta->kernel_release && *meta->kernel_release &&
		    (uname(&uts) || strcmp(uts.release, meta->kernel_release))) {
			sym->stats.kallsyms_other_kernel = true;
			return 0;
		}
		path = DEFAULT_KALLSYMS;
	}
	size_t n = 0;
	uint64_t *addrs = malloc((sym->nframes ? sym->nframes : 1) * sizeof(*addrs));
	if (!addrs)
		return -ENOMEM;
	for (size_t i = 0; i < sym->nframes; i++) {
		const struct sp_frame *fr = sp_spool_frame(sym->spool, (uint32_t)i);
		if (fr && is_kernel_frame(sym->spool, fr))
			addrs[n++] = fr->abs_ip;
	}
	qsort(addrs, n, sizeof(*addrs), cmp_u64);
	size_t u = 0;
	for (size_t i = 0; i < n; i++)
		if (u == 0 || addrs[i] != addrs[u - 1])
			addrs[u++] = addrs[i];
	int err = sp_kallsyms_load(path, addrs, u, &sym->ksyms);
	free(addrs);
	if (err == -ENOMEM)
		return err;
	if (err) {
		sym->stats.kallsyms_error = err;
		return 0;
	}
	const struct sp_kallsyms_stats *ks = sp_kallsyms_stats(sym->ksyms);
	sym->stats.kallsyms_read = true;
	sym->stats.kallsyms_lines = ks->lines;
	sym->stats.kallsyms_kept = ks->kept;
	sym->stats.kallsyms_malformed = ks->malformed;
	sym->stats.kallsyms_restricted = ks->restricted;
	if (!ks->restricted)
		sym->ksyms_state = SOURCE_LOADED;
	return 0;
}

static int resolve_kernel(struct sp_symbolizer *sym, const struct sp_frame *fr,
			  struct sp_resolved_frame *rf)
{
	rf->kind = SP_KIND_KERNEL;
	rf->module = "[kernel]";
	if (sym->ksyms_state == SOURCE_UNLOADED) {
		int err = load_kallsyms(sym);
		if (err)
			return err;
	}
	const struct sp_ksym *ks =
		sym->ksyms_state == SOURCE_LOADED ? sp_kallsyms_find(sym->ksyms, fr->abs_ip) : NULL;
	if (ks) {
		rf->name = ks->name;
		rf->module = ks->module ? sp_arena_printf(&sym->strings, "[%s]", ks->module)
					: "[kernel.kallsyms]";
		rf->origin = SP_ORIGIN_KERNEL_SYMBOLS;
		rf->symbol_offset = fr->abs_ip - ks->addr;
		sym->stats.kernel_frames_named++;
		return rf->module ? 0 : -ENOMEM;
	}
	sym->stats.kernel_frames_unnamed++;
	rf->name = sp_arena_printf(&sym->strings, "[kernel]+0x%" PRIx64, fr->abs_ip);
	return rf->name ? 0 : -ENOMEM;
}

/* ---- anonymous code: perf maps ---------------------------------------- */

/*
 * The process a frame outside every module belongs to: frames are interned
 * without one, so it comes from the samples whose stacks hold the frame.
 * Computed once for all frames: each stack node is marked with its samples'
 * pid, or PID_MANY when processes share it, walking up only until a node
 * already carries the same mark.
 */
static int compute_frame_pids(struct sp_symbolizer *sym)
{
	const struct sp_spool *s = sym->spool;
	size_t nstacks = sp_spool_stack_count(s);
	int32_t *node = malloc((nstacks ? nstacks : 1) * sizeof(*node));
	sym->frame_pid = malloc((sym->nframes ? sym->nframes : 1) * sizeof(*sym->frame_pid));
	if (!node || !sym->frame_pid) {
		free(node);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nstacks; i++)
		node[i] = PID_NONE;
	for (size_t i = 0; i < sym->nframes; i++)
		sym->frame_pid[i] = PID_NONE;
	for (size_t i = 0; i < sp_spool_sample_count(s); i++) {
		const struct sp_sample *x = sp_spool_sample(s, i);
		const struct sp_thread *t = sp_spool_thread(s, x->thread);
		if (!t)
			continue;
		int32_t pid = t->pid;
		for (uint32_t id = x->stack_id; id && id < nstacks; id = sp_spool_stack_parent(s, id)) {
			if (node[id] == pid || node[id] == PID_MANY)
				break;
			node[id] = node[id] == PID_NONE ? pid : PID_MANY;
		}
	}
	for (size_t id = 1; id < nstacks; id++) {
		uint32_t f = sp_spool_stack_frame(s, (uint32_t)id);
		if (node[id] == PID_NONE || f >= sym->nframes)
			continue;
		int32_t *fp = &sym->frame_pid[f];
		*fp = *fp == PID_NONE || *fp == node[id] ? node[id] : PID_MANY;
	}
	free(node);
	return 0;
}

/*
 * The process's start when the recording saw it: its exec marker (the
 * recorder writes a not-Python marker at every exec), converted from
 * CLOCK_MONOTONIC to µs since the epoch with the spool's two anchors.  0
 * when the process was already running when the recording began (attached,
 * or forked without exec): then nothing in the spool says when it started.
 */
static uint64_t process_start_us(const struct sp_spool *s, int32_t pid)
{
	const struct sp_spool_meta *meta = sp_spool_meta(s);
	for (size_t i = 0; i < sp_spool_exec_count(s); i++) {
		const struct sp_exec *e = sp_spool_exec(s, i);
		if (e->pid != pid || e->is_python_runtime || !e->timestamp_ns)
			continue;
		uint64_t since = e->timestamp_ns > meta->start_monotonic_ns
					 ? e->timestamp_ns - meta->start_monotonic_ns : 0;
		return meta->start_timestamp_us + since / 1000;
	}
	return 0;
}

/*
 * The seeds' PID-reuse guard: the latest marker of the process decides; or,
 * with ever, any marker that said Python.
 */
static bool is_python_process(const struct sp_spool *s, int32_t pid, bool ever)
{
	bool python = false;
	for (size_t i = 0; i < sp_spool_exec_count(s); i++) {
		const struct sp_exec *e = sp_spool_exec(s, i);
		if (e->pid == pid)
			python = e->is_python_runtime || (ever && python);
	}
	return python;
}

/* May pid's perf map name its anonymous code (opts.perf_map_policy)? */
static bool perf_map_allowed(const struct sp_symbolizer *sym, int32_t pid)
{
	switch (sym->opts.perf_map_policy) {
	case SP_PERF_MAPS_NONE:
		return false;
	case SP_PERF_MAPS_PYTHON:
		return is_python_process(sym->spool, pid, false);
	case SP_PERF_MAPS_PIDS:
		return sym->opts.perf_map_npids &&
		       bsearch(&pid, sym->perf_map_pids, sym->opts.perf_map_npids,
			       sizeof(pid), sp_cmp_pid);
	default:
		return true;
	}
}

/* The perf map of pid, read on first use; NULL when none may or can be used. */
static int process_map(struct sp_symbolizer *sym, int32_t pid, const struct proc_map **out)
{
	*out = NULL;
	uint32_t idx;
	if (sp_map_get(&sym->map_index, (uint64_t)(uint32_t)pid, &idx)) {
		if (sym->maps[idx].state == SOURCE_LOADED)
			*out = &sym->maps[idx];
		return 0;
	}
	if (sp_array_reserve((void **)&sym->maps, &sym->maps_cap, sym->nmaps + 1,
			     sizeof(*sym->maps)))
		return -ENOMEM;
	struct proc_map *pm = &sym->maps[sym->nmaps];
	*pm = (struct proc_map){.pid = pid, .state = SOURCE_UNUSABLE};
	sp_perf_map_init(&pm->map);
	int err = sp_map_put(&sym->map_index, (uint64_t)(uint32_t)pid, (uint32_t)sym->nmaps);
	if (err)
		return err;
	sym->nmaps++;
	if (!perf_map_allowed(sym, pid))
		return 0;
	unsigned verdict;
	err = sp_perf_map_load(&pm->map, sym->opts.perf_map_dir, pid,
			       process_start_us(sym->spool, pid), NULL, &verdict);
	if (err == -ENOMEM)
		return err;
	if (err)
		verdict = SP_PERF_MAP_MISSING; /* a read error: as good as no file */
	switch (verdict) {
	case SP_PERF_MAP_USED:
		break;
	case SP_PERF_MAP_INSECURE:
		sym->stats.perf_maps_insecure++;
		return 0;
	case SP_PERF_MAP_STALE:
		sym->stats.perf_maps_stale++;
		return 0;
	default:
		sym->stats.perf_maps_missing++;
		return 0;
	}
	sym->stats.perf_maps_read++;
	sym->stats.perf_maps_limited += pm->map.stats.limited;
	sym->stats.perf_map_lines_malformed += pm->map.stats.malformed + pm->map.stats.overflow;
	pm->module = sp_arena_printf(&sym->strings, "perf-%d.map", (int)pid);
	if (!pm->module)
		return -ENOMEM;
	pm->state = SOURCE_LOADED;
	*out = pm;
	return 0;
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s && s[1] ? s + 1 : p;
}

/*
 * Name a frame of anonymous code of pid from its perf map; rf untouched when
 * it cannot.  in_anon: the frame is in an anonymous mapping, where a runtime
 * would have written a map; only those count as missing one.  A frame outside
 * every mapping is more often a stale register (the first sample after an
 * exec carries the old image's pc) than JIT code.
 */
static int resolve_perf_map(struct sp_symbolizer *sym, int32_t pid, const struct sp_frame *fr,
			    bool in_anon, struct sp_resolved_frame *rf)
{
	if (sym->opts.perf_map_policy == SP_PERF_MAPS_NONE) {
		sym->stats.perf_map_frames_denied++;
		return 0;
	}
	const struct proc_map *pm;
	int err = process_map(sym, pid, &pm);
	if (err || !pm) {
		if (!err && !perf_map_allowed(sym, pid))
			sym->stats.perf_map_frames_denied++;
		else if (!err && in_anon)
			sym->stats.perf_map_frames_unmapped++;
		return err;
	}
	const struct sp_perf_map_range *r = sp_perf_map_find(&pm->map, fr->abs_ip);
	if (!r)
		return 0;
	const char *name = sp_perf_map_name(&pm->map, r);
	if (!strncmp(name, "py::", 4)) {
		/* CPython's trampolines (-X perf): "py::QUALNAME:FILENAME". */
		const char *func = name + 4, *colon = strchr(func, ':');
		const char *file = colon && colon[1] ? colon + 1 : NULL;
		rf->name = sp_arena_strndup(&sym->strings, func,
					    colon ? (size_t)(colon - func) : strlen(func));
		rf->file = file;
		rf->module = file ? base_name(file) : "[python]";
		rf->kind = SP_KIND_PYTHON;
	} else {
		char *dem = sym->opts.no_demangle ? NULL : sp_demangle(name);
		rf->name = dem ? sp_arena_strndup(&sym->strings, dem, strlen(dem)) : name;
		free(dem);
		rf->module = pm->module;
		rf->flags |= SP_RFRAME_JIT;
	}
	if (!rf->name)
		return -ENOMEM;
	rf->origin = SP_ORIGIN_PERF_MAP;
	rf->symbol_offset = fr->abs_ip - r->sym_start;
	sym->stats.perf_map_frames_named++;
	return 0;
}

/* ---- user frames ------------------------------------------------------- */

/* Room for n resolved frames that stay where they are for the symbolizer's life. */
static struct sp_resolved_frame *chain_alloc(struct sp_symbolizer *sym, size_t n)
{
	struct chain_block *b = sym->chain_blocks;
	if (!b || b->cap - b->used < n) {
		size_t cap = n > 256 ? n : 256;
		struct chain_block *nb = malloc(sizeof(*nb) + cap * sizeof(nb->f[0]));
		if (!nb)
			return NULL;
		nb->used = 0;
		nb->cap = cap;
		nb->next = b;
		sym->chain_blocks = b = nb;
	}
	struct sp_resolved_frame *f = b->f + b->used;
	b->used += n;
	return f;
}

/*
 * Give a named native frame what DWARF knows of its address: the source
 * position of the containing function (rf), and unless no_inline, the
 * chain of inlined functions before it.
 */
static int attach_source(struct sp_symbolizer *sym, uint32_t frame_id,
			 struct sp_resolved_frame *rf, const struct sym_hit *hit)
{
	if (!hit->nsrc)
		return 0;
	const struct src_entry *src = &sym->src[hit->src];
	size_t n = hit->nsrc;
	rf->file = src[n - 1].file;
	rf->line = src[n - 1].line;
	if (rf->file && rf->line)
		sym->stats.frames_with_lines++;
	if (n == 1 || sym->opts.no_inline)
		return 0;
	struct sp_resolved_frame *c = chain_alloc(sym, n);
	if (!c)
		return -ENOMEM;
	for (size_t i = 0; i + 1 < n; i++) {
		c[i] = *rf;
		c[i].name = src[i].name;
		c[i].file = src[i].file;
		c[i].line = src[i].line;
		c[i].flags |= SP_RFRAME_INLINE;
		c[i].symbol_offset = 0;
	}
	c[n - 1] = *rf;
	sym->chain[frame_id] = c;
	sym->chain_len[frame_id] = (uint32_t)n;
	sym->stats.inline_frames += n - 1;
	return 0;
}

static int resolve_user(struct sp_symbolizer *sym, uint32_t frame_id, const struct sp_frame *fr,
			struct sp_resolved_frame *rf)
{
	if (fr->module_id == SP_NO_MODULE || fr->module_id >= sym->nmodules) {
		/* Code outside every recorded mapping may still be a runtime's, named in its map. */
		if (!sym->frame_pid) {
			int err = compute_frame_pids(sym);
			if (err)
				return err;
		}
		int32_t pid = sym->frame_pid[frame_id];
		if (pid != PID_NONE && pid != PID_MANY) {
			int err = resolve_perf_map(sym, pid, fr, false, rf);
			if (err || rf->origin == SP_ORIGIN_PERF_MAP)
				return err;
		}
		rf->kind = SP_KIND_UNKNOWN;
		rf->module = "[unknown]";
		rf->name = sp_arena_printf(&sym->strings, "[unknown]+0x%" PRIx64, fr->abs_ip);
		return rf->name ? 0 : -ENOMEM;
	}
	const struct sp_module *m = sp_spool_module(sym->spool, fr->module_id);
	if (m && (m->flags & SP_MODULE_KERNEL))
		return resolve_kernel(sym, fr, rf);
	rf->module = sym->module_name[fr->module_id];
	if (m && (m->flags & SP_MODULE_ANON)) {
		int err = resolve_perf_map(sym, m->pid, fr, true, rf);
		if (err || rf->origin == SP_ORIGIN_PERF_MAP)
			return err;
	}
	if (sym->native && m && has_file(m)) {
		int err = resolve_native_plugin(sym, frame_id, fr, rf);
		if (err || rf->origin == SP_ORIGIN_ELF)
			return err;
	}
	/* A plug-in replaces the built-in ELF/DWARF backend for every module. */
	uint32_t fi = sym->native ? NO_FILE : sym->module_file[fr->module_id];
	if (m && fi != NO_FILE) {
		struct file_entry *f = &sym->files[fi];
		if (f->state == FILE_UNOPENED)
			open_file(sym, f);
		uint64_t svma;
		if (f->state == FILE_PROVEN && frame_svma(m, f, fr, &svma)) {
			const struct sym_hit *hit;
			int err = lookup_symbol(sym, f, svma, &hit);
			if (err)
				return err;
			if (hit->name) {
				rf->name = hit->name;
				rf->symbol_offset = hit->offset;
				rf->origin = SP_ORIGIN_ELF;
				return attach_source(sym, frame_id, rf, hit);
			}
		}
	}
	/* Module-relative, so the same code reads the same in every process. */
	rf->name = sp_arena_printf(&sym->strings, "%s+0x%" PRIx64, rf->module, fr->rel_ip);
	return rf->name ? 0 : -ENOMEM;
}

/* ---- stored frames: the spool's symbol records -------------------------- */

/* Does a stored frame stand, given the options?  (struct sp_symbolizer_opts.stored_symbols) */
static bool stored_usable(const struct sp_symbolizer *sym, const struct sp_resolved_frame *c,
			  size_t n)
{
	/* Markers are never stored: a file claiming one is not believed. */
	for (size_t i = 0; i < n; i++)
		if (c[i].kind == SP_KIND_TRUNCATED || (c[i].flags & SP_RFRAME_TRUNCATED))
			return false;
	const struct sp_resolved_frame *last = &c[n - 1];
	switch (last->origin) {
	case SP_ORIGIN_ADDRESS_ONLY:
		return sym->opts.stored_symbols == SP_STORED_ALL;
	case SP_ORIGIN_KERNEL_SYMBOLS:
		return !sym->opts.no_kernel_symbols;
	case SP_ORIGIN_PERF_MAP:
		return sym->opts.perf_map_policy == SP_PERF_MAPS_ALL;
	default:
		return true;
	}
}

/*
 * Take frame_id's chain from the spool's symbol records, opening no file:
 * *done true when it was used, counted in the stats as a live one would be.
 */
static int resolve_stored(struct sp_symbolizer *sym, uint32_t frame_id,
			  struct sp_resolved_frame *rf, bool *done)
{
	*done = false;
	size_t n = sp_symstore_get(sym->spool, sym->stored, frame_id, NULL, 0);
	if (!n)
		return 0;
	struct sp_resolved_frame *c = chain_alloc(sym, n);
	if (!c)
		return -ENOMEM;
	sp_symstore_get(sym->spool, sym->stored, frame_id, c, n);
	if (!stored_usable(sym, c, n)) {
		sym->frame_src[frame_id] = SP_FRAME_SRC_RESOLVED_AGAIN;
		return 0;
	}
	*rf = c[n - 1];
	if (n > 1 && !sym->opts.no_inline) {
		sym->chain[frame_id] = c;
		sym->chain_len[frame_id] = (uint32_t)n;
		sym->stats.inline_frames += n - 1;
	}
	if (rf->file && rf->line)
		sym->stats.frames_with_lines++;
	if (rf->kind == SP_KIND_KERNEL && rf->origin == SP_ORIGIN_KERNEL_SYMBOLS)
		sym->stats.kernel_frames_named++;
	else if (rf->kind == SP_KIND_KERNEL)
		sym->stats.kernel_frames_unnamed++;
	if (rf->origin == SP_ORIGIN_PERF_MAP)
		sym->stats.perf_map_frames_named++;
	sym->stats.frames_stored++;
	sym->frame_src[frame_id] = SP_FRAME_SRC_STORED;
	*done = true;
	return 0;
}

/* Resolve frame_id into sym->frames (and sym->chain), once. */
static int resolve_frame(struct sp_symbolizer *sym, uint32_t frame_id)
{
	struct sp_resolved_frame *rf = &sym->frames[frame_id];
	const struct sp_frame *fr = sp_spool_frame(sym->spool, frame_id);
	if (!fr)
		return -SP_E_BAD_ARG;
	*rf = (struct sp_resolved_frame){
		.module = "",
		.kind = SP_KIND_NATIVE,
		.origin = SP_ORIGIN_ADDRESS_ONLY,
		.pc = fr->abs_ip,
	};
	int err = 0;
	bool stored = false;
	if (fr->mode != SP_FRAME_TRUNCATED && sym->stored) {
		err = resolve_stored(sym, frame_id, rf, &stored);
		if (err)
			return err;
	}
	if (!sym->frame_src[frame_id])
		sym->frame_src[frame_id] = SP_FRAME_SRC_LIVE;
	if (fr->mode == SP_FRAME_TRUNCATED) {
		rf->name = "[truncated]";
		rf->kind = SP_KIND_TRUNCATED;
		rf->flags = SP_RFRAME_TRUNCATED;
	} else if (!stored) {
		err = fr->mode == SP_FRAME_KERNEL ? resolve_kernel(sym, fr, rf)
						  : resolve_user(sym, frame_id, fr, rf);
	}
	if (!err && rf->kind == SP_KIND_NATIVE)
		err = flag_python_runtime(sym, frame_id, fr);
	if (err)
		return err;
	if (rf->kind != SP_KIND_TRUNCATED) {
		if (rf->origin != SP_ORIGIN_ADDRESS_ONLY)
			sym->stats.frames_named++;
		else
			sym->stats.frames_address_only++;
	}
	sym->resolved[frame_id] = 1;
	return 0;
}

int sp_symbolizer_resolve_all(struct sp_symbolizer *sym, uint32_t frame_id,
			      const struct sp_resolved_frame **frames, size_t *n)
{
	if (frame_id >= sym->nframes)
		return -SP_E_BAD_ARG;
	if (!sym->resolved[frame_id]) {
		int err = resolve_frame(sym, frame_id);
		if (err)
			return err;
	}
	if (sym->chain[frame_id]) {
		*frames = sym->chain[frame_id];
		*n = sym->chain_len[frame_id];
	} else {
		*frames = &sym->frames[frame_id];
		*n = 1;
	}
	return 0;
}

int sp_symbolizer_resolve(struct sp_symbolizer *sym, uint32_t frame_id,
			  const struct sp_resolved_frame **out)
{
	const struct sp_resolved_frame *frames;
	size_t n;
	int err = sp_symbolizer_resolve_all(sym, frame_id, &frames, &n);
	if (!err)
		*out = &frames[n - 1];
	return err;
}

/* ---- the seeds' API: perf-map pid lists, native plug-in, Python runtime flags ---- */

/* Copy what sp_symbolizer_new's caller lent: the pid list; set up the plug-in's groups. */
static int setup_api_opts(struct sp_symbolizer *sym)
{
	struct sp_symbolizer_opts *o = &sym->opts;
	if (o->perf_map_policy != SP_PERF_MAPS_PIDS || !o->perf_map_pids)
		o->perf_map_npids = 0;
	if (o->perf_map_npids) {
		sym->perf_map_pids = malloc(o->perf_map_npids * sizeof(*sym->perf_map_pids));
		if (!sym->perf_map_pids)
			return -ENOMEM;
		memcpy(sym->perf_map_pids, o->perf_map_pids,
		       o->perf_map_npids * sizeof(*sym->perf_map_pids));
		qsort(sym->perf_map_pids, o->perf_map_npids, sizeof(*sym->perf_map_pids), sp_cmp_pid);
	}
	o->perf_map_pids = sym->perf_map_pids;
	if (!o->native)
		return 0;
	bool *eligible = calloc(sym->nmodules ? sym->nmodules : 1, sizeof(*eligible));
	if (!eligible)
		return -ENOMEM;
	for (size_t i = 0; i < sym->nmodules; i++) {
		const struct sp_module *m = sp_spool_module(sym->spool, (uint32_t)i);
		eligible[i] = m && has_file(m);
	}
	int err = sp_native_groups_new(sym->spool, o->native, eligible, &sym->native);
	free(eligible);
	o->native = NULL; /* the groups keep their own copy */
	return err;
}

static const char *arena_copy(struct sp_symbolizer *sym, const char *s)
{
	return s ? sp_arena_strndup(&sym->strings, s, strlen(s)) : NULL;
}

/*
 * Name a frame of a file-backed module through the plug-in (the seeds'
 * NativeSymbolizer::symbolize_one): its functions, innermost first, become
 * the frame and its inline chain as the ELF/DWARF backend would make them,
 * with SP_ORIGIN_ELF.  rf is untouched when the plug-in knows nothing.
 */
static int resolve_native_plugin(struct sp_symbolizer *sym, uint32_t frame_id,
				 const struct sp_frame *fr, struct sp_resolved_frame *rf)
{
	const struct sp_native_symbol *ns;
	size_t n;
	int err = sp_native_groups_symbolize(sym->native, fr->module_id, fr->abs_ip, &ns, &n);
	if (err == SP_NATIVE_FAILED)
		sym->stats.native_backend_errors++;
	if (err || !n)
		return err == SP_NATIVE_FAILED ? 0 : err;
	const struct sp_native_symbol *outer = &ns[n - 1];
	if (!(rf->name = arena_copy(sym, outer->name)) ||
	    (outer->file && !(rf->file = arena_copy(sym, outer->file))))
		return -ENOMEM;
	rf->line = outer->line;
	rf->symbol_offset = outer->symbol_offset;
	rf->origin = SP_ORIGIN_ELF;
	if (rf->file && rf->line)
		sym->stats.frames_with_lines++;
	if (n == 1 || sym->opts.no_inline)
		return 0;
	struct sp_resolved_frame *c = chain_alloc(sym, n);
	if (!c)
		return -ENOMEM;
	for (size_t i = 0; i + 1 < n; i++) {
		c[i] = *rf;
		c[i].name = arena_copy(sym, ns[i].name);
		c[i].file = arena_copy(sym, ns[i].file);
		if (!c[i].name || (ns[i].file && !c[i].file))
			return -ENOMEM;
		c[i].line = ns[i].line;
		c[i].flags |= SP_RFRAME_INLINE;
		c[i].symbol_offset = 0;
	}
	c[n - 1] = *rf;
	sym->chain[frame_id] = c;
	sym->chain_len[frame_id] = (uint32_t)n;
	sym->stats.inline_frames += n - 1;
	return 0;
}

/*
 * The seeds: native frames inside the Python runtime get PYTHON_RUNTIME and
 * HIDDEN_DEFAULT, so views can hide interpreter machinery.  Here: a frame of
 * a file-backed module that sp_is_python_module names (python3.12,
 * libpython3.12.so.1.0), in a process the recording marked a Python runtime,
 * whose perf map the policy allows and that map was read (now, if not yet):
 * its py:: frames then stand in the stacks for the interpreter's.  Without
 * them (no -X perf, no map) hiding the interpreter would leave nothing in
 * its place, so nothing is flagged.
 */
static int flag_python_runtime(struct sp_symbolizer *sym, uint32_t frame_id,
			       const struct sp_frame *fr)
{
	const struct sp_module *m =
		fr->module_id < sym->nmodules ? sp_spool_module(sym->spool, fr->module_id) : NULL;
	if (!m || !has_file(m) || !sp_is_python_module(m->path) ||
	    !is_python_process(sym->spool, m->pid, true) || !perf_map_allowed(sym, m->pid))
		return 0;
	const struct proc_map *pm;
	int err = process_map(sym, m->pid, &pm);
	if (err || !pm)
		return err;
	const uint32_t flags = SP_RFRAME_PYTHON_RUNTIME | SP_RFRAME_HIDDEN_DEFAULT;
	sym->frames[frame_id].flags |= flags;
	for (uint32_t i = 0; sym->chain[frame_id] && i < sym->chain_len[frame_id]; i++)
		sym->chain[frame_id][i].flags |= flags;
	sym->stats.python_runtime_frames++;
	return 0;
}

struct sp_stack_cache **sp_symbolizer_stack_cache(struct sp_symbolizer *sym)
{
	return &sym->stacks;
}

const struct sp_spool *sp_symbolizer_spool(const struct sp_symbolizer *sym)
{
	return sym->spool;
}

/* ---- what `symbolize` and the recorder ask of a symbolizer ------------- */

unsigned sp_symbolizer_frame_src(const struct sp_symbolizer *sym, uint32_t frame_id)
{
	return frame_id < sym->nframes ? sym->frame_src[frame_id] : SP_FRAME_SRC_NONE;
}

int sp_symbolizer_frame_source(const struct sp_symbolizer *sym, uint32_t frame_id,
			       struct sp_frame_source *out)
{
	*out = (struct sp_frame_source){0};
	if (frame_id >= sym->nframes || !sym->resolved[frame_id] ||
	    sym->frame_src[frame_id] == SP_FRAME_SRC_STORED)
		return 0;
	const struct sp_frame *fr = sp_spool_frame(sym->spool, frame_id);
	const struct sp_resolved_frame *rf = &sym->frames[frame_id];
	if (rf->origin == SP_ORIGIN_KERNEL_SYMBOLS && sym->ksyms) {
		const struct sp_ksym *ks = sp_kallsyms_find(sym->ksyms, fr->abs_ip);
		if (!ks)
			return 0;
		*out = (struct sp_frame_source){
			.origin = SP_ORIGIN_KERNEL_SYMBOLS,
			.start = ks->addr,
			.size = ks->end == UINT64_MAX ? 0 : ks->end - ks->addr,
			.name = ks->name,
			.module = ks->module,
		};
		return 1;
	}
	if (rf->origin != SP_ORIGIN_PERF_MAP)
		return 0;
	const struct sp_module *m = fr->module_id == SP_NO_MODULE
					    ? NULL : sp_spool_module(sym->spool, fr->module_id);
	int32_t pid = m ? m->pid : sym->frame_pid ? sym->frame_pid[frame_id] : PID_NONE;
	uint32_t idx;
	if (!sp_map_get(&sym->map_index, (uint64_t)(uint32_t)pid, &idx) ||
	    sym->maps[idx].state != SOURCE_LOADED)
		return 0;
	const struct sp_perf_map *pm = &sym->maps[idx].map;
	const struct sp_perf_map_range *r = sp_perf_map_find(pm, fr->abs_ip);
	if (!r)
		return 0;
	*out = (struct sp_frame_source){
		.origin = SP_ORIGIN_PERF_MAP,
		.pid = pid,
		.start = r->sym_start,
		.size = r->sym_size,
		.name = sp_perf_map_name(pm, r),
	};
	return 1;
}

int sp_symbolizer_use_file(struct sp_symbolizer *sym, uint32_t module_id, int fd)
{
	if (module_id >= sym->nmodules || sym->module_file[module_id] == NO_FILE)
		return -SP_E_BAD_ARG;
	struct file_entry *f = &sym->files[sym->module_file[module_id]];
	if (f->state != FILE_UNOPENED)
		return -SP_E_BAD_ARG;
	int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (own < 0)
		return -errno;
	if (f->given_fd)
		close(f->given_fd - 1);
	f->given_fd = own + 1;
	return 0;
}

static int push_place(struct sp_lookup_places *p, char *place)
{
	if (!place)
		return -ENOMEM;
	char **v = realloc(p->places, (p->nplaces + 1) * sizeof(*v));
	if (!v) {
		free(place);
		return -ENOMEM;
	}
	p->places = v;
	p->places[p->nplaces++] = place;
	return 0;
}

int sp_symbolizer_lookup_places(struct sp_symbolizer *sym, uint32_t module_id,
				struct sp_lookup_places *out)
{
	*out = (struct sp_lookup_places){.file = NO_FILE};
	if (module_id >= sym->nmodules || sym->module_file[module_id] == NO_FILE)
		return 0;
	out->file = sym->module_file[module_id];
	struct file_entry *f = &sym->files[out->file];
	switch (f->state) {
	case FILE_PROVEN:
		out->why = "no symbol covers these addresses (stripped, no debug file found)";
		break;
	case FILE_UNPROVEN:
		out->why = "the file there is not the recorded one (build-id, or inode, size "
			   "and mtime, differ)";
		break;
	case FILE_UNREADABLE:
		out->why = "missing, unreadable or not ELF";
		break;
	default:
		out->why = "not looked up";
		break;
	}
	int err = push_place(out, strdup(f->open_path));
	if (!err && f->map_files)
		err = push_place(out, strdup(f->map_files));
	/* The debug file candidates: by the build-id recorded, and by the debug link when read. */
	struct sp_debug_query q = {
		.path = f->open_path,
		.build_id = f->rep->build_id,
		.build_id_len = f->rep->build_id_len,
		.debuglink = f->debuglink,
		.debuglink_crc = f->debuglink_crc,
		.dirs = sym->debug_dirs,
	};
	char **paths = NULL;
	size_t n = 0;
	if (!err)
		err = sp_debug_file_candidates(&q, &paths, &n);
	for (size_t i = 0; i < n; i++) {
		if (!err)
			err = push_place(out, paths[i]);
		else
			free(paths[i]);
	}
	free(paths);
	if (!err && sym->debuginfod && q.build_id_len)
		err = push_place(out, strdup("debuginfod servers of DEBUGINFOD_URLS"));
	if (err)
		sp_lookup_places_release(out);
	return err;
}

void sp_lookup_places_release(struct sp_lookup_places *p)
{
	for (size_t i = 0; i < p->nplaces; i++)
		free(p->places[i]);
	free(p->places);
	*p = (struct sp_lookup_places){.file = NO_FILE};
}
