/* SPDX-License-Identifier: MIT */
/* The recorder: attach, drain the rings, track processes and modules, unwind, write the spool. */
#include "record/record.h"
#include "spool/spool.h"
#include "symbols/symbols.h"

#include <dirent.h>
#include <inttypes.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#define MAX_FRAMES 1024
/* A stack of both halves and its marker must stay within what readers accept. */
_Static_assert(2 * MAX_FRAMES + 1 <= SP_SPOOL_MAX_DEPTH, "stacks deeper than the spool allows");
#define ROOT_CHAIN_MAX 16 /* root-end frames remembered per thread */

/* The root end of one thread's last complete stack, outermost frames last. */
struct root_chain {
	uint32_t n;
	uint64_t pcs[ROOT_CHAIN_MAX];
};

/*
 * A sample whose stack the kernel could not copy at all, in a process not
 * known to be in an exec: the old image's pc after execve replaced the
 * address space (the exec's record is still to come), or a forked child's
 * first steps.  Both stack ids are interned; the process's next record
 * chooses: its exec record the complete one-frame stack, anything else the
 * truncated one.  Inside one exec every sample has the same pc (the system
 * call's return): held samples of the process at another pc than its last
 * one's (a forked child's first steps before it exec'd) stay cut.
 */
struct held_sample {
	int32_t pid, tid;
	uint64_t time, pc;
	uint32_t cut, whole; /* stack ids: with the truncation marker, without */
};
#define HELD_MAX 64

struct sp_recorder {
	struct sp_events events;
	struct sp_spool_writer *spool;
	struct sp_summary summary;
	/* processes: pid -> index into procs */
	struct sp_map proc_index;
	struct sp_process **procs;
	size_t nprocs, procs_cap;
	struct sp_modfile_cache files;
	/* attached roots, watched through pidfds */
	pid_t *roots;
	int *pidfds;
	size_t nroots;
	struct sp_map opened_tids; /* tids with events opened by attach/refresh */
	/* With event ids: tid -> the tid whose event stream samples it (sampled_once) */
	struct sp_map sample_origin;
	struct sp_map root_index;  /* tid -> index into root_chains */
	/*
	 * Stacks seen before: the same key (process, its module generation,
	 * kernel and user return addresses, the end marker) gives the stack id
	 * interned the first time, without interning its frames again.
	 */
	struct sp_map stack_cache; /* key hash -> index into stack_keys */
	struct stack_key *stack_keys;
	size_t nstack_keys, stack_keys_cap;
	uint64_t *key_words; /* every key's words, back to back */
	size_t nkey_words, key_words_cap;
	uint64_t key[2 * MAX_FRAMES + 5]; /* scratch: this sample's key */
	/* Thread names (comm) by (pid, tid), so a forked task inherits its parent's. */
	struct sp_map comm_index;
	struct task_comm *comms;
	size_t ncomms, comms_cap;
	struct root_chain *root_chains;
	size_t nroot_chains, root_chains_cap;
	/* per-sample scratch, reused */
	uint64_t pcs[MAX_FRAMES];
	uint64_t kpcs[MAX_FRAMES];
	uint32_t frame_ids[2 * MAX_FRAMES + 1];
	struct sp_unwind_stats unwind_stats;
	int write_error;
	uint64_t last_flush_ns; /* CLOCK_MONOTONIC of the last timed flush */
	uint64_t last_evict_ns; /* of the last evict_gone pass */
	bool system_wide;       /* sp_recorder_attach_system: every process on the CPUs */
	char *spool_path;       /* for sp_recorder_tail */
	struct sp_tail *tail;   /* the tail following the spool, given images as it polls */
	bool finished;
	/* Samples that may have been taken inside an exec, held until it is known (on_sample). */
	struct held_sample held[HELD_MAX];
	size_t nheld;
	/* Perf maps of processes in containers, kept open: pid and fd (keep_perf_map). */
	int32_t *kept_pids;
	int *kept_fds;
	size_t nkept, kept_cap, kept_fds_cap;
};

/* A cached stack: its key's words in key_words, and the stack id they gave. */
struct stack_key {
	size_t off;
	uint32_t len;
	uint32_t stack_id;
};

/* Keys are kept up to this many words (32 MiB); past it new stacks are not cached. */
#define STACK_CACHE_MAX_WORDS (4u << 20)

/* A thread's name as the kernel gives it (TASK_COMM_LEN), and whether the spool has it. */
struct task_comm {
	char name[16];
	bool written;
};

/* ---- thread names ------------------------------------------------------ */

static uint64_t task_key(uint32_t pid, uint32_t tid)
{
	return (uint64_t)pid << 32 | tid;
}

static struct task_comm *find_comm(struct sp_recorder *r, uint32_t pid, uint32_t tid)
{
	uint32_t idx;
	return sp_map_get(&r->comm_index, task_key(pid, tid), &idx) ? &r->comms[idx] : NULL;
}

/* Remember (pid, tid)'s name; written says the spool already has it. */
static void remember_comm(struct sp_recorder *r, uint32_t pid, uint32_t tid, const char *name,
			  bool written)
{
	struct task_comm *c = find_comm(r, pid, tid);
	if (!c) {
		if (sp_array_reserve((void **)&r->comms, &r->comms_cap, r->ncomms + 1,
				     sizeof(*r->comms)) ||
		    sp_map_put(&r->comm_index, task_key(pid, tid), (uint32_t)r->ncomms))
			return; /* out of memory: the thread stays unnamed */
		c = &r->comms[r->ncomms++];
	}
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->written = written;
}

static void note_write(struct sp_recorder *r, int err);
static uint64_t monotonic_ns(void);

/*
 * perf reports a name only at exec and prctl(PR_SET_NAME): a forked child
 * or a new thread keeps its parent's, which it gets here at its first sample.
 */
static void name_new_thread(struct sp_recorder *r, uint32_t pid, uint32_t tid, uint32_t thread)
{
	struct task_comm *c = r->ncomms ? find_comm(r, pid, tid) : NULL;
	if (c && !c->written) {
		c->written = true;
		note_write(r, sp_spool_writer_set_thread_name(r->spool, thread, c->name));
	}
}

/* ---- processes --------------------------------------------------------- */

static struct sp_process *find_process(struct sp_recorder *r, pid_t pid)
{
	uint32_t idx;
	return sp_map_get(&r->proc_index, (uint64_t)(uint32_t)pid, &idx) ? r->procs[idx] : NULL;
}

static struct sp_process *add_process(struct sp_recorder *r, pid_t pid)
{
	struct sp_process *p = find_process(r, pid);
	if (p) {
		/* A pid seen again after its exit is a new process (pid reuse). */
		if (p->exited) {
			sp_process_clear_modules(p);
			p->exited = false;
			p->is_python = false;
			p->maps_known = false;
		}
		return p;
	}
	if (sp_array_reserve((void **)&r->procs, &r->procs_cap, r->nprocs + 1,
			     sizeof(*r->procs)))
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p || sp_map_put(&r->proc_index, (uint64_t)(uint32_t)pid, (uint32_t)r->nprocs)) {
		free(p);
		return NULL;
	}
	p->pid = pid;
	r->procs[r->nprocs++] = p;
	return p;
}

static void note_write(struct sp_recorder *r, int err)
{
	if (err && !r->write_error) {
		r->write_error = err;
		r->summary.error_stats[SP_ERR_SPOOL_WRITE]++;
	}
}

/*
 * Record who p runs as when that is new to the spool: at attach, at a fork
 * (the child's own, or its parent's when it is already gone: a fork copies
 * the credentials) and after every exec (a set-user-ID program changes it).
 * Reports believe a perf map only from that user or root.
 */
static void note_owner(struct sp_recorder *r, struct sp_process *p, const struct sp_process *from,
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
	note_write(r, sp_spool_writer_append_owner(r->spool, &o));
}

static void mark_python(struct sp_recorder *r, struct sp_process *p, bool is_python,
			uint64_t time)
{
	struct sp_exec e = {.timestamp_ns = time, .pid = p->pid, .is_python_runtime = is_python};
	p->is_python = is_python;
	note_write(r, sp_spool_writer_append_exec(r->spool, &e));
}

/* ---- perf maps of processes in containers -------------------------------- */

/* Kept open at most: fds, one per process. */
#define KEPT_PERF_MAPS_MAX 256
#define PERF_MAP_RETRY_NS 200000000ull /* 0.2 s */
#define PERF_MAP_TRIES 50

/* Looked for no more: kept, the host's, not to be trusted, or missing too long. */
static void perf_map_settled(struct sp_process *p)
{
	p->perf_map_wanted = false;
	p->perf_map_tries = PERF_MAP_TRIES;
}

/*
 * A process in a container writes its perf map into the container's /tmp
 * (/proc/PID/root/tmp/perf-NSPID.map from here), which goes away with the
 * container, often before the report runs.  The map is opened while the
 * process lives, with the checks every perf map gets (sp_perf_map_open: no
 * symlink, a regular file, owned by the process's user or root, not
 * writable by others, not older than the process), and kept open: the open
 * file outlives the container's /tmp, and is read once, at the end, when it
 * holds every line the runtime wrote (sp_symbolize_perf_maps).
 */
static void keep_perf_map(struct sp_recorder *r, struct sp_process *p, uint64_t now_ns)
{
	if (now_ns && now_ns < p->perf_map_next_ns)
		return;
	char path[128];
	int32_t nspid;
	int where = sp_pid_perf_map_path(p->pid, path, sizeof(path), &nspid);
	if (where != 1 || r->nkept >= KEPT_PERF_MAPS_MAX) {
		perf_map_settled(p); /* the host's /tmp/perf-PID.map: the report reads it */
		return;
	}
	uint32_t uid;
	int64_t owner = sp_pid_euid(p->pid, &uid) ? SP_PERF_MAP_OWNER_UNKNOWN : (int64_t)uid;
	unsigned verdict;
	int fd;
	if (sp_perf_map_open(path, owner, sp_pid_start_us(p->pid), &verdict, &fd) == -ENOMEM)
		return;
	if (fd < 0) {
		p->perf_map_next_ns = now_ns + PERF_MAP_RETRY_NS;
		if (verdict != SP_PERF_MAP_MISSING || ++p->perf_map_tries >= PERF_MAP_TRIES) {
			perf_map_settled(p);
			r->summary.container_perf_maps_missing++;
		}
		return;
	}
	if (sp_array_reserve((void **)&r->kept_pids, &r->kept_cap, r->nkept + 1, sizeof(*r->kept_pids)) ||
	    sp_array_reserve((void **)&r->kept_fds, &r->kept_fds_cap, r->nkept + 1, sizeof(*r->kept_fds))) {
		close(fd);
		return;
	}
	r->kept_pids[r->nkept] = p->pid;
	r->kept_fds[r->nkept++] = fd;
	r->summary.container_perf_maps++;
	perf_map_settled(p);
}

static const struct sp_cfi_row *code_row_cb(void *ctx, const struct sp_unwind_module *m,
					    uint64_t pc, bool after_call, struct sp_cfi_row *out);
static size_t read_code_cb(void *ctx, uint64_t addr, uint8_t *buf, size_t len);

/* A mapping of no file: anonymous memory or a kernel-made region other than [vdso]. */
static bool anon_path(const char *path)
{
	return !path[0] || !strcmp(path, "//anon") || !strncmp(path, "[anon", 5) ||
	       (path[0] == '[' && strcmp(path, "[vdso]"));
}

/* Register an executable mapping of pid: module record, then the process's map. */
static int add_mapping(struct sp_recorder *r, struct sp_process *p, uint64_t start, uint64_t end,
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
	bool anon = anon_path(path);
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
	int err = sp_spool_writer_add_module(r->spool, &m, &pm.module_id);
	if (err) {
		note_write(r, err);
		return err;
	}
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
		mark_python(r, p, true, time);
	/* JIT code or a Python runtime: in a container, its perf map is kept (keep_perf_map). */
	if (!err && (anon || p->is_python) && p->perf_map_tries < PERF_MAP_TRIES)
		p->perf_map_wanted = true;
	return err;
}

/* Executable mappings listed in one maps file; returns how many, or -errno. */
static int read_maps_file(struct sp_recorder *r, struct sp_process *p, const char *path)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -SP_E_NO_PROCESS : -errno;
	char *line = NULL;
	size_t cap = 0;
	int found = 0;
	while (getline(&line, &cap, f) > 0) {
		unsigned long long start, end, off, ino;
		unsigned maj, min;
		char perms[8];
		int name_at = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &off, &maj,
			   &min, &ino, &name_at) < 7 ||
		    !strchr(perms, 'x'))
			continue;
		char *name = name_at ? line + name_at : (char *)"";
		name[strcspn(name, "\n")] = '\0';
		/* [vsyscall] sits at a kernel address no user sample unwinds into. */
		if (!strcmp(name, "[vsyscall]"))
			continue;
		add_mapping(r, p, start, end, off, makedev(maj, min), ino, name, 0);
		found++;
	}
	free(line);
	fclose(f);
	return found;
}

/*
 * /proc/PID/maps snapshot: every executable mapping becomes a module.  Once
 * the leader thread has exited (pthread_exit in main) its maps file is
 * empty, so a live thread's /proc/PID/task/TID/maps is read instead.
 */
static int read_maps(struct sp_recorder *r, struct sp_process *p)
{
	char path[96];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)p->pid);
	p->maps_known = true;
	int found = read_maps_file(r, p, path);
	if (found != 0)
		return found < 0 ? found : 0;
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
	return 0;
}

/* ---- samples ----------------------------------------------------------- */

/* Anonymous code without CFI: a row proven from its bytes (DESIGN decision 4). */
static const struct sp_cfi_row *code_row_cb(void *ctx, const struct sp_unwind_module *m,
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

static const struct sp_unwind_module *find_module_cb(void *ctx, uint64_t pc)
{
	struct sp_proc_module *m = sp_process_find(ctx, pc);
	if (!m)
		return NULL;
	if (m->file && !m->um.cfi)
		m->um.cfi = sp_modfile_cfi(m->file);
	return &m->um;
}

/*
 * Split perf's callchain at its context markers: kernel entries (when -k) into
 * kpcs as lookup addresses, and the user frame-pointer chain returned in place.
 */
static size_t split_callchain(const struct sp_perf_sample *s, uint64_t *kpcs, size_t max,
			      const uint64_t **user, size_t *nuser)
{
	size_t nk = 0;
	int ctx = 0; /* 1 kernel, 2 user */
	*user = NULL;
	*nuser = 0;
	for (uint64_t i = 0; i < s->nr_callchain; i++) {
		uint64_t ip;
		memcpy(&ip, &s->callchain[i], sizeof(ip));
		if (ip >= (uint64_t)PERF_CONTEXT_MAX) {
			ctx = ip == (uint64_t)PERF_CONTEXT_KERNEL ? 1 :
			      ip == (uint64_t)PERF_CONTEXT_USER ? 2 : 0;
			if (ctx == 2) {
				*user = &s->callchain[i + 1];
				*nuser = 0;
			}
			continue;
		}
		if (ctx == 1 && nk < max) {
			/* Like user frames: return addresses are looked up at ra - 1. */
			kpcs[nk] = nk == 0 ? ip : ip - 1;
			nk++;
		} else if (ctx == 2) {
			(*nuser)++;
		}
	}
	return nk;
}

/*
 * DESIGN decision 3: when DWARF stopped early, continue with the frame-pointer
 * chain only from where both chains hold the same return address.  Appends to
 * pcs[n..] and returns the new count; *used says whether a splice happened.
 * Spliced frames stop at the first address no module of p maps.
 */
static size_t splice_callchain(struct sp_recorder *r, struct sp_process *p, size_t n,
			       const uint64_t *user, size_t nuser, bool *used)
{
	*used = false;
	if (n < 2 || !user) {
		r->summary.ignored_user_callchain_frames += nuser;
		return n;
	}
	/*
	 * user[0] is the sampled IP, user[k] the k-th return address.  The chain
	 * is trusted only where it agrees with every DWARF frame they share, at
	 * one fixed shift d: a leaf that sets up no frame pointer makes the
	 * frame-pointer walk skip its caller (d = 1).  Agreement over the whole
	 * overlap, not one matching address, is the proof: in a recursion one
	 * return address repeats at every depth.
	 */
	size_t d = 0, j = 0;
	for (; d <= 2; d++) {
		if (n < 2 + d || nuser < 2)
			break;
		size_t last = n - 1 - d < nuser - 1 ? n - 1 - d : nuser - 1;
		bool agree = last >= 1;
		for (size_t k = 1; agree && k <= last; k++) {
			uint64_t v;
			memcpy(&v, &user[k], sizeof(v));
			agree = v == r->pcs[k + d] + 1;
		}
		if (agree) {
			j = n - 1 - d; /* user[j] is the DWARF chain's last frame */
			break;
		}
	}
	if (!j || j >= nuser) {
		r->summary.ignored_user_callchain_frames += nuser;
		return n;
	}
	r->summary.ignored_user_callchain_frames += j + 1;
	for (size_t k = j + 1; k < nuser && n < MAX_FRAMES; k++) {
		uint64_t v;
		memcpy(&v, &user[k], sizeof(v));
		if (!v || !sp_process_find(p, v - 1))
			break;
		r->pcs[n++] = v - 1;
		*used = true;
	}
	return n;
}

/* Remember the root end of a thread's latest complete stack (128 bytes copied). */
static void remember_root(struct sp_recorder *r, uint32_t tid, size_t n)
{
	uint32_t idx;
	if (n < 2)
		return;
	if (sp_map_get(&r->root_index, tid, &idx)) {
		struct root_chain *c = &r->root_chains[idx];
		c->n = n < ROOT_CHAIN_MAX ? (uint32_t)n : ROOT_CHAIN_MAX;
		memcpy(c->pcs, r->pcs + n - c->n, c->n * sizeof(uint64_t));
		return;
	}
	if (sp_array_reserve((void **)&r->root_chains, &r->root_chains_cap, r->nroot_chains + 1,
			     sizeof(*r->root_chains)))
		return;
	struct root_chain *c = &r->root_chains[r->nroot_chains];
	c->n = n < ROOT_CHAIN_MAX ? (uint32_t)n : ROOT_CHAIN_MAX;
	memcpy(c->pcs, r->pcs + n - c->n, c->n * sizeof(uint64_t));
	if (!sp_map_put(&r->root_index, tid, (uint32_t)r->nroot_chains))
		r->nroot_chains++;
}

static void forget_root(struct sp_recorder *r, uint32_t tid)
{
	uint32_t idx;
	if (sp_map_get(&r->root_index, tid, &idx))
		r->root_chains[idx].n = 0;
}

/*
 * A spliced stack ends where the frame-pointer chain ends, often in start-up
 * code that keeps no frame pointer.  A thread's outermost frames do not change
 * while the frames above them live, so when the stack's last frame occurs
 * exactly once in the thread's remembered complete stack, the frames below it
 * there are this stack's too.  Returns true when the root was reached.
 */
static bool complete_from_root(struct sp_recorder *r, uint32_t tid, size_t *n)
{
	uint32_t idx;
	if (!*n || !sp_map_get(&r->root_index, tid, &idx))
		return false;
	const struct root_chain *c = &r->root_chains[idx];
	uint64_t last = r->pcs[*n - 1];
	size_t at = SIZE_MAX;
	for (size_t i = 0; i < c->n; i++) {
		if (c->pcs[i] != last)
			continue;
		if (at != SIZE_MAX)
			return false; /* twice: no unique meeting point */
		at = i;
	}
	if (at == SIZE_MAX)
		return false;
	for (size_t i = at + 1; i < c->n && *n < MAX_FRAMES; i++)
		r->pcs[(*n)++] = c->pcs[i];
	return true;
}

/* The frame of pc in module m (NULL: no module). */
static uint32_t intern_user_frame(struct sp_recorder *r, const struct sp_proc_module *m,
				  uint64_t pc)
{
	struct sp_frame f = {.module_id = SP_NO_MODULE, .mode = SP_FRAME_USER, .abs_ip = pc};
	uint32_t id = 0;
	if (m) {
		f.module_id = m->module_id;
		f.rel_ip = pc - m->start + m->file_offset;
	}
	note_write(r, sp_spool_writer_intern_frame(r->spool, &f, &id));
	return id;
}

/* FNV-1a over 64-bit words, mixed: the stack cache's key hash. */
static uint64_t hash_words(const uint64_t *w, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < n; i++) {
		h ^= w[i];
		h *= 0x100000001b3ULL;
		h ^= h >> 29;
	}
	return h;
}

/* The stack id cached for key[0..n), or false. */
static bool cached_stack(const struct sp_recorder *r, const uint64_t *key, size_t n,
			 uint64_t h, uint32_t *stack_id)
{
	uint32_t idx;
	if (!sp_map_get(&r->stack_cache, h, &idx))
		return false;
	const struct stack_key *k = &r->stack_keys[idx];
	if (k->len != n || memcmp(r->key_words + k->off, key, n * sizeof(*key)))
		return false; /* another key with the same hash: not cached */
	*stack_id = k->stack_id;
	return true;
}

/* Remember key -> stack_id; out of memory or past the cap only means no caching. */
static void cache_stack(struct sp_recorder *r, const uint64_t *key, size_t n, uint64_t h,
			uint32_t stack_id)
{
	uint32_t idx;
	if (sp_map_get(&r->stack_cache, h, &idx) || r->nkey_words + n > STACK_CACHE_MAX_WORDS ||
	    sp_array_reserve((void **)&r->key_words, &r->key_words_cap, r->nkey_words + n,
			     sizeof(*r->key_words)) ||
	    sp_array_reserve((void **)&r->stack_keys, &r->stack_keys_cap, r->nstack_keys + 1,
			     sizeof(*r->stack_keys)) ||
	    sp_map_put(&r->stack_cache, h, (uint32_t)r->nstack_keys))
		return;
	memcpy(r->key_words + r->nkey_words, key, n * sizeof(*key));
	r->stack_keys[r->nstack_keys++] =
		(struct stack_key){.off = r->nkey_words, .len = (uint32_t)n, .stack_id = stack_id};
	r->nkey_words += n;
}

/*
 * Attached without a stop, a thread started while its process's threads
 * were being listed can be sampled twice: by the event it inherited from
 * the thread that made it and by the one opened for it.  The stream that
 * samples a thread first keeps it; false for a sample of the other.
 */
#define NO_ORIGIN UINT32_MAX /* sample_origin of a tid that started or ended anew */

static bool sampled_once(struct sp_recorder *r, const struct sp_perf_sample *s)
{
	uint32_t origin, kept;
	if (!s->has_id || !sp_map_get(&r->events.id_tid, s->id, &origin))
		return true;
	if (sp_map_get(&r->sample_origin, s->tid, &kept) && kept != NO_ORIGIN)
		return kept == origin;
	/* Out of memory: both streams stay, as without ids. */
	sp_map_put(&r->sample_origin, s->tid, origin);
	return true;
}

/* Append one sample of (pid, tid) with stack_id at time; the thread is interned and named. */
static void append_sample(struct sp_recorder *r, int32_t pid, int32_t tid, uint32_t stack_id,
			  uint64_t time)
{
	uint32_t thread = 0;
	int err = sp_spool_writer_intern_thread(r->spool, pid, tid, &thread);
	if (!err)
		name_new_thread(r, pid, tid, thread);
	err = err ? err : sp_spool_writer_append_sample(r->spool, thread, stack_id, time);
	note_write(r, err);
	if (!err)
		r->summary.samples++;
}

/*
 * Write the held samples of pid (all pids when pid is -1) or only of tid
 * (tid >= 0): as taken inside an exec (exec) or as cut stacks.  Their counts
 * were taken as cut; an exec moves them.
 */
static void release_held(struct sp_recorder *r, int32_t pid, int32_t tid, bool exec)
{
	size_t kept = 0;
	uint64_t exec_pc = 0;
	for (size_t i = 0; exec && i < r->nheld; i++)
		if (r->held[i].pid == pid)
			exec_pc = r->held[i].pc;
	for (size_t i = 0; i < r->nheld; i++) {
		struct held_sample h = r->held[i];
		if ((pid >= 0 && h.pid != pid) || (tid >= 0 && h.tid != tid)) {
			r->held[kept++] = h;
			continue;
		}
		bool in_exec = exec && h.pc == exec_pc;
		if (in_exec) {
			struct sp_summary *sum = &r->summary;
			sum->stop_reasons[SP_STOP_STACK_EXHAUSTED]--;
			sum->stop_reasons[SP_STOP_ROOT]++;
			sum->truncated_frame_markers--;
			sum->exec_samples++;
		}
		append_sample(r, h.pid, h.tid, in_exec ? h.whole : h.cut, h.time);
	}
	r->nheld = kept;
}

/*
 * System-wide: (pid, tid)'s name from /proc, written with its first sample
 * (name_new_thread).  The idle task, pid 0, is "[idle]".
 */
static void discover_thread(struct sp_recorder *r, uint32_t pid, uint32_t tid)
{
	char path[96], name[64] = "[idle]";
	if (pid) {
		name[0] = '\0';
		snprintf(path, sizeof(path), "/proc/%u/task/%u/comm", pid, tid);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd < 0 ? -1 : read(fd, name, sizeof(name) - 1);
		if (fd >= 0)
			close(fd);
		name[n > 0 ? n : 0] = '\0';
		name[strcspn(name, "\n")] = '\0';
	}
	remember_comm(r, pid, tid, name, false);
}

/*
 * System-wide: a process running before the recording (or one whose start
 * came before its parent was known) at its first sample: who runs it and
 * its modules, from /proc.  Kernel threads and the idle task have none.
 */
static struct sp_process *discover_process(struct sp_recorder *r, const struct sp_perf_sample *s)
{
	struct sp_process *p = add_process(r, (pid_t)s->pid);
	if (!p)
		return NULL;
	p->maps_known = true;
	if (!s->pid || !s->regs_abi)
		return p;
	r->summary.processes_discovered++;
	note_owner(r, p, NULL, s->time);
	read_maps(r, p);
	return p;
}

static void on_sample(struct sp_recorder *r, const void *rec, size_t len)
{
	struct sp_perf_sample s;
	struct sp_summary *sum = &r->summary;
	sum->sample_events++;
	if (sp_perf_parse_sample(&r->events.layout, rec, len, &s)) {
		sum->error_stats[SP_ERR_RECORD_MALFORMED]++;
		return;
	}
	if (!s.has_tid) {
		sum->missing_pid_samples++;
		return;
	}
	if (s.tid == 0 && !r->system_wide) {
		sum->idle_tid_samples++;
		return;
	}
	if (r->events.ids && !sampled_once(r, &s)) {
		sum->sample_events--; /* a second stream's sample of the thread: not counted */
		return;
	}
	if (!s.has_time)
		sum->missing_timestamp_samples++;
	struct sp_process *p = find_process(r, (pid_t)s.pid);
	if (r->system_wide && (!p || !p->maps_known))
		p = discover_process(r, &s);
	if (!p) {
		sum->error_stats[SP_ERR_UNKNOWN_PROCESS]++;
		return;
	}
	if (r->system_wide && !find_comm(r, s.pid, s.tid))
		discover_thread(r, s.pid, s.tid);
	if (p->perf_map_wanted)
		keep_perf_map(r, p, s.time);

	const uint64_t *user;
	size_t nuser, nk = split_callchain(&s, r->kpcs, MAX_FRAMES, &user, &nuser);
	if (!r->events.kernel_enabled)
		nk = 0;
	size_t n = 0, unproven = 0;
	uint32_t fp_steps = 0;
	unsigned stop = SP_STOP_NO_REGS;
	struct sp_regs regs = {0};
	bool have_regs = s.regs_abi && s.regs;
	if (have_regs)
		sp_regs_from_perf(s.regs, r->events.layout.sample_regs_user, &regs);
	/*
	 * Sampled while execve replaced the image: the registers still hold the
	 * old image's pc while the address space is already the new one's.  The
	 * stack is that one frame of the program that called execve (its
	 * callers went with the old address space): complete, never an unknown
	 * address.  Known once the exec's COMM record has come: the old modules
	 * are p->pre_exec and the pc lies in none of the new ones.  A sample
	 * taken after the address space changed but before that record has
	 * the same old pc and an empty stack copy: it is held (below).
	 */
	const struct sp_proc_module *exec_pm = NULL;
	uint64_t upc = (regs.valid & (1u << SP_DW_RIP)) ? regs.regs[SP_DW_RIP] : s.ip;
	if (p->pre_exec) {
		if (sp_process_find(p, upc))
			sp_process_end_exec(p);
		else
			exec_pm = sp_process_find_pre_exec(p, upc);
	}
	if (exec_pm) {
		r->pcs[0] = upc;
		n = unproven = 1;
		stop = SP_STOP_ROOT;
		sum->exec_samples++;
	} else if (have_regs) {
		if (!s.stack_size)
			sum->error_stats[SP_ERR_NO_STACK_COPY]++;
		struct sp_stack_mem mem = {
			.base = regs.regs[SP_DW_RSP],
			.data = s.stack,
			.len = (size_t)s.dyn_size,
		};
		uint64_t jd_rows = sp_jit_code_jitdump_rows(p->jit);
		sp_unwind(&regs, &mem, find_module_cb, p, r->pcs, MAX_FRAMES, &n, &stop,
			  &r->unwind_stats);
		sum->code_frames = r->unwind_stats.code_frames;
		sum->jitdump_frames += sp_jit_code_jitdump_rows(p->jit) - jd_rows;
		unproven = r->unwind_stats.unproven;
		fp_steps = r->unwind_stats.fp_steps;
	} else if (r->system_wide && !s.regs_abi &&
		   (((const struct perf_event_header *)rec)->misc & PERF_RECORD_MISC_CPUMODE_MASK) ==
			   PERF_RECORD_MISC_KERNEL) {
		/*
		 * A kernel thread or an idle CPU: no user side at all.  Its
		 * kernel frames (-k) are the whole stack; without them, the
		 * sampled kernel function alone.
		 */
		if (nk == 0) {
			r->kpcs[0] = s.ip;
			nk = 1;
		}
		stop = SP_STOP_ROOT;
		sum->kernel_task_samples++;
	} else if (s.ip && nk == 0) {
		/* Without registers only the sampled IP is known. */
		r->pcs[0] = s.ip;
		n = 1;
		unproven = 1;
	}
	bool spliced = false, rooted = stop == SP_STOP_ROOT;
	if (stop == SP_STOP_STACK_EXHAUSTED || stop == SP_STOP_NO_UNWIND_INFO) {
		n = splice_callchain(r, p, n, user, nuser, &spliced);
		/*
		 * Frame-pointer steps the copy's end left unproven stand when the
		 * kernel's chain agreed with every frame up to the copy's end,
		 * including the DWARF frames after them.
		 */
		if (!spliced && unproven < n) {
			n = unproven;
			stop = SP_STOP_NO_UNWIND_INFO;
			fp_steps = 0;
		}
		sum->spliced_stacks += spliced;
		rooted = spliced && complete_from_root(r, s.tid, &n);
	} else if (!rooted) {
		sum->ignored_user_callchain_frames += nuser;
	}
	sum->stop_reasons[stop < SP_STOP_COUNT_ ? stop : SP_STOP_BAD_RULE]++;
	sum->fp_frames += fp_steps;
	if (stop == SP_STOP_ROOT)
		remember_root(r, s.tid, n);
	if (!rooted && stop == SP_STOP_STACK_EXHAUSTED && s.stack_size && s.dyn_size >= s.stack_size)
		sum->stacks_cut_by_copy++;
	/*
	 * Nothing copied at all, in a system call (the entry code keeps rax at
	 * -ENOSYS until the call returns; a forked child's first steps have 0):
	 * perhaps inside an exec whose record is to come (held_sample).
	 */
	bool hold = have_regs && !exec_pm && s.stack_size && !s.dyn_size && n == 1 && !rooted &&
		    stop == SP_STOP_STACK_EXHAUSTED && (regs.valid & (1u << SP_DW_RAX)) &&
		    regs.regs[SP_DW_RAX] == (uint64_t)-ENOSYS;
	if (!hold && r->nheld)
		release_held(r, -1, (int32_t)s.tid, false);
	if (hold && r->nheld == HELD_MAX)
		release_held(r, r->held[0].pid, r->held[0].tid, false);

	/* Seen before in this process with these modules: its stack id, frames interned. */
	size_t nkey = 0;
	r->key[nkey++] = (uint64_t)(uint32_t)s.pid;
	r->key[nkey++] = p->gen;
	r->key[nkey++] = rooted ? UINT64_MAX : stop;
	r->key[nkey++] = nk;
	memcpy(r->key + nkey, r->kpcs, nk * sizeof(*r->kpcs));
	nkey += nk;
	memcpy(r->key + nkey, r->pcs, n * sizeof(*r->pcs));
	nkey += n;
	uint64_t key_hash = hash_words(r->key, nkey);
	uint32_t stack_id = 0;
	int err;
	bool hit = !hold && cached_stack(r, r->key, nkey, key_hash, &stack_id);
	if (hit) {
		if (!rooted && nk + n > 0)
			sum->truncated_frame_markers++;
		goto append;
	}

	/* Leaf first: kernel frames, then user frames, then the marker. */
	size_t nf = 0;
	for (size_t i = 0; i < nk; i++) {
		struct sp_frame f = {.module_id = SP_NO_MODULE, .mode = SP_FRAME_KERNEL,
				     .abs_ip = r->kpcs[i]};
		note_write(r, sp_spool_writer_intern_frame(r->spool, &f, &r->frame_ids[nf++]));
	}
	for (size_t i = 0; i < n; i++)
		r->frame_ids[nf++] = intern_user_frame(
			r, exec_pm ? exec_pm : sp_process_find(p, r->pcs[i]), r->pcs[i]);
	if (nf == 0)
		sum->empty_stack_samples++;
	if (!rooted && nf > 0) {
		struct sp_frame marker = {.module_id = SP_NO_MODULE, .mode = SP_FRAME_TRUNCATED,
					  .abs_ip = stop};
		note_write(r, sp_spool_writer_intern_frame(r->spool, &marker, &r->frame_ids[nf++]));
		sum->truncated_frame_markers++;
	}
	err = sp_spool_writer_intern_stack(r->spool, r->frame_ids, nf, &stack_id);
	if (!err && !r->write_error && !hold)
		cache_stack(r, r->key, nkey, key_hash, stack_id);
	note_write(r, err);
	if (hold && !err) {
		/* the same frames without the marker (the last one) */
		uint32_t whole = 0;
		err = sp_spool_writer_intern_stack(r->spool, r->frame_ids, nf - 1, &whole);
		note_write(r, err);
		if (!err) {
			r->held[r->nheld++] = (struct held_sample){
				.pid = (int32_t)s.pid, .tid = (int32_t)s.tid, .time = s.time,
				.pc = r->pcs[0], .cut = stack_id, .whole = whole};
			return;
		}
	}
append:
	if (!nk && !n)
		sum->empty_stack_samples += hit;
	append_sample(r, (int32_t)s.pid, (int32_t)s.tid, stack_id, s.time);
}

static void on_mmap2(struct sp_recorder *r, const void *rec, size_t len)
{
	struct sp_perf_mmap2 m;
	struct sp_perf_sample_id id;
	if (sp_perf_parse_mmap2(rec, len, &m)) {
		r->summary.error_stats[SP_ERR_RECORD_MALFORMED]++;
		return;
	}
	if (!(m.prot & PROT_EXEC) || !m.len)
		return;
	uint64_t time = 0;
	if (!sp_perf_parse_sample_id(&r->events.layout, rec, len, &id))
		time = id.time;
	struct sp_process *p = find_process(r, (pid_t)m.pid);
	if (!p)
		p = add_process(r, (pid_t)m.pid);
	if (p)
		add_mapping(r, p, m.addr, m.addr + m.len, m.pgoff, makedev(m.maj, m.min), m.ino,
			    m.filename, time);
}

static void on_comm(struct sp_recorder *r, const void *rec, size_t len)
{
	struct sp_perf_comm c;
	struct sp_perf_sample_id id;
	uint32_t thread;
	if (sp_perf_parse_comm(rec, len, &c)) {
		r->summary.error_stats[SP_ERR_RECORD_MALFORMED]++;
		return;
	}
	uint64_t time = 0;
	if (!sp_perf_parse_sample_id(&r->events.layout, rec, len, &id))
		time = id.time;
	if (c.exec) {
		/* Samples of pid held for want of a stack were taken inside this exec. */
		if (r->nheld)
			release_held(r, (int32_t)c.pid, -1, true);
		/* An exec replaces the whole image: the old modules are gone. */
		struct sp_process *p = add_process(r, (pid_t)c.pid);
		if (p) {
			sp_process_begin_exec(p);
			p->maps_known = true; /* the new image's mappings follow */
			mark_python(r, p, false, time);
			note_owner(r, p, NULL, time);
		}
		forget_root(r, c.tid);
	}
	int err = sp_spool_writer_intern_thread(r->spool, (int32_t)c.pid, (int32_t)c.tid, &thread);
	err = err ? err : sp_spool_writer_set_thread_name(r->spool, thread, c.comm);
	note_write(r, err);
	remember_comm(r, c.pid, c.tid, c.comm, true);
}

static void on_task(struct sp_recorder *r, const void *rec, size_t len, bool fork)
{
	struct sp_perf_task t;
	if (sp_perf_parse_task(rec, len, &t)) {
		r->summary.error_stats[SP_ERR_RECORD_MALFORMED]++;
		return;
	}
	/* A tid that starts or ends is a new thread the next time it is sampled. */
	uint32_t kept;
	if (r->events.ids && sp_map_get(&r->sample_origin, t.tid, &kept))
		sp_map_put(&r->sample_origin, t.tid, NO_ORIGIN);
	struct task_comm *parent_comm = fork ? find_comm(r, t.ppid, t.ptid) : NULL;
	if (parent_comm && !find_comm(r, t.pid, t.tid)) {
		char name[sizeof(parent_comm->name)];
		memcpy(name, parent_comm->name, sizeof(name));
		remember_comm(r, t.pid, t.tid, name, false);
	}
	if (fork && t.pid != t.ppid) {
		/* A forked child starts with a copy of its parent's modules. */
		struct sp_process *parent = find_process(r, (pid_t)t.ppid);
		struct sp_process *child = add_process(r, (pid_t)t.pid);
		if (child && parent && parent != child) {
			sp_process_copy_modules(child, parent);
			child->maps_known = parent->maps_known;
		}
		if (child)
			note_owner(r, child, parent != child ? parent : NULL, t.time);
	} else if (!fork) {
		if (r->nheld)
			release_held(r, -1, (int32_t)t.tid, false);
		forget_root(r, t.tid);
		struct sp_process *p = t.pid == t.tid ? find_process(r, (pid_t)t.pid) : NULL;
		if (p) {
			p->exited = true;
			p->exited_ns = monotonic_ns();
		}
	}
}

static void on_lost(struct sp_recorder *r, const void *rec, size_t len)
{
	struct sp_perf_lost l;
	struct sp_perf_sample_id id;
	if (sp_perf_parse_lost(rec, len, &l)) {
		r->summary.error_stats[SP_ERR_RECORD_MALFORMED]++;
		return;
	}
	uint64_t time = 0;
	if (!sp_perf_parse_sample_id(&r->events.layout, rec, len, &id))
		time = id.time;
	r->summary.lost_events += l.lost;
	note_write(r, sp_spool_writer_append_lost(r->spool, l.lost, time));
}

static void on_record(void *ctx, const struct perf_event_header *h, size_t len)
{
	struct sp_recorder *r = ctx;
	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		on_sample(r, h, len);
		break;
	case PERF_RECORD_MMAP2:
		on_mmap2(r, h, len);
		break;
	case PERF_RECORD_COMM:
		on_comm(r, h, len);
		break;
	case PERF_RECORD_FORK:
		on_task(r, h, len, true);
		break;
	case PERF_RECORD_EXIT:
		on_task(r, h, len, false);
		break;
	case PERF_RECORD_LOST:
		on_lost(r, h, len);
		break;
	default:
		/* THROTTLE, UNTHROTTLE and friends carry nothing we keep. */
		break;
	}
}

/* ---- attach ------------------------------------------------------------ */

static void raise_nofile_limit(void)
{
	struct rlimit rl;
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static char process_state(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* The state follows the last ')' since comm may contain parentheses. */
	char *p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

/* Open events for every thread of pid not yet opened; returns how many were new. */
static int open_threads(struct sp_recorder *r, pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return errno == ENOENT ? -SP_E_NO_PROCESS : -errno;
	int added = 0, err = 0;
	struct dirent *de;
	while (!err && (de = readdir(d))) {
		char *end;
		long tid = strtol(de->d_name, &end, 10);
		uint32_t dummy;
		if (*end || tid <= 0 || sp_map_get(&r->opened_tids, (uint64_t)tid, &dummy))
			continue;
		err = sp_events_open_task(&r->events, (pid_t)tid);
		if (err == -ESRCH) { /* the thread exited meanwhile */
			err = 0;
			continue;
		}
		if (!err)
			err = sp_map_put(&r->opened_tids, (uint64_t)tid, (uint32_t)pid);
		added++;
	}
	closedir(d);
	return err ? err : added;
}

/* Thread names from /proc for every opened thread of pid. */
static void name_threads(struct sp_recorder *r, pid_t pid)
{
	const struct sp_map *m = &r->opened_tids;
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->used[i] || m->vals[i] != (uint32_t)pid)
			continue;
		char path[96], name[64] = "";
		snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)m->keys[i]);
		FILE *f = fopen(path, "re");
		if (f) {
			if (fgets(name, sizeof(name), f))
				name[strcspn(name, "\n")] = '\0';
			fclose(f);
		}
		uint32_t idx;
		if (!sp_spool_writer_intern_thread(r->spool, pid, (int32_t)m->keys[i], &idx) &&
		    !sp_spool_writer_set_thread_name(r->spool, idx, name))
			remember_comm(r, (uint32_t)pid, (uint32_t)m->keys[i], name, true);
	}
}

static int watch_root(struct sp_recorder *r, pid_t pid)
{
	pid_t *roots = realloc(r->roots, (r->nroots + 1) * sizeof(*roots));
	if (!roots)
		return -ENOMEM;
	r->roots = roots;
	int *fds = realloc(r->pidfds, (r->nroots + 1) * sizeof(*fds));
	if (!fds)
		return -ENOMEM;
	r->pidfds = fds;
	r->roots[r->nroots] = pid;
	r->pidfds[r->nroots] = (int)syscall(SYS_pidfd_open, pid, 0);
	r->nroots++;
	return 0;
}

static int open_spool(struct sp_recorder *r, const char *path, const struct sp_record_opts *opts)
{
	struct timespec mono, real;
	struct utsname uts;
	char host[256] = "";
	clock_gettime(CLOCK_MONOTONIC, &mono);
	clock_gettime(CLOCK_REALTIME, &real);
	gethostname(host, sizeof(host) - 1);
	bool have_uts = uname(&uts) == 0;
	uint32_t freq = opts->period ? 0 : opts->frequency_hz ? opts->frequency_hz : SP_DEFAULT_FREQUENCY;
	/* by period, only a clock's samples have a known interval (its period, ns) */
	uint64_t interval_us = freq ? 1000000 / freq
			       : sp_event_counts_time(r->events.source) ? opts->period / 1000 : 0;
	struct sp_spool_meta meta = {
		.start_timestamp_us = opts->start_timestamp_us
					      ? opts->start_timestamp_us
					      : (uint64_t)real.tv_sec * 1000000 + (uint64_t)real.tv_nsec / 1000,
		.sample_interval_us = opts->sample_interval_us ? opts->sample_interval_us
							       : interval_us,
		.start_monotonic_ns = (uint64_t)mono.tv_sec * 1000000000 + (uint64_t)mono.tv_nsec,
		.frequency_hz = freq,
		.sample_period = opts->period,
		.flags = r->system_wide ? SP_META_SYSTEM_WIDE : 0,
		.stack_size = opts->stack_size ? opts->stack_size : SP_DEFAULT_STACK_SIZE,
		.event_source = r->events.source,
		.command = opts->command ? opts->command : "",
		.hostname = host,
		.kernel_release = have_uts ? uts.release : "",
	};
	r->spool_path = strdup(path);
	if (!r->spool_path)
		return -ENOMEM;
	return sp_spool_writer_open(path, &meta, &r->spool);
}

/*
 * First half of attaching: stop the process (STOP mode) and open events for
 * its threads, or for the suspended child (EXEC mode).  *stopped says whether
 * we sent SIGSTOP, so the caller resumes it whatever happens next.
 */
/* Listings of a running process's threads after its events are on (ENABLE_THEN_SCAN). */
#define SCAN_ROUNDS 16

static int open_events(struct sp_recorder *r, pid_t pid, enum sp_attach_mode mode,
		       bool *stopped)
{
	*stopped = false;
	r->events.attr.enable_on_exec = mode == SP_ATTACH_ENABLE_ON_EXEC;
	r->events.side_attr.enable_on_exec = r->events.attr.enable_on_exec;
	if (mode == SP_ATTACH_ENABLE_ON_EXEC) {
		int err = sp_events_open_task(&r->events, pid);
		return err ? err : sp_map_put(&r->opened_tids, (uint64_t)pid, (uint32_t)pid);
	}
	char state = process_state(pid);
	if (!state)
		return -SP_E_NO_PROCESS;
	/* A process someone else stopped stays stopped: don't SIGCONT it. */
	if (mode == SP_ATTACH_STOP_ENABLE_RESUME && state != 'T' && state != 't') {
		if (kill(pid, SIGSTOP))
			return -errno;
		*stopped = true;
		for (int i = 0; i < 200 && process_state(pid) != 'T'; i++)
			usleep(1000);
	}
	/*
	 * Re-list until no new thread shows up: threads may start until the stop
	 * lands, or, not stopped, all along (a bounded number of rounds then:
	 * threads started later inherit their maker's events).
	 */
	int added, rounds = 0;
	do
		added = open_threads(r, pid);
	while (added > 0 && (mode == SP_ATTACH_STOP_ENABLE_RESUME || ++rounds < SCAN_ROUNDS));
	return added < 0 ? added : 0;
}

/* Second half: the process's state and modules, then sampling on (STOP mode). */
static int register_process(struct sp_recorder *r, pid_t pid, enum sp_attach_mode mode,
			    size_t first_fd)
{
	struct sp_process *p = add_process(r, pid);
	if (!p)
		return -ENOMEM;
	if (mode == SP_ATTACH_STOP_ENABLE_RESUME) {
		note_owner(r, p, NULL, 0);
		int err = read_maps(r, p);
		if (err)
			return err;
		name_threads(r, pid);
		err = sp_events_enable(&r->events, first_fd);
		if (err)
			return err;
	} else if (mode == SP_ATTACH_ENABLE_THEN_SCAN) {
		/*
		 * Sampling first, then what /proc says: an mmap2, comm or fork
		 * record from here on is in the rings, and what happened before is
		 * in maps and task; the records merge with the scan when drained.
		 */
		int err = sp_events_enable(&r->events, first_fd);
		for (int round = 0; !err && round < SCAN_ROUNDS; round++) {
			size_t from = r->events.nfds;
			int added = open_threads(r, pid);
			if (added <= 0) {
				err = added;
				break;
			}
			err = sp_events_enable(&r->events, from);
		}
		note_owner(r, p, NULL, 0);
		err = err ? err : read_maps(r, p);
		if (err)
			return err;
		name_threads(r, pid);
	} else if (mode == SP_ATTACH_ENABLE_ON_EXEC) {
		/*
		 * The child waits to exec the command: its image is still a copy
		 * of the caller's.  Known, it becomes the pre-exec image, which
		 * names the samples taken inside that exec (sampling starts there,
		 * after the address space was replaced).  Best effort.
		 */
		(void)read_maps(r, p);
	}
	return watch_root(r, pid);
}

static struct sp_recorder *recorder_new(void)
{
	struct sp_recorder *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	sp_map_init(&r->proc_index);
	sp_map_init(&r->opened_tids);
	sp_map_init(&r->sample_origin);
	sp_map_init(&r->root_index);
	sp_map_init(&r->comm_index);
	sp_map_init(&r->stack_cache);
	sp_modfile_cache_init(&r->files);
	return r;
}

/* A recording that could not start: no half-made spool is left behind. */
static void abandon(struct sp_recorder *r, const char *spool_path)
{
	if (r->spool) {
		sp_spool_writer_free(r->spool);
		r->spool = NULL;
		unlink(spool_path);
	}
	sp_recorder_free(r);
}

int sp_recorder_attach(pid_t pid, const char *spool_path, enum sp_attach_mode mode,
		       const struct sp_record_opts *opts, struct sp_recorder **out)
{
	bool stopped = false;
	int err;

	static const struct sp_record_opts defaults;
	if (pid <= 0 || !spool_path)
		return -SP_E_BAD_ARG;
	if (!opts)
		opts = &defaults;
	sp_elf_init();
	raise_nofile_limit();
	struct sp_recorder *r = recorder_new();
	if (!r)
		return -ENOMEM;
	err = sp_events_init(&r->events, opts, mode == SP_ATTACH_ENABLE_ON_EXEC,
			     mode == SP_ATTACH_ENABLE_THEN_SCAN, false);
	if (err)
		goto fail;
	/* The spool's header names the event source, known once an event is open. */
	err = open_events(r, pid, mode, &stopped);
	if (err)
		goto fail;
	r->summary.kernel_enabled = r->events.kernel_enabled;
	err = open_spool(r, spool_path, opts);
	if (err)
		goto fail;
	err = register_process(r, pid, mode, 0);
	if (err)
		goto fail;
	if (stopped)
		kill(pid, SIGCONT);
	*out = r;
	return 0;
fail:
	if (stopped)
		kill(pid, SIGCONT);
	abandon(r, spool_path);
	return err;
}

int sp_recorder_attach_system(const char *spool_path, const struct sp_record_opts *opts,
			      struct sp_recorder **out)
{
	static const struct sp_record_opts defaults;
	if (!spool_path || !out)
		return -SP_E_BAD_ARG;
	if (!opts)
		opts = &defaults;
	sp_elf_init();
	raise_nofile_limit();
	struct sp_recorder *r = recorder_new();
	if (!r)
		return -ENOMEM;
	r->system_wide = true;
	int err = sp_events_init(&r->events, opts, false, false, true);
	if (!err)
		err = sp_events_open_cpus(&r->events);
	r->summary.kernel_enabled = r->events.kernel_enabled;
	if (!err)
		err = open_spool(r, spool_path, opts);
	/*
	 * On from here: a process that starts now comes with fork, comm and
	 * mmap2 records; one already running is read from /proc at its first
	 * sample (discover_process), so the spool holds only what was sampled.
	 */
	if (!err)
		err = sp_events_enable(&r->events, 0);
	if (err) {
		abandon(r, spool_path);
		return err;
	}
	*out = r;
	return 0;
}

int sp_recorder_open_process(struct sp_recorder *r, pid_t pid, enum sp_attach_mode mode)
{
	bool stopped = false;
	if (pid <= 0)
		return -SP_E_BAD_ARG;
	for (size_t i = 0; i < r->nroots; i++)
		if (r->roots[i] == pid)
			return 0;
	size_t first_fd = r->events.nfds;
	int err = open_events(r, pid, mode, &stopped);
	if (!err)
		err = register_process(r, pid, mode, first_fd);
	if (stopped)
		kill(pid, SIGCONT);
	return err;
}

int sp_recorder_refresh_threads(struct sp_recorder *r, pid_t pid)
{
	size_t first_fd = r->events.nfds;
	r->events.attr.enable_on_exec = 0;
	r->events.side_attr.enable_on_exec = 0;
	int added = open_threads(r, pid);
	if (added > 0) {
		name_threads(r, pid);
		int err = sp_events_enable(&r->events, first_fd);
		if (err)
			return err;
	}
	return added;
}

bool sp_recorder_has_pending_events(const struct sp_recorder *r)
{
	return sp_events_pending(&r->events);
}

int sp_recorder_wait(struct sp_recorder *r, int timeout_ms)
{
	return sp_events_wait(&r->events, timeout_ms);
}

static uint64_t monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

/*
 * A side-band mapping record (struct sp_events): open the file of a new
 * executable mapping now, while its process lives, through its
 * /proc/PID/map_files link if the path no longer holds it.  The main
 * stream's record of the same mapping finds it open (by device and inode),
 * even when the process has exited and the file is deleted by then.
 */
static void on_side_record(void *ctx, const struct perf_event_header *h, size_t len)
{
	struct sp_recorder *r = ctx;
	struct sp_perf_mmap2 m;
	if (h->type != PERF_RECORD_MMAP2 || sp_perf_parse_mmap2(h, len, &m) ||
	    !(m.prot & PROT_EXEC) || !m.len || m.filename[0] != '/' || anon_path(m.filename) ||
	    sp_jitdump_is_path(m.filename))
		return;
	sp_modfile_get(&r->files, (pid_t)m.pid, m.addr, m.addr + m.len, makedev(m.maj, m.min),
		       m.ino, m.filename);
}

/* ---- memory of processes gone ------------------------------------------ */

/* A pass every EVICT_EVERY_NS; a process is forgotten EVICT_AFTER_NS after its exit. */
#define EVICT_EVERY_NS 2000000000ull
#define EVICT_AFTER_NS 2000000000ull

/* Some file of p's was deleted or replaced: kept to name its frames at the end. */
static bool maps_replaced_file(const struct sp_process *p)
{
	for (size_t i = 0; i < p->nmods; i++)
		if (p->mods[i].file && sp_modfile_replaced(p->mods[i].file))
			return true;
	return false;
}

static void mark_in_use(struct sp_proc_module *mods, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct sp_modfile *f = mods[i].file;
		if (f) {
			f->in_use = true;
			if (f->cfi_owner)
				f->cfi_owner->in_use = true;
		}
	}
}

/*
 * A recording of a busy machine (or of a build) sees thousands of processes
 * come and go.  Once one is gone for good (its exit drained EVICT_AFTER_NS
 * ago, so its last samples are written; and no process has its pid), its
 * modules are dropped, and the module files no process maps any more are
 * closed with their CFI tables.  Files deleted or replaced stay open: the
 * end of the recording names their frames from them.
 */
static void evict_gone(struct sp_recorder *r, uint64_t now)
{
	if (now - r->last_evict_ns < EVICT_EVERY_NS)
		return;
	r->last_evict_ns = now;
	size_t dropped = 0;
	for (size_t i = 0; i < r->nprocs; i++) {
		struct sp_process *p = r->procs[i];
		if (!p->exited || (!p->nmods && !p->npre_exec) || now - p->exited_ns < EVICT_AFTER_NS ||
		    !(kill(p->pid, 0) && errno == ESRCH) || maps_replaced_file(p))
			continue;
		sp_process_end_exec(p);
		sp_process_clear_modules(p);
		p->maps_known = false;
		dropped++;
	}
	if (!dropped)
		return;
	for (size_t i = 0; i < r->files.nfiles; i++)
		r->files.files[i]->in_use = false;
	for (size_t i = 0; i < r->nprocs; i++) {
		mark_in_use(r->procs[i]->mods, r->procs[i]->nmods);
		mark_in_use(r->procs[i]->pre_exec, r->procs[i]->npre_exec);
	}
	r->summary.processes_forgotten += dropped;
	r->summary.files_closed += sp_modfile_cache_evict(&r->files);
}

int sp_recorder_consume_available(struct sp_recorder *r)
{
	uint64_t corrupt = 0;
	sp_events_drain_side(&r->events, on_side_record, r, &corrupt);
	int err = sp_events_drain(&r->events, on_record, r, &corrupt);
	r->summary.error_stats[SP_ERR_RECORD_MALFORMED] += corrupt;
	if (err)
		return err;
	/*
	 * The writer flushes by size; a slow recording would keep seconds of
	 * samples in memory, lost if the recorder is killed.  Flush at least
	 * every 200 ms (one write(2), nothing next to the drain's cost) so a
	 * SIGKILL costs at most about that much.
	 */
	uint64_t now = monotonic_ns();
	if (now - r->last_flush_ns >= 200000000ULL) {
		r->last_flush_ns = now;
		note_write(r, sp_spool_writer_flush(r->spool));
	}
	evict_gone(r, now);
	if (!err && r->write_error)
		return r->write_error;
	return 0;
}

int sp_recorder_flush(struct sp_recorder *r)
{
	if (!r || r->finished)
		return r ? 0 : -SP_E_BAD_ARG;
	r->last_flush_ns = monotonic_ns();
	note_write(r, sp_spool_writer_flush(r->spool));
	return r->write_error;
}

/*
 * A tail's poll read modules [first, end): each one whose file was deleted
 * or replaced gets a copy of the recorder's open image, named from it as
 * the end of the recording would (store_replaced_images).
 */
static void tail_images(void *ctx, struct sp_tail *t, size_t first, size_t end)
{
	struct sp_recorder *r = ctx;
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct sp_process *p = r->procs[i];
		for (size_t j = 0; j < p->nmods; j++) {
			const struct sp_proc_module *pm = &p->mods[j];
			if (pm->module_id < first || pm->module_id >= end || !pm->file ||
			    sp_tail_image_fd(t, pm->module_id) >= 0 || !sp_modfile_replaced(pm->file))
				continue;
			int fd = fcntl(pm->file->fd, F_DUPFD_CLOEXEC, 0);
			if (fd >= 0)
				sp_tail_put_image(t, pm->module_id, fd);
		}
	}
}

static void tail_gone(void *ctx)
{
	((struct sp_recorder *)ctx)->tail = NULL;
}

int sp_recorder_tail(struct sp_recorder *r, struct sp_tail **out)
{
	if (!r || !out || r->tail || !r->spool_path)
		return -SP_E_BAD_ARG;
	int err = sp_recorder_flush(r);
	if (!err)
		err = sp_tail_open(r->spool_path, out);
	if (err)
		return err;
	r->tail = *out;
	sp_tail_set_images(r->tail, tail_images, tail_gone, r);
	return 0;
}

void sp_recorder_disable(struct sp_recorder *r)
{
	sp_events_disable(&r->events);
}

void sp_recorder_summary(const struct sp_recorder *r, struct sp_summary *out)
{
	*out = r->summary;
	out->error_stats[SP_ERR_MODULE_UNREADABLE] = r->files.unreadable;
}

uint64_t sp_recorder_sections_not_inflated(const struct sp_recorder *r, const char **first)
{
	uint64_t n = 0;
	if (first)
		*first = NULL;
	for (size_t i = 0; i < r->files.nfiles; i++) {
		const struct sp_modfile *f = r->files.files[i];
		if (f->inflate.over_limit && first && !*first)
			*first = f->path;
		n += f->inflate.over_limit;
	}
	return n;
}

bool sp_recorder_counts_kernel_time(const struct sp_recorder *r)
{
	return !r->events.kernel_denied;
}

enum sp_event_source sp_recorder_event_source(const struct sp_recorder *r)
{
	return r->events.source;
}

/* Is root i alive?  A pidfd turns readable once the whole thread group has exited. */
static bool root_alive(const struct sp_recorder *r, size_t i)
{
	if (r->pidfds[i] < 0)
		return kill(r->roots[i], 0) == 0 || errno == EPERM;
	struct pollfd pfd = {.fd = r->pidfds[i], .events = POLLIN};
	return poll(&pfd, 1, 0) == 0;
}

bool sp_recorder_process_is_active(const struct sp_recorder *r, pid_t pid)
{
	for (size_t i = 0; i < r->nroots; i++)
		if ((pid <= 0 || r->roots[i] == pid) && root_alive(r, i))
			return true;
	return false;
}

size_t sp_recorder_active_processes(const struct sp_recorder *r, pid_t *out, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < r->nroots; i++) {
		if (!root_alive(r, i))
			continue;
		if (out && n < max)
			out[n] = r->roots[i];
		n++;
	}
	return n;
}

bool sp_recorder_has_active_processes_except(const struct sp_recorder *r, pid_t pid)
{
	for (size_t i = 0; i < r->nroots; i++)
		if (r->roots[i] != pid && root_alive(r, i))
			return true;
	return false;
}

/*
 * DESIGN decision 7: a module file deleted or replaced while recording can
 * never be proven at its path again, so its frames are named now, from the
 * image the recorder holds open, and stored in the spool.  Only at the end,
 * only for such files: the check is one stat(2) per module file.
 */
static void store_replaced_images(struct sp_recorder *r)
{
	size_t n = 0;
	for (size_t i = 0; i < r->nprocs; i++)
		for (size_t j = 0; j < r->procs[i]->nmods; j++) {
			const struct sp_proc_module *pm = &r->procs[i]->mods[j];
			if (pm->file && sp_modfile_replaced(pm->file) && pm->module_id >= n)
				n = (size_t)pm->module_id + 1;
		}
	int *fds = n ? malloc(n * sizeof(*fds)) : NULL;
	if (!fds)
		return;
	for (size_t i = 0; i < n; i++)
		fds[i] = -1;
	for (size_t i = 0; i < r->nprocs; i++)
		for (size_t j = 0; j < r->procs[i]->nmods; j++) {
			const struct sp_proc_module *pm = &r->procs[i]->mods[j];
			if (pm->file && pm->module_id < n && sp_modfile_replaced(pm->file))
				fds[pm->module_id] = pm->file->fd;
		}
	uint64_t frames;
	/* Best effort: without these records the frames say their file is not the recorded one. */
	sp_symbolize_images(r->spool, fds, n, &frames);
	free(fds);
}

int sp_recorder_finish(struct sp_recorder *r, struct sp_summary *out)
{
	if (r->finished)
		return -SP_E_BAD_ARG;
	sp_recorder_disable(r);
	int err = sp_recorder_consume_available(r);
	release_held(r, -1, -1, false);
	r->finished = true;
	/*
	 * Naming replaced images may read long (a debug link's CRC reads the
	 * whole candidate): SIGINT and SIGTERM are held meanwhile, the CRC gives
	 * up as soon as one is pending (debugfile.c), and the caller's handler
	 * runs when the mask is restored.
	 */
	sigset_t stop, old;
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	bool held = !pthread_sigmask(SIG_BLOCK, &stop, &old);
	store_replaced_images(r);
	if (r->nkept)
		(void)sp_symbolize_perf_maps(r->spool, r->kept_pids, r->kept_fds, r->nkept,
					     &r->summary.container_perf_map_frames);
	if (held)
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	r->summary.error_stats[SP_ERR_MODULE_UNREADABLE] = r->files.unreadable;
	int ferr = sp_spool_writer_finish(r->spool, &r->summary);
	if (out)
		*out = r->summary;
	return err ? err : ferr;
}

void sp_recorder_free(struct sp_recorder *r)
{
	if (!r)
		return;
	/* a tail reads on without images */
	if (r->tail)
		sp_tail_set_images(r->tail, NULL, NULL, NULL);
	free(r->spool_path);
	sp_events_release(&r->events);
	sp_spool_writer_free(r->spool);
	for (size_t i = 0; i < r->nprocs; i++) {
		sp_process_release(r->procs[i]);
		free(r->procs[i]);
	}
	free(r->procs);
	sp_modfile_cache_release(&r->files);
	for (size_t i = 0; i < r->nroots; i++)
		if (r->pidfds[i] >= 0)
			close(r->pidfds[i]);
	free(r->roots);
	free(r->pidfds);
	sp_map_release(&r->proc_index);
	sp_map_release(&r->opened_tids);
	sp_map_release(&r->sample_origin);
	sp_map_release(&r->root_index);
	sp_map_release(&r->comm_index);
	sp_map_release(&r->stack_cache);
	free(r->stack_keys);
	free(r->key_words);
	free(r->comms);
	free(r->root_chains);
	for (size_t i = 0; i < r->nkept; i++)
		close(r->kept_fds[i]);
	free(r->kept_pids);
	free(r->kept_fds);
	free(r);
}
