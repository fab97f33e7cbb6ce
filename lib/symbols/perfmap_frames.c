/* SPDX-License-Identifier: MIT */
/*
 * Names of anonymous (JIT, Python) code from perf maps and jitdumps, one per
 * process, under the map policy, and the Python runtime frames they stand
 * in for: a source with a context of its own (struct perf_map_names).
 */
#include "symbols/symbolizer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
 * A guard against reused pids: the latest marker of the process decides; or,
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
static bool perf_map_allowed(const struct perf_map_names *maps, int32_t pid)
{
	switch (maps->opts->perf_map_policy) {
	case SP_PERF_MAPS_NONE:
		return false;
	case SP_PERF_MAPS_PYTHON:
		return is_python_process(maps->spool, pid, false);
	case SP_PERF_MAPS_PIDS:
		return maps->opts->perf_map_npids &&
		       bsearch(&pid, maps->pids, maps->opts->perf_map_npids,
			       sizeof(pid), sp_cmp_pid);
	default:
		return true;
	}
}

static const char *base_name(const char *p);

/* The file at path as it is now (a symlink is not followed): all zero when there is none. */
static struct file_stamp stamp_of(const char *path)
{
	struct stat st;
	if (!path || lstat(path, &st))
		return (struct file_stamp){0};
	return (struct file_stamp){
		.ino = st.st_ino,
		.size = (uint64_t)st.st_size,
		.mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec,
		.exists = true,
	};
}

static bool same_stamp(const struct file_stamp *a, const struct file_stamp *b)
{
	return a->exists == b->exists && a->ino == b->ino && a->size == b->size &&
	       a->mtime_ns == b->mtime_ns;
}

/* Where pid's perf map is looked for (sp_perf_map_load's path); false when too long. */
static bool map_path(const struct perf_map_names *maps, int32_t pid, char *buf, size_t size)
{
	return snprintf(buf, size, "%s/perf-%d.map", maps->opts->perf_map_dir, (int)pid) < (int)size;
}

/*
 * Without a perf map, the jitdump pid mapped (node --perf-prof, CPython
 * 3.13 -X perf_jit) names its code: at the path the recording saw, else
 * under its name in the perf-map directory (a kept copy).  *used: the path
 * the recording saw, when *verdict is SP_PERF_MAP_USED.  A follower keeps
 * the path read and its stamp, to see it grow.
 */
static int load_jitdump(struct perf_map_names *maps, struct proc_map *pm, int64_t owner,
			uint64_t since, unsigned *verdict, const char **used)
{
	const struct sp_spool *s = maps->spool;
	for (size_t i = 0; i < s->nmodules; i++) {
		const struct sp_module *m = sp_spool_module(s, (uint32_t)i);
		if (m->pid != pm->pid || (m->flags & SP_MODULE_ANON) || !sp_jitdump_is_path(m->path))
			continue;
		char kept[4096];
		const char *paths[2] = {m->path, kept};
		bool has_kept = snprintf(kept, sizeof(kept), "%s/%s", maps->opts->perf_map_dir,
					 base_name(m->path)) < (int)sizeof(kept) &&
				strcmp(kept, m->path);
		for (int k = 0; k < 1 + has_kept; k++) {
			struct file_stamp st = maps->following ? stamp_of(paths[k]) : (struct file_stamp){0};
			int err = sp_jitdump_load(&pm->map, paths[k], owner, since, verdict);
			if (err || *verdict != SP_PERF_MAP_MISSING) {
				*used = m->path;
				pm->jit_stamp = st;
				if (maps->following && !err &&
				    !(pm->jit_path = sp_arena_strndup(maps->strings, paths[k],
								      strlen(paths[k]))))
					err = -ENOMEM;
				return err;
			}
		}
		return 0;
	}
	return 0;
}

/*
 * The perf map lines the spool stores for pid, before any file: the
 * recorder keeps those of a process in a container, whose map lives in the
 * container's /tmp (sp_symbolize_perf_maps), and `symbolize` those of every
 * map it read.  They name the frames they were stored for and, being lines
 * of its map, say that pid's map was read (sp_sym_flag_python_runtime).
 */
/*
 * Chain the stored lines come since the last call into maps' index by pid:
 * each load then walks its own pid's lines only (a scan of every line per
 * pid was quadratic in a spool of many pids with a line each).
 */
static int index_stored_lines(struct perf_map_names *maps)
{
	const struct sp_spool *s = maps->spool;
	if (maps->nlines_indexed >= s->npmlines)
		return 0;
	if (sp_array_reserve((void **)&maps->line_next, &maps->line_next_cap, s->npmlines,
			     sizeof(*maps->line_next)))
		return -ENOMEM;
	for (size_t i = maps->nlines_indexed; i < s->npmlines; i++) {
		uint64_t key = (uint64_t)(uint32_t)s->pmlines[i].pid;
		uint32_t last;
		int err = 0;
		maps->line_next[i] = UINT32_MAX;
		if (sp_map_get(&maps->line_last, key, &last))
			maps->line_next[last] = (uint32_t)i;
		else
			err = sp_map_put(&maps->line_first, key, (uint32_t)i);
		if (!err)
			err = sp_map_put(&maps->line_last, key, (uint32_t)i);
		if (err)
			return err; /* line i is indexed again next time */
		maps->nlines_indexed = i + 1;
	}
	return 0;
}

/* Whether stored line l names a range: a name the spool has, a size that does not wrap. */
static bool stored_line_usable(const struct sp_spool *s, const struct sp_spool_pmline *l)
{
	return l->name < s->nsym_strings && l->size && l->start + l->size > l->start;
}

static int load_stored_lines(struct perf_map_names *maps, int32_t pid, struct sp_perf_map *map,
			     unsigned *verdict)
{
	const struct sp_spool *s = maps->spool;
	uint32_t first;
	int err = index_stored_lines(maps);
	if (err || !sp_map_get(&maps->line_first, (uint64_t)(uint32_t)pid, &first))
		return err;
	size_t n = 0;
	for (uint32_t i = first; i != UINT32_MAX; i = maps->line_next[i])
		n += stored_line_usable(s, &s->pmlines[i]);
	if (!n)
		return 0;
	struct sp_perf_map_entry *e = malloc(n * sizeof(*e));
	if (!e)
		return -ENOMEM;
	size_t k = 0;
	for (uint32_t i = first; i != UINT32_MAX && !err; i = maps->line_next[i]) {
		const struct sp_spool_pmline *l = &s->pmlines[i];
		if (!stored_line_usable(s, l))
			continue;
		const char *name = s->sym_strings[l->name];
		e[k] = (struct sp_perf_map_entry){.start = l->start, .end = l->start + l->size};
		err = sp_perf_map_add_name(map, name, strlen(name), &e[k].name);
		k++;
	}
	if (!err)
		err = sp_perf_map_build(map, e, k);
	free(e);
	if (!err)
		*verdict = SP_PERF_MAP_USED;
	return err;
}

/* One address a perf map will be asked about, of one process (gather_wants). */
struct want {
	int32_t pid;
	uint64_t addr;
};

static int cmp_want(const void *a, const void *b)
{
	const struct want *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/*
 * The addresses sp_sym_resolve_perf_map can be asked about (resolve_user's
 * way to it): user frames in an anonymous module, under the module's
 * process, and user frames outside every module, under any process.  A
 * superset does no harm: stored names and the frame's one process decide
 * later which are asked.
 */
static int gather_wants(struct perf_map_names *maps)
{
	const struct sp_spool *s = maps->spool;
	size_t nframes = sp_spool_frame_count(s), nmodules = sp_spool_module_count(s);
	struct want *w = NULL;
	size_t nwant = 0, nloose = 0;
	int err = -ENOMEM;
	for (int pass = 0; pass < 2; pass++) {
		if (pass) {
			/* + 1: never a malloc of 0, whose NULL would read as a failure */
			w = malloc(nwant * sizeof(*w) + 1);
			maps->want_pid = malloc(nwant * sizeof(*maps->want_pid) + 1);
			maps->want_addr = malloc(nwant * sizeof(*maps->want_addr) + 1);
			maps->loose_addr = malloc(nloose * sizeof(*maps->loose_addr) + 1);
			if (!w || !maps->want_pid || !maps->want_addr || !maps->loose_addr)
				goto out;
			nwant = nloose = 0;
		}
		for (size_t i = 0; i < nframes; i++) {
			const struct sp_frame *fr = sp_spool_frame(s, (uint32_t)i);
			if (!fr || fr->mode == SP_FRAME_KERNEL || fr->mode == SP_FRAME_TRUNCATED)
				continue;
			if (fr->module_id == SP_NO_MODULE || fr->module_id >= nmodules) {
				if (pass)
					maps->loose_addr[nloose] = fr->abs_ip;
				nloose++;
				continue;
			}
			const struct sp_module *m = sp_spool_module(s, fr->module_id);
			if (!m || !(m->flags & SP_MODULE_ANON))
				continue;
			if (pass)
				w[nwant] = (struct want){.pid = m->pid, .addr = fr->abs_ip};
			nwant++;
		}
	}
	qsort(w, nwant, sizeof(*w), cmp_want);
	for (size_t i = 0; i < nwant; i++) {
		maps->want_pid[i] = w[i].pid;
		maps->want_addr[i] = w[i].addr;
	}
	qsort(maps->loose_addr, nloose, sizeof(*maps->loose_addr), cmp_u64);
	maps->nwant = nwant;
	maps->nloose = nloose;
	maps->wants_gathered = true;
	err = 0;
out:
	free(w);
	return err;
}

/* What keep_line of one process's map tests: its own addresses and the loose ones. */
struct wanted {
	const uint64_t *own, *loose;
	size_t nown, nloose;
};

/* Is one of v[0, n) (sorted) in [start, end)? */
static bool any_within(const uint64_t *v, size_t n, uint64_t start, uint64_t end)
{
	/* Most lines lie wholly below or above every frame (a runtime's built-in code). */
	if (!n || end <= v[0] || start > v[n - 1])
		return false;
	size_t i = sp_partition_point(n, k, v[k] < start);
	return i < n && v[i] < end;
}

static bool keep_line(void *arg, uint64_t start, uint64_t end)
{
	const struct wanted *w = arg;
	return any_within(w->own, w->nown, start, end) ||
	       any_within(w->loose, w->nloose, start, end);
}

/*
 * Limits that keep only the lines of pid's map that frames can be looked
 * up in (*lim then points into *w), or NULL (every line: a follower's spool
 * grows).  0 or -ENOMEM.
 */
static int map_filter(struct perf_map_names *maps, int32_t pid, struct wanted *w,
		      struct sp_perf_map_limits *storage, const struct sp_perf_map_limits **lim)
{
	*lim = NULL;
	if (maps->following)
		return 0;
	if (!maps->wants_gathered) {
		int err = gather_wants(maps);
		if (err)
			return err;
	}
	size_t lo = sp_partition_point(maps->nwant, i, maps->want_pid[i] < pid);
	size_t hi = sp_partition_point(maps->nwant, i, maps->want_pid[i] <= pid);
	*w = (struct wanted){
		.own = maps->want_addr + lo, .nown = hi - lo,
		.loose = maps->loose_addr, .nloose = maps->nloose,
	};
	*storage = (struct sp_perf_map_limits){.keep = keep_line, .keep_arg = w};
	*lim = storage;
	return 0;
}

/* pid's entry in maps->procs, made (SOURCE_UNLOADED) when it has none. */
static int map_entry(struct perf_map_names *maps, int32_t pid, struct proc_map **out)
{
	uint32_t idx;
	if (sp_map_get(&maps->index, (uint64_t)(uint32_t)pid, &idx)) {
		*out = &maps->procs[idx];
		return 0;
	}
	if (sp_array_reserve((void **)&maps->procs, &maps->procs_cap, maps->nprocs + 1,
			     sizeof(*maps->procs)))
		return -ENOMEM;
	struct proc_map *pm = &maps->procs[maps->nprocs];
	*pm = (struct proc_map){.pid = pid, .state = SOURCE_UNLOADED};
	sp_perf_map_init(&pm->map);
	int err = sp_map_put(&maps->index, (uint64_t)(uint32_t)pid, (uint32_t)maps->nprocs);
	if (err)
		return err;
	maps->nprocs++;
	*out = pm;
	return 0;
}

int sp_symbolizer_use_perf_map_fd(struct sp_symbolizer *sym, int32_t pid, int fd)
{
	struct perf_map_names *maps = &sym->perf_maps;
	struct proc_map *pm;
	int err = map_entry(maps, pid, &pm);
	if (err)
		return err;
	if (pm->state != SOURCE_UNLOADED)
		return -SP_E_BAD_ARG;
	pm->state = SOURCE_UNUSABLE;
	struct wanted w;
	struct sp_perf_map_limits storage;
	const struct sp_perf_map_limits *lim;
	err = map_filter(maps, pid, &w, &storage, &lim);
	if (!err)
		err = sp_perf_map_read_fd(&pm->map, fd, lim);
	if (!err)
		pm->module = sp_arena_printf(maps->strings, "perf-%d.map", (int)pid);
	if (!err && !pm->module)
		err = -ENOMEM;
	if (err) {
		sp_perf_map_release(&pm->map);
		sp_perf_map_init(&pm->map);
		return err;
	}
	maps->stats->perf_maps_read++;
	pm->state = SOURCE_LOADED;
	pm->source = MAP_GIVEN;
	return 0;
}

/* Count pm's verdict in the stats (sign 1), or take it back (sign -1). */
static void count_verdict(struct perf_map_names *maps, const struct proc_map *pm, int64_t sign)
{
	struct sp_symbolizer_stats *st = maps->stats;
	uint64_t d = (uint64_t)sign;
	switch (pm->verdict) {
	case SP_PERF_MAP_USED:
		st->perf_maps_read += d;
		st->perf_maps_limited += pm->map.stats.limited * d;
		st->perf_map_lines_malformed += (pm->map.stats.malformed + pm->map.stats.overflow) * d;
		st->jitdumps_read += (pm->source == MAP_JITDUMP) * d;
		break;
	case SP_PERF_MAP_INSECURE:
		st->perf_maps_insecure += d;
		break;
	case SP_PERF_MAP_STALE:
		st->perf_maps_stale += d;
		break;
	case SP_PERF_MAP_FOREIGN:
		st->perf_maps_foreign += d;
		break;
	default:
		st->perf_maps_missing += d;
		break;
	}
}

/* The perf map of pid, read on first use; NULL when none may or can be used. */
static int process_map(struct perf_map_names *maps, int32_t pid, const struct proc_map **out)
{
	*out = NULL;
	struct proc_map *pm;
	int err = map_entry(maps, pid, &pm);
	if (err || pm->state != SOURCE_UNLOADED) {
		if (!err && pm->state == SOURCE_LOADED)
			*out = pm;
		return err;
	}
	pm->state = SOURCE_UNUSABLE;
	pm->source = MAP_NONE;
	if (!(pm->allowed = perf_map_allowed(maps, pid)))
		return 0;
	unsigned verdict;
	uint32_t uid;
	int64_t owner = sp_spool_process_uid(maps->spool, pid, &uid) ? SP_PERF_MAP_OWNER_UNKNOWN
								      : (int64_t)uid;
	uint64_t since = process_start_us(maps->spool, pid);
	char path[4096];
	/* A follower looks again when the file changes: what it was before the read. */
	pm->stamp = maps->following && map_path(maps, pid, path, sizeof(path)) ? stamp_of(path)
									  : (struct file_stamp){0};
	struct wanted w;
	struct sp_perf_map_limits storage;
	const struct sp_perf_map_limits *lim;
	err = map_filter(maps, pid, &w, &storage, &lim);
	if (err)
		return err;
	/*
	 * Lines the spool stores for pid were read for this recording: they come
	 * before a file at the path now, which on another machine, or after the
	 * pid was reused, is another process's.
	 */
	verdict = SP_PERF_MAP_MISSING;
	pm->source = MAP_STORED;
	err = load_stored_lines(maps, pid, &pm->map, &verdict);
	if (!err && verdict == SP_PERF_MAP_MISSING) {
		pm->source = MAP_FILE;
		err = sp_perf_map_load(&pm->map, maps->opts->perf_map_dir, pid, owner, since, lim,
				       &verdict);
	}
	const char *jitdump = NULL;
	if (!err && verdict == SP_PERF_MAP_MISSING) {
		pm->source = MAP_JITDUMP;
		err = load_jitdump(maps, pm, owner, since, &verdict, &jitdump);
	}
	if (err == -ENOMEM)
		return err;
	if (err)
		verdict = SP_PERF_MAP_MISSING; /* a read error: as good as no file */
	pm->verdict = (uint8_t)verdict;
	if (verdict != SP_PERF_MAP_USED)
		pm->source = MAP_NONE;
	count_verdict(maps, pm, 1);
	if (verdict != SP_PERF_MAP_USED)
		return 0;
	pm->module = jitdump ? sp_arena_strndup(maps->strings, base_name(jitdump), strlen(base_name(jitdump)))
			     : sp_arena_printf(maps->strings, "perf-%d.map", (int)pid);
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

/* A follower notes that frame_id's name depends on pid's perf map.  0 or -ENOMEM. */
static int note_map_dep(struct perf_map_names *maps, int32_t pid, uint32_t frame_id)
{
	return maps->following ? sp_pid_ids_add(&maps->follow->map_deps, pid, frame_id) : 0;
}

/* Count a frame the policy or a missing map left unnamed (once per resolution of frame_id). */
static void count_frame(struct perf_map_names *maps, uint32_t frame_id, uint64_t *stat, uint8_t bit)
{
	(*stat)++;
	if (maps->follow->counted)
		maps->follow->counted[frame_id] |= bit;
}

/*
 * Name a frame of anonymous code of pid from its perf map; rf untouched when
 * it cannot.  in_anon: the frame is in an anonymous mapping, where a runtime
 * would have written a map; only those count as missing one.  A frame outside
 * every mapping is more often a stale register (the first sample after an
 * exec carries the old image's pc) than JIT code.  Names are copied: a
 * follower reads a map that grew again, freeing the one before.
 */
int sp_sym_resolve_perf_map(struct perf_map_names *maps, int32_t pid, uint32_t frame_id,
			    const struct sp_frame *fr, bool in_anon, struct sp_resolved_frame *rf)
{
	if (maps->opts->perf_map_policy == SP_PERF_MAPS_NONE) {
		count_frame(maps, frame_id, &maps->stats->perf_map_frames_denied, COUNTED_MAP_DENIED);
		return 0;
	}
	const struct proc_map *pm;
	int err = note_map_dep(maps, pid, frame_id);
	if (!err)
		err = process_map(maps, pid, &pm);
	if (err || !pm) {
		if (!err && !perf_map_allowed(maps, pid))
			count_frame(maps, frame_id, &maps->stats->perf_map_frames_denied,
				    COUNTED_MAP_DENIED);
		else if (!err && in_anon)
			count_frame(maps, frame_id, &maps->stats->perf_map_frames_unmapped,
				    COUNTED_MAP_UNMAPPED);
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
		rf->name = sp_arena_strndup(maps->strings, func,
					    colon ? (size_t)(colon - func) : strlen(func));
		rf->file = file ? sp_arena_strndup(maps->strings, file, strlen(file)) : NULL;
		if (file && !rf->file)
			return -ENOMEM;
		rf->module = rf->file ? base_name(rf->file) : "[python]";
		rf->kind = SP_KIND_PYTHON;
	} else {
		char *dem = maps->opts->no_demangle ? NULL : sp_demangle(name);
		rf->name = dem ? sp_arena_strndup(maps->strings, dem, strlen(dem))
			       : sp_arena_strndup(maps->strings, name, strlen(name));
		free(dem);
		rf->module = pm->module;
		rf->flags |= SP_RFRAME_JIT;
	}
	if (!rf->name)
		return -ENOMEM;
	rf->origin = SP_ORIGIN_PERF_MAP;
	rf->symbol_offset = fr->abs_ip - r->sym_start;
	maps->stats->perf_map_frames_named++;
	return 0;
}

bool sp_sym_perf_map_changed(struct perf_map_names *maps, int32_t pid)
{
	uint32_t idx;
	if (!sp_map_get(&maps->index, (uint64_t)(uint32_t)pid, &idx))
		return false;
	const struct proc_map *pm = &maps->procs[idx];
	/* The policy's verdict changes with exec markers, which the caller watches. */
	if (pm->state == SOURCE_UNLOADED || !pm->allowed || pm->source == MAP_GIVEN)
		return false;
	char path[4096];
	struct file_stamp now = map_path(maps, pid, path, sizeof(path)) ? stamp_of(path)
								       : (struct file_stamp){0};
	if (!same_stamp(&now, &pm->stamp))
		return true;
	if (pm->source != MAP_JITDUMP)
		return false;
	now = stamp_of(pm->jit_path);
	return !same_stamp(&now, &pm->jit_stamp);
}

int sp_sym_perf_map_forget(struct perf_map_names *maps, int32_t pid, uint32_t **frames, size_t *n)
{
	*frames = NULL;
	*n = 0;
	struct pid_ids *deps = sp_pid_ids_get(&maps->follow->map_deps, pid);
	if (deps) {
		*frames = deps->ids;
		*n = deps->n;
		deps->ids = NULL;
		deps->n = deps->cap = 0;
	}
	uint32_t idx;
	if (!sp_map_get(&maps->index, (uint64_t)(uint32_t)pid, &idx))
		return 0;
	struct proc_map *pm = &maps->procs[idx];
	/* The caller's own file is all there is to read. */
	if (pm->state == SOURCE_UNLOADED || pm->source == MAP_GIVEN)
		return 0;
	if (pm->allowed)
		count_verdict(maps, pm, -1);
	sp_perf_map_release(&pm->map);
	*pm = (struct proc_map){.pid = pid, .state = SOURCE_UNLOADED};
	sp_perf_map_init(&pm->map);
	return 0;
}

/*
 * Native frames inside the Python runtime get PYTHON_RUNTIME and
 * HIDDEN_DEFAULT, so views can hide interpreter machinery: a frame of
 * a file-backed module that sp_is_python_module names (python3.12,
 * libpython3.12.so.1.0), in a process the recording marked a Python runtime,
 * whose perf map the policy allows and that map was read (now, if not yet):
 * its py:: frames then stand in the stacks for the interpreter's.  Without
 * them (no -X perf, no map) hiding the interpreter would leave nothing in
 * its place, so nothing is flagged.
 */
int sp_sym_flag_python_runtime(struct sp_symbolizer *sym, uint32_t frame_id,
			       const struct sp_frame *fr)
{
	struct perf_map_names *maps = &sym->perf_maps;
	const struct sp_module *m =
		fr->module_id < sym->nmodules ? sp_spool_module(maps->spool, fr->module_id) : NULL;
	if (!m || !sp_sym_has_file(m) || !sp_is_python_module(m->path))
		return 0;
	/* Its markers and its map decide: a follower sees both change. */
	int err = note_map_dep(maps, m->pid, frame_id);
	if (err || !is_python_process(maps->spool, m->pid, true) || !perf_map_allowed(maps, m->pid))
		return err;
	const struct proc_map *pm;
	err = process_map(maps, m->pid, &pm);
	if (err || !pm)
		return err;
	const uint32_t flags = SP_RFRAME_PYTHON_RUNTIME | SP_RFRAME_HIDDEN_DEFAULT;
	sp_sym_frame(sym, frame_id)->flags |= flags;
	const struct inline_chains *ch = &sym->chains;
	for (uint32_t i = 0; ch->by_frame[frame_id] && i < ch->len[frame_id]; i++)
		ch->by_frame[frame_id][i].flags |= flags;
	maps->stats->python_runtime_frames++;
	return 0;
}

/* Copy what sp_symbolizer_new's caller lent: the pid list, sorted. */
int sp_sym_setup_perf_map_pids(struct perf_map_names *maps, struct sp_symbolizer_opts *o)
{
	if (o->perf_map_policy != SP_PERF_MAPS_PIDS || !o->perf_map_pids)
		o->perf_map_npids = 0;
	if (o->perf_map_npids) {
		maps->pids = malloc(o->perf_map_npids * sizeof(*maps->pids));
		if (!maps->pids)
			return -ENOMEM;
		memcpy(maps->pids, o->perf_map_pids,
		       o->perf_map_npids * sizeof(*maps->pids));
		qsort(maps->pids, o->perf_map_npids, sizeof(*maps->pids), sp_cmp_pid);
	}
	o->perf_map_pids = maps->pids;
	return 0;
}

/* The perf map line a resolved frame was named from, in its process's map. */
int sp_sym_perf_map_frame_source(const struct perf_map_names *maps, int32_t pid,
				 const struct sp_frame *fr, struct sp_frame_source *out)
{
	uint32_t idx;
	if (!sp_map_get(&maps->index, (uint64_t)(uint32_t)pid, &idx) ||
	    maps->procs[idx].state != SOURCE_LOADED)
		return 0;
	const struct sp_perf_map *pm = &maps->procs[idx].map;
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

void sp_sym_perf_maps_init(struct perf_map_names *maps, const struct sp_spool *s,
			   const struct sp_symbolizer_opts *opts, struct sp_arena *strings,
			   struct sp_symbolizer_stats *stats, struct sym_follow *follow)
{
	*maps = (struct perf_map_names){
		.spool = s,
		.opts = opts,
		.strings = strings,
		.stats = stats,
		.follow = follow,
	};
	sp_map_init(&maps->index);
	sp_map_init(&maps->line_first);
	sp_map_init(&maps->line_last);
}

void sp_sym_perf_maps_release(struct perf_map_names *maps)
{
	for (size_t i = 0; i < maps->nprocs; i++)
		sp_perf_map_release(&maps->procs[i].map);
	free(maps->procs);
	sp_map_release(&maps->index);
	sp_map_release(&maps->line_first);
	sp_map_release(&maps->line_last);
	free(maps->line_next);
	free(maps->pids);
	free(maps->want_pid);
	free(maps->want_addr);
	free(maps->loose_addr);
}

int sp_cmp_pid(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	return x < y ? -1 : x > y;
}
