/* SPDX-License-Identifier: MIT */
/* Separate debug files for the symbolizer: libdwfl's callback, the search counted, where it looked. */
#include "symbols/symbolizer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Count a refused debug file; the first one's path is kept for the warning. */
static void note_mismatch(struct elf_names *names, uint32_t n, const char *path)
{
	names->stats->debug_files_mismatched += n;
	if (n && path && !names->stats->debug_file_mismatched)
		names->stats->debug_file_mismatched = sp_arena_strndup(names->strings, path,
								    strlen(path));
}

void sp_sym_note_not_inflated(struct elf_names *names, const struct sp_inflate_stats *ist,
			      const char *path)
{
	uint32_t n = ist->over_limit;
	names->stats->sections_not_inflated += n;
	names->stats->sections_over_run_budget += ist->over_run;
	names->stats->sections_over_untrusted_budget += ist->over_untrusted;
	if (ist->over_untrusted && path && !names->stats->section_untrusted_file) {
		names->stats->section_untrusted_file = sp_arena_strndup(names->strings, path,
									strlen(path));
		names->stats->section_untrusted_why =
			sp_arena_strndup(names->strings, ist->untrusted_why,
					 strlen(ist->untrusted_why));
	}
	if (n && path && !names->stats->section_not_inflated_file)
		names->stats->section_not_inflated_file = sp_arena_strndup(names->strings, path,
									 strlen(path));
}

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

/*
 * A DWARF alternate file (dwz's .gnu_debugaltlink), found by libdwfl's own
 * search, goes to dwarf_begin_elf too: bounded like a debug file, as a copy
 * in memory when it has sections past the bounds (its build-id is not at
 * hand here, so no cache copy).  Returns the fd to use, or -1 (ENOENT).
 */
static int bound_alternate(struct elf_names *names, int fd, const char *name)
{
	struct sp_debug_copy copy;
	int cfd = sp_debug_cache_open(NULL, 0, NULL, 0, fd, &copy);
	if (names)
		sp_sym_note_not_inflated(names, &copy.inflate, name);
	if (copy.refused || cfd >= 0)
		close(fd);
	if (copy.refused) {
		errno = ENOENT;
		return -1;
	}
	return cfd >= 0 ? cfd : fd;
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
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
			  Dwarf_Addr base, const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	struct file_entry *f = *userdata;
	/* The main request names the file's own debug link, or none when it has none. */
	bool own = f && (!debuglink_file ||
			 (f->debuglink && !strcmp(debuglink_file, f->debuglink)));
	if (!own) {
		int fd = dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name,
						      debuglink_file, debuglink_crc,
						      debuginfo_file_name);
		return fd < 0 ? fd : bound_alternate(f ? f->owner : NULL, fd, *debuginfo_file_name);
	}
	struct elf_names *names = f->owner;
	struct sp_debug_query q = debug_query(f);
	int fd = -1;
	if (f->debug_state == DEBUG_FOUND) {
		/* Asked again (libdwfl gave up on the first fd): the same file, checked again. */
		fd = sp_debug_file_open(&q, f->debug_path);
	} else if (f->debug_state == DEBUG_UNSEARCHED) {
		f->debug_state = DEBUG_NONE;
		struct sp_debug_found found;
		if (sp_debug_file_find(&q, &found))
			goto none; /* -ENOMEM: no debug file rather than a failed report */
		note_mismatch(names, found.mismatched, found.first_mismatch);
		if (found.fd < 0 && names->debuginfod && q.build_id_len) {
			char *name = NULL;
			found.fd = dwfl_standard_find_debuginfo(mod, userdata, modname, base,
								file_name, debuglink_file,
								debuglink_crc, &name);
			found.path = name;
			if (found.fd >= 0 && !sp_debug_file_matches(&q, found.fd)) {
				note_mismatch(names, 1, name);
				close(found.fd);
				found.fd = -1;
			} else if (found.fd >= 0) {
				names->stats->debug_files_debuginfod++;
				f->debug_debuginfod = true;
			}
		}
		if (found.fd >= 0 && found.path &&
		    (f->debug_path = sp_arena_strndup(names->strings, found.path,
						      strlen(found.path)))) {
			f->debug_state = DEBUG_FOUND;
			names->stats->debug_files_used++;
			fd = found.fd;
			found.fd = -1;
		}
		sp_debug_found_release(&found);
	}
	struct stat st;
	if (fd >= 0 && !f->debug_debuginfod && !fstat(fd, &st))
		f->debug_witness = sp_symcache_witness(&st);
	if (fd >= 0) {
		/*
		 * Asked again, libdwfl still holds the name it got the first time
		 * (its open_elf failed on that file and keeps the name): replace it.
		 */
		free(*debuginfo_file_name);
		*debuginfo_file_name = NULL;
		/*
		 * libdwfl hands the file to dwarf_begin_elf as soon as this
		 * returns: sections past the inflation bounds reach it only as a
		 * copy without them.
		 */
		struct sp_debug_copy copy;
		int cfd = sp_debug_cache_open(names->cache_dir, names->cache_max, q.build_id,
					      q.build_id_len, fd, &copy);
		names->stats->cache_files_evicted += copy.evicted;
		names->stats->cache_files_too_large += copy.too_large;
		if (!f->debug_bounded) {
			f->debug_bounded = true;
			sp_sym_note_not_inflated(names, &copy.inflate, f->debug_path);
		}
		if (copy.refused) {
			close(fd);
			goto none;
		}
		if (cfd >= 0) {
			close(fd);
			fd = cfd;
			if (copy.path && !f->debug_cached)
				names->stats->debug_files_cached++;
			f->debug_cached |= copy.path != NULL;
			names->stats->debug_files_cache_written += copy.made;
		}
		*debuginfo_file_name = copy.path ? copy.path : strdup(f->debug_path);
		return fd;
	}
none:
	errno = ENOENT;
	return -1;
}

int sp_sym_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
			  Dwarf_Addr base, const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	/* What the search reads for CRCs, and what the file found inflates, is its symbolizer's. */
	struct file_entry *f = *userdata;
	struct sp_budget_account *prev = f ? sp_budget_charge_to(&f->owner->budget) : NULL;
	int fd = find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file,
				debuglink_crc, debuginfo_file_name);
	if (f)
		sp_budget_charge_to(prev);
	return fd;
}

/*
 * The separate debug file a cache file's names came from, looked for again
 * (found on this machine, not from debuginfod): the cache stands in for its
 * DWARF only while a report without the cache would read it too.  Found, it
 * is counted and remembered as find_debuginfo would (libdwfl's later request
 * reopens it); not found, nothing is counted, so find_debuginfo's own search
 * still counts what it refuses.
 */
bool sp_sym_debug_file_found_again(struct elf_names *names, struct file_entry *f)
{
	if (f->debug_state != DEBUG_UNSEARCHED)
		return f->debug_state == DEBUG_FOUND && !f->debug_debuginfod;
	struct sp_debug_query q = debug_query(f);
	struct sp_debug_found found;
	if (sp_debug_file_find(&q, &found))
		return false;
	bool ok = found.fd >= 0 && found.path &&
		  (f->debug_path = sp_arena_strndup(names->strings, found.path, strlen(found.path)));
	struct stat st;
	if (ok && !fstat(found.fd, &st))
		f->debug_witness = sp_symcache_witness(&st);
	if (ok) {
		note_mismatch(names, found.mismatched, found.first_mismatch);
		f->debug_state = DEBUG_FOUND;
		names->stats->debug_files_used++;
	}
	sp_debug_found_release(&found);
	return ok;
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
	struct elf_names *names = &sym->elf;
	*out = (struct sp_lookup_places){.file = NO_FILE};
	if (module_id >= sym->nmodules || sym->module_file[module_id] == NO_FILE)
		return 0;
	out->file = sym->module_file[module_id];
	struct file_entry *f = &names->files[out->file];
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
		.build_id = sp_sym_file_rep(names, f)->build_id,
		.build_id_len = sp_sym_file_rep(names, f)->build_id_len,
		.debuglink = f->debuglink,
		.debuglink_crc = f->debuglink_crc,
		.dirs = names->debug_dirs,
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
	if (!err && names->debuginfod && q.build_id_len)
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
