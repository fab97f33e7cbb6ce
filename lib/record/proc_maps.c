/* SPDX-License-Identifier: MIT */
/* The recorder's process table: modules from mmap records and /proc/PID/maps, owners, code reads. */
#include "record/record.h"
#include "spool/spool.h"
#include "symbols/symbols.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* ---- processes --------------------------------------------------------- */

void sp_process_table_init(struct sp_process_table *t)
{
	memset(t, 0, sizeof(*t));
	sp_map_init(&t->index);
}

void sp_process_table_release(struct sp_process_table *t)
{
	for (size_t i = 0; i < t->n; i++) {
		sp_process_release(t->all[i]);
		free(t->all[i]);
	}
	free(t->all);
	sp_map_release(&t->index);
	sp_process_table_init(t); /* empty, the hint with it */
}

struct sp_process *sp_process_table_find(struct sp_process_table *t, pid_t pid)
{
	uint32_t idx;
	/* a recording's samples come from one process after another, mostly the same */
	if (t->hint < t->n && t->all[t->hint]->pid == pid)
		return t->all[t->hint];
	if (!sp_map_get(&t->index, (uint64_t)(uint32_t)pid, &idx))
		return NULL;
	t->hint = idx;
	return t->all[idx];
}

struct sp_process *sp_process_table_add(struct sp_process_table *t, pid_t pid)
{
	struct sp_process *p = sp_process_table_find(t, pid);
	if (p) {
		/* A pid seen again after its exit is a new process (pid reuse). */
		if (p->exited) {
			sp_process_clear_modules(p);
			p->exited = false;
			p->is_python = false;
			p->maps_known = false;
			p->name_hint_check = p->name_hint_noted = false;
			p->exec_seen_us = 0;
			p->maps_lost = false;
			p->ppid = 0;
		}
		return p;
	}
	if (sp_array_reserve((void **)&t->all, &t->cap, t->n + 1, sizeof(*t->all)))
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p || sp_map_put(&t->index, (uint64_t)(uint32_t)pid, (uint32_t)t->n)) {
		free(p);
		return NULL;
	}
	p->pid = pid;
	t->all[t->n++] = p;
	return p;
}

/*
 * Record who p runs as when that is new to the spool: at attach, at a fork
 * (the child's own, or its parent's when it is already gone: a fork copies
 * the credentials) and after every exec (a set-user-ID program changes it).
 * Reports believe a perf map only from that user or root.
 */
void sp_recorder_note_owner(struct sp_recorder *r, struct sp_process *p, const struct sp_process *from,
		       uint64_t time)
{
	uint32_t uid;
	if (sp_pid_euid(p->pid, &uid)) {
		if (!from || !from->uid_known)
			return;
		uid = from->uid;
	}
	if (p->uid_known && p->uid == uid)
		return;
	p->uid = uid;
	p->uid_known = true;
	struct sp_owner o = {.timestamp_ns = time, .pid = p->pid, .uid = uid};
	sp_recorder_note_write(r, sp_spool_writer_append_owner(r->spool, &o));
}

void sp_recorder_mark_python(struct sp_recorder *r, struct sp_process *p, bool is_python,
			uint64_t time)
{
	struct sp_exec e = {.timestamp_ns = time, .pid = p->pid, .is_python_runtime = is_python};
	p->is_python = is_python;
	sp_recorder_note_write(r, sp_spool_writer_append_exec(r->spool, &e));
}
const struct sp_cfi_row *code_row_cb(void *ctx, const struct sp_unwind_module *m,
					    uint64_t pc, bool after_call, struct sp_cfi_row *out);
static size_t read_code_cb(void *ctx, uint64_t addr, uint8_t *buf, size_t len);

/* A mapping of no file: anonymous memory or a kernel-made region other than [vdso]. */
bool sp_anon_path(const char *path)
{
	return !path[0] || !strcmp(path, "//anon") || !strncmp(path, "[anon", 5) ||
	       (path[0] == '[' && strcmp(path, "[vdso]"));
}

/* Register an executable mapping of pid: module record, then the process's map. */
int sp_recorder_add_mapping(struct sp_recorder *r, struct sp_process *p, uint64_t start, uint64_t end,
		       uint64_t pgoff, uint64_t dev, uint64_t ino, const char *path, uint64_t time)
{
	struct sp_module m = {
		.pid = p->pid,
		.start = start,
		.end = end,
		.file_offset = pgoff,
		.inode = ino,
		.dev_major = major(dev),
		.dev_minor = minor(dev),
		.path = path,
	};
	struct sp_proc_module pm = {.start = start, .end = end, .file_offset = pgoff};
	bool anon = sp_anon_path(path);
	size_t plen = strlen(path);
	if (plen > 10 && !strcmp(path + plen - 10, " (deleted)"))
		m.flags |= SP_MODULE_DELETED;
	bool jitdump = !anon && sp_jitdump_is_path(path);
	if (anon) {
		m.flags |= SP_MODULE_ANON;
	} else if (!jitdump) { /* a jitdump is no ELF file: it is read below, as what it is */
		struct sp_modfile *f = sp_modfile_get(&r->files, p->pid, start, end, dev, ino, path);
		if (f && f->info_ok) {
			pm.file = f;
			m.file_size = f->size;
			m.mtime_ns = f->mtime_ns;
			m.build_id_len = f->info.build_id_len;
			memcpy(m.build_id, f->info.build_id, f->info.build_id_len);
			if (!sp_elf_load_bias(&f->info, start, pgoff, &m.load_bias))
				m.flags |= SP_MODULE_HAS_BIAS;
		}
	}
	/* Without a build-id: its group of files of the same bytes, named by a first record. */
	struct sp_modfile *group = pm.file && !pm.file->info.build_id_len
					   ? (pm.file->cfi_owner ? pm.file->cfi_owner : pm.file) : NULL;
	if (group)
		m.same_bytes_as = group->first_module;
	int err = sp_spool_writer_add_module(r->spool, &m, &pm.module_id);
	if (err) {
		sp_recorder_note_write(r, err);
		return err;
	}
	if (group && !group->first_module)
		group->first_module = pm.module_id + 1;
	pm.um.load_bias = m.load_bias;
	pm.um.cfi = NULL; /* compiled on first unwind through it */
	pm.um.read_code = read_code_cb;
	/* Anonymous code ([vdso] is not) may be generated code without CFI. */
	if (anon)
		pm.um.code_row = code_row_cb;
	/* A runtime maps its jitdump so that profilers find it: its CFI serves the anonymous code. */
	if (jitdump && !(m.flags & SP_MODULE_DELETED) &&
	    (p->jit || (p->jit = sp_jit_code_new(p->pid))) && !sp_jit_code_has_jitdump(p->jit) &&
	    !sp_jit_code_use_jitdump(p->jit, path))
		r->summary.jitdumps++;
	sp_jit_code_invalidate(p->jit, start, end);
	if (!(m.flags & SP_MODULE_HAS_BIAS))
		pm.file = NULL;
	err = sp_process_add_module(p, &pm);
	if (!err && !p->is_python && !anon && sp_is_python_module(path))
		sp_recorder_mark_python(r, p, true, time);
	/* JIT code or a Python runtime: in a container, its perf map is kept (keep_perf_map). */
	if (!err && (anon || p->is_python) && p->perf_map_tries < SP_PERF_MAP_TRIES)
		p->perf_map_wanted = true;
	return err;
}

struct add_ctx {
	struct sp_recorder *r;
	struct sp_process *p;
};

static bool add_one(void *arg, const struct sp_proc_maps_line *m)
{
	struct add_ctx *c = arg;
	sp_recorder_add_mapping(c->r, c->p, m->start, m->end, m->pgoff, m->dev, m->ino, m->path, 0);
	return true;
}

/* Executable mappings listed in one maps file; returns how many, or -errno. */
static int read_maps_file(struct sp_recorder *r, struct sp_process *p, const char *path)
{
	return sp_proc_maps_each(path, add_one, &(struct add_ctx){r, p});
}

/*
 * /proc/PID/maps snapshot: every executable mapping becomes a module.  Once
 * the leader thread has exited (pthread_exit in main) its maps file is
 * empty, so a live thread's /proc/PID/task/TID/maps is read instead.
 * Returns how many executable mappings were found, or -errno.
 */
static int read_maps(struct sp_recorder *r, struct sp_process *p)
{
	char path[96];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)p->pid);
	p->maps_known = true;
	int found = read_maps_file(r, p, path);
	if (found != 0)
		return found;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)p->pid);
	DIR *d = opendir(path);
	struct dirent *de;
	while (d && found <= 0 && (de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.20s/maps", (int)p->pid, de->d_name);
		found = read_maps_file(r, p, path);
	}
	if (d)
		closedir(d);
	return found > 0 ? found : 0;
}

/* Stops at the first mapping a perf map may name. */
static bool not_jit(void *arg, const struct sp_proc_maps_line *m)
{
	bool *found = arg;
	*found = sp_anon_path(m->path) || sp_is_python_module(m->path);
	return !*found;
}

bool sp_pid_may_have_perf_map(pid_t pid)
{
	char path[64];
	bool found = false;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	sp_proc_maps_each(path, not_jit, &found);
	return found;
}

int sp_recorder_read_maps(struct sp_recorder *r, struct sp_process *p)
{
	int found = read_maps(r, p);
	return found < 0 ? found : 0;
}

/* Anonymous code without CFI: a row proven from its bytes (docs/DESIGN.md, decision 4). */
const struct sp_cfi_row *code_row_cb(void *ctx, const struct sp_unwind_module *m,
					    uint64_t pc, bool after_call, struct sp_cfi_row *out)
{
	struct sp_process *p = ctx;
	if (!p->jit && !(p->jit = sp_jit_code_new(p->pid)))
		return NULL;
	return sp_jit_code_row(p->jit, m->start, m->end, pc, after_call, out);
}

/*
 * Code of the sampled process, for the call before a return address
 * (lib/unwind/unwind.c): from its memory, or once it has exited (samples
 * drained after the exit) from the module's file, which holds the same bytes.
 */
static size_t read_code_cb(void *ctx, uint64_t addr, uint8_t *buf, size_t len)
{
	struct sp_process *p = ctx;
	errno = 0;
	size_t n = p->exited ? 0 : sp_target_read(p->pid, addr, buf, len);
	if (n == len)
		return n;
	struct sp_proc_module *m = sp_process_find(p, addr);
	/*
	 * EFAULT from a live process at an address in anonymous memory: its
	 * generated code was freed since (an exited one's read fails ESRCH).
	 */
	if (!n && !p->exited && errno == EFAULT && (!m || !m->file))
		return SP_READ_CODE_GONE;
	if (!m || !m->file || m->file->fd < 0 || len > m->end - addr)
		return n;
	ssize_t got = pread(m->file->fd, buf, len, (off_t)(addr - m->start + m->file_offset));
	return got > 0 ? (size_t)got : 0;
}

const struct sp_unwind_module *sp_recorder_find_module(void *ctx, uint64_t pc)
{
	struct sp_proc_module *m = sp_process_find(ctx, pc);
	if (!m)
		return NULL;
	if (m->file && !m->um.cfi)
		m->um.cfi = sp_modfile_cfi(m->file);
	return &m->um;
}

/* p's owner and modules from the start's list of /proc, entry from; how many modules. */
static size_t maps_from_snapshot(struct sp_recorder *r, struct sp_process *p, pid_t from,
				 uint64_t time)
{
	size_t n;
	uint32_t uid;
	bool uid_known;
	const struct sp_proc_maps_line *maps =
		sp_start_snapshot_find(r->snapshot, from, &n, &uid, &uid_known);
	if (!maps)
		return 0;
	if (uid_known && !(p->uid_known && p->uid == uid)) {
		p->uid = uid;
		p->uid_known = true;
		struct sp_owner o = {.timestamp_ns = time, .pid = p->pid, .uid = uid};
		sp_recorder_note_write(r, sp_spool_writer_append_owner(r->spool, &o));
	}
	for (size_t i = 0; i < n; i++)
		sp_recorder_add_mapping(r, p, maps[i].start, maps[i].end, maps[i].pgoff, maps[i].dev,
					maps[i].ino, maps[i].path, time);
	return n;
}

/*
 * System-wide: a process running before the recording (or one whose start
 * came before its parent was known) at its first sample: who runs it and
 * its modules, from /proc.  Kernel threads and the idle task have none.
 */
struct sp_process *sp_recorder_discover_process(struct sp_recorder *r, const struct sp_perf_sample *s)
{
	struct sp_process *p = sp_process_table_add(&r->procs, (pid_t)s->pid);
	if (!p)
		return NULL;
	p->maps_known = true;
	if (!s->pid || !s->regs_abi)
		return p;
	sp_recorder_note_owner(r, p, NULL, s->time);
	if (read_maps(r, p) > 0) {
		r->summary.processes_discovered++;
		return p;
	}
	/*
	 * Gone (or a zombie, whose maps are empty) before this sample was
	 * drained: the list of /proc made at the start has it; or, forked since
	 * (without an exec), it runs the image of its closest ancestor that the
	 * list has or whose modules are known by now.
	 */
	pid_t up = p->pid;
	bool found = false;
	for (int depth = 0; depth < 16 && up > 0 && !found; depth++) {
		const struct sp_process *a = up == p->pid ? p : sp_process_table_find(&r->procs, up);
		/* (a copy would drop the mappings its own mmap records gave) */
		if (a && a != p && a->maps_known && a->nmods && !p->nmods)
			found = !sp_process_copy_modules(p, a);
		else
			found = maps_from_snapshot(r, p, up, s->time) > 0;
		up = a ? a->ppid : 0;
	}
	if (found) {
		r->summary.processes_from_start_list++;
	} else if (!p->nmods) {
		p->maps_lost = true;
		r->summary.processes_unread++;
	}
	return p;
}
