/* SPDX-License-Identifier: MIT */
/*
 * lib/record/: the recorder (private, not installed).
 *
 * Owns: perf_event_open events and their rings (perf_event.c), decoding of
 * the kernel's records (perf_record.c), user registers (perf_regs.c), the
 * process and module state the records build (process.c, module_files.c), the
 * recorder: its dispatch of drained records (recorder.c), attaching and its
 * lifecycle (attach.c), the process table and /proc maps (proc_maps.c), the
 * sample path that unwinds each sample and writes it (sample.c), callchain
 * splicing and thread roots (callchain.c), the stack-key cache
 * (stack_cache.c), thread names (thread_names.c), eviction of processes gone
 * and images replaced while recording (images.c), a tail of the spool given
 * those images (tail_images.c), container perf maps (container_perf_maps.c);
 * launching a command (launch.c), the liveness of attached processes
 * (liveness.c) and their children (children.c), and the recording session
 * every front end runs (session.c).
 * May call: unwind, spool, symbols (naming replaced images at record end:
 * sp_symbolize_images) and util.  Never report.
 */
#ifndef SP_RECORD_H
#define SP_RECORD_H

#include "unwind/unwind.h"

#include <linux/perf_event.h>

/* ---- user registers (perf_regs.c) -------------------------------------- */

/*
 * Where each value of a sample's user register array (sample_regs_user order)
 * goes among the DWARF registers, worked out once per mask.
 */
struct sp_regs_map {
	uint32_t valid;    /* DWARF registers the mask holds */
	uint8_t n;         /* values in a sample: popcount(mask) */
	int8_t dwarf[64];  /* value i -> DWARF number, -1 for a register never unwound */
};
void sp_regs_map_init(struct sp_regs_map *m, uint64_t mask);
/* A sample's register values to DWARF numbering through m; absent registers read 0. */
void sp_regs_from_map(const struct sp_regs_map *m, const uint64_t *perf_regs, struct sp_regs *out);
/* The same for one sample with its mask (tests, fuzzing): the map built on the way. */
void sp_regs_from_perf(const uint64_t *perf_regs, uint64_t mask, struct sp_regs *out);
/* The sample_regs_user mask the recorder asks for. */
uint64_t sp_perf_regs_mask(void);

/* ---- perf record decoding (perf_record.c) ------------------------------ */

/* What the records of our events carry, from perf_event_attr. */
struct sp_perf_layout {
	uint64_t sample_type;      /* PERF_SAMPLE_* bits */
	uint64_t sample_regs_user; /* register mask */
	unsigned nregs;            /* popcount(sample_regs_user) */
	bool sample_id_all;
	struct sp_regs_map regs_map; /* sample_regs_user's values to DWARF registers */
};

void sp_perf_layout_init(struct sp_perf_layout *l, uint64_t sample_type, uint64_t regs_mask,
			 bool sample_id_all);

/* A decoded PERF_RECORD_SAMPLE.  Pointers borrow the record's bytes. */
struct sp_perf_sample {
	uint64_t ip;
	uint32_t pid, tid;
	uint64_t time;
	uint32_t cpu;
	uint64_t nr_callchain;
	const uint64_t *callchain; /* nr_callchain entries, may be unaligned-safe copy */
	uint64_t regs_abi;         /* PERF_SAMPLE_REGS_ABI_*; 0 = no user regs */
	const uint64_t *regs;      /* nregs values in mask bit order */
	uint64_t stack_size;       /* bytes reserved in the record */
	const uint8_t *stack;
	uint64_t dyn_size;         /* bytes the kernel actually copied (<= stack_size) */
	uint64_t id;               /* PERF_SAMPLE_IDENTIFIER: an inherited event gives its parent's */
	uint64_t period;           /* PERF_SAMPLE_PERIOD: events this sample stands for; 0 if absent */
	bool has_tid, has_time, has_id;
};

/* Side-band records: the trailing sample_id (pid, tid, time) when sample_id_all. */
struct sp_perf_sample_id {
	uint32_t pid, tid;
	uint64_t time;
	bool has_time;
};

struct sp_perf_mmap2 {
	uint32_t pid, tid;
	uint64_t addr, len, pgoff;
	uint32_t maj, min;
	uint64_t ino, ino_generation;
	uint32_t prot, flags;
	const char *filename; /* NUL-terminated inside the record (checked) */
};

struct sp_perf_comm {
	uint32_t pid, tid;
	const char *comm;
	bool exec; /* PERF_RECORD_MISC_COMM_EXEC */
};

struct sp_perf_task { /* FORK and EXIT */
	uint32_t pid, ppid, tid, ptid;
	uint64_t time;
};

struct sp_perf_lost {
	uint64_t id, lost;
};

/*
 * Decoders over one record's bytes (header included, len = header.size).
 * All sizes and counts are validated against len first: a malformed record
 * returns -SP_E_RING_CORRUPT and nothing is read out of bounds.  The record
 * must be 8-byte aligned (the ring copy guarantees it).
 */
/*
 * The unused tail of a sample's user stack copy, [*lo, *hi) in the record of
 * len bytes read from two pieces (a, alen bytes; then b), so that a record
 * wrapping the ring is copied without it.  False when there is none or the
 * record's fields do not add up.
 */
bool sp_perf_sample_stack_hole(const struct sp_perf_layout *l, const uint8_t *a, size_t alen,
			       const uint8_t *b, size_t len, size_t *lo, size_t *hi);
int sp_perf_parse_sample(const struct sp_perf_layout *l, const void *rec, size_t len,
			 struct sp_perf_sample *out);
int sp_perf_parse_sample_id(const struct sp_perf_layout *l, const void *rec, size_t len,
			    struct sp_perf_sample_id *out);
int sp_perf_parse_mmap2(const void *rec, size_t len, struct sp_perf_mmap2 *out);
int sp_perf_parse_comm(const void *rec, size_t len, struct sp_perf_comm *out);
int sp_perf_parse_task(const void *rec, size_t len, struct sp_perf_task *out);
int sp_perf_parse_lost(const void *rec, size_t len, struct sp_perf_lost *out);
/* Timestamp of any record: the sample's time or the sample_id trailer's.  0 or error. */
int sp_perf_record_time(const struct sp_perf_layout *l, const void *rec, size_t len,
			uint64_t *time);

/* ---- perf events and rings (perf_event.c) ------------------------------ */

/* One mmap'd ring per CPU; every event on that CPU writes into it (SET_OUTPUT). */
struct sp_ring {
	int fd;             /* the ring's owning event */
	int cpu;
	uint8_t *base;      /* header page + data pages */
	size_t data_size;   /* bytes, a power of two */
	uint64_t tail;      /* consumer position while draining */
	uint64_t head;      /* producer snapshot for this drain */
};

struct sp_events {
	struct perf_event_attr attr;
	struct sp_perf_layout layout;
	enum sp_event_source source;
	bool source_fixed;  /* the first open settled cycles vs cpu-clock */
	bool source_chosen; /* the event was named (opts->event): no fallback */
	bool system_wide;   /* events per CPU for every process (pid -1) */
	bool kernel_enabled; /* kernel samples and callchains are on */
	bool kernel_denied;  /* kernel-mode sampling refused: time in the kernel is not counted */
	int ncpus;
	int *cpus;
	struct sp_ring *rings;  /* ncpus entries; fd -1 until the first event */
	int *fds;
	size_t nfds, fds_cap;
	int epfd;
	size_t ring_pages;  /* data pages per ring */
	uint64_t bytes_per_s; /* ring bytes one CPU fills at the full sample rate */
	size_t page_size;
	uint8_t *scratch;   /* per ring, a record that wraps the ring end is copied here */
	size_t scratch_size; /* bytes per ring slot */
	bool ids;            /* samples carry PERF_SAMPLE_IDENTIFIER */
	struct sp_map id_tid; /* with ids: event id (PERF_EVENT_IOC_ID) -> the tid it was opened for */
	/*
	 * The side band: a dummy event beside each sampling event, with mapping
	 * records only and a wakeup for each, into a small ring per CPU, so the
	 * recorder opens a new module's file while its process still lives (a
	 * short-lived program deleted at exit).  Best effort: where it cannot be
	 * opened or mapped, recording goes on without it.
	 */
	struct perf_event_attr side_attr;
	struct sp_ring *side_rings; /* ncpus entries; fd -1 until the first side event */
	/*
	 * record --off-cpu (offcpu.c): the sampling event also writes switch
	 * records, and beside it a context-switches event sampling every
	 * switch-out (cs_attr, the same sample layout, into the same ring)
	 * gives the stack; its samples are told apart by their event ids.
	 */
	bool off_cpu;
	struct perf_event_attr cs_attr;
	struct sp_map cs_ids; /* ids of the context-switches events */
};

/*
 * Prepare attributes for opts's event (by frequency, or every opts->period
 * events), system-wide or per task, with user registers and a user
 * stack copy of opts->stack_size bytes, side-band records, CLOCK_MONOTONIC
 * timestamps.  Checks the frequency against perf_event_max_sample_rate.
 */
int sp_events_init(struct sp_events *e, const struct sp_record_opts *opts, bool enable_on_exec,
		   bool ids, bool system_wide);
/* Open the event for task tid on every CPU (cycles, else cpu-clock).  -errno. */
int sp_events_open_task(struct sp_events *e, pid_t tid);
/*
 * Open the event for every process on each CPU (pid -1), with its side
 * band; sp_events_init must have had a system-wide opts.  -errno.
 */
int sp_events_open_cpus(struct sp_events *e);
/* Enable the events opened since the nfds count was `from` (0: all). */
int sp_events_enable(struct sp_events *e, size_t from);
void sp_events_disable(struct sp_events *e);
/* epoll_wait on the rings: 1 ready, 0 timeout, -errno. */
int sp_events_wait(struct sp_events *e, int timeout_ms);
/* True when some ring holds unread bytes. */
bool sp_events_pending(const struct sp_events *e);
/*
 * Visit every record now in the rings in timestamp order (k-way merge of the
 * per-CPU rings).  rec is 8-byte aligned and valid during the call.  A
 * malformed header skips the rest of that ring and counts in *corrupt.
 */
typedef void (*sp_record_fn)(void *ctx, const struct perf_event_header *rec, size_t len);
int sp_events_drain(struct sp_events *e, sp_record_fn fn, void *ctx, uint64_t *corrupt);
/* Visit every record now in the side-band rings (mapping records), ring by ring. */
void sp_events_drain_side(struct sp_events *e, sp_record_fn fn, void *ctx, uint64_t *corrupt);
void sp_events_release(struct sp_events *e);

/* ---- process and module state (process.c, module_files.c) -------------------- */

/* One backing file, opened once and shared by every mapping of it. */
struct sp_modfile {
	uint64_t dev, ino;
	int fd;
	Elf *elf;
	void *image;            /* in-memory image ([vdso]), owned */
	struct sp_elf_info info;
	bool info_ok;
	uint64_t size;
	int64_t mtime_ns;
	struct sp_cfi_table *cfi;
	bool cfi_tried;
	struct sp_inflate_stats inflate; /* compressed sections the table left compressed */
	/*
	 * Same build-id seen first, or, without build-ids, an open file of the
	 * same bytes (sp_modfile_get): share its table.
	 */
	struct sp_modfile *cfi_owner;
	/*
	 * Without a build-id: 1 + the id of the first module record of its
	 * group of files of the same bytes (kept by the group's first file, the
	 * cfi_owner of the others), 0 before one is written.
	 */
	uint32_t first_module;
	char *path;             /* the mapping's path as first seen, owned */
	bool in_use;            /* sp_modfile_cache_evict: a live process maps it */
};

/* A module as a process sees it: a range, the spool's module id, its file. */
struct sp_proc_module {
	uint64_t start, end;
	uint64_t file_offset;
	uint32_t module_id;
	struct sp_modfile *file; /* NULL for anonymous code */
	struct sp_unwind_module um;
};

/* Every module file a recording has opened, found by (dev, ino) (lib/record/module_files.c). */
struct sp_modfile_cache {
	struct sp_map file_index;     /* hash(dev, ino) -> index into files */
	struct sp_map build_id_index; /* hash(build-id) -> first file with it */
	struct sp_modfile **files;
	size_t nfiles, files_cap;
	uint64_t unreadable;          /* files that could not be opened or parsed */
	uint64_t same_bytes_read;     /* bytes read comparing files, SP_SAME_BYTES_RUN_MAX at most */
};

void sp_modfile_cache_init(struct sp_modfile_cache *c);
/*
 * Free every file whose in_use the caller left false (no process maps it,
 * and no file in use shares its CFI table), except those whose .debug_frame
 * was left compressed (kept for the summary).  Pointers to the files freed
 * must be gone already.  Returns how many were freed.
 */
size_t sp_modfile_cache_evict(struct sp_modfile_cache *c);
void sp_modfile_cache_release(struct sp_modfile_cache *c);
/*
 * The file behind an executable mapping of pid, opened on first use: the
 * reported path when its inode matches, else /proc/PID/map_files/START-END
 * (deleted or replaced files); "[vdso]" is read from our own vdso.  NULL only
 * when out of memory; a file that cannot be read has info_ok false.  A file
 * without a build-id is compared with the open files of its size that have
 * none (SP_SAME_BYTES_MAX at most, SP_SAME_BYTES_RUN_MAX read in all): the
 * first that holds the same bytes becomes its cfi_owner.
 */
struct sp_modfile *sp_modfile_get(struct sp_modfile_cache *c, pid_t pid, uint64_t start,
				  uint64_t end, uint64_t dev, uint64_t ino, const char *path);
/* Files compared byte for byte at most this big; the candidates compared per new file. */
#define SP_SAME_BYTES_MAX (256ull << 20)
#define SP_SAME_BYTES_CANDIDATES 4
/*
 * All comparisons of a recording together read at most this much: a target
 * mapping many large files of one size that differ only at their ends would
 * otherwise keep the recorder reading instead of draining (past it, copies
 * stay apart in the report, as files with different bytes do).
 */
#define SP_SAME_BYTES_RUN_MAX (2ull << 30)
/* The file's rule table, compiled on first use and shared by files of one build-id. */
struct sp_cfi_table *sp_modfile_cfi(struct sp_modfile *f);
/*
 * True when f's path no longer names the image f holds open: the file was
 * deleted or replaced (renamed over) since it was mapped.
 */
bool sp_modfile_replaced(const struct sp_modfile *f);


#define SP_PROC_RECENT 4

struct sp_process {
	pid_t pid;
	struct sp_jit_code *jit; /* created on the first frame in anonymous code */
	struct sp_proc_module *mods; /* sorted by start, non-overlapping */
	size_t nmods, cap;
	bool exited;
	uint64_t exited_ns; /* CLOCK_MONOTONIC when its exit record was drained */
	bool is_python;
	/*
	 * Runs JIT code or a Python runtime: in a container its perf map is
	 * looked for (then kept open) on its samples, every 0.2 s
	 * while missing, SP_PERF_MAP_TRIES times at most.
	 */
	bool perf_map_wanted;
	uint8_t perf_map_tries;
	uint64_t perf_map_next_ns;
	/*
	 * Sampled while running Python or JIT code, outside a container: whether
	 * its functions had a perf map is looked at once, when it exits or the
	 * recording ends (sp_recorder_note_name_hint; noted says it was).
	 */
	bool name_hint_check, name_hint_noted;
	uint64_t exec_seen_us; /* CLOCK_REALTIME (µs) when its exec record was drained, 0 when none */
	/*
	 * Its modules are known: from its exec or a known parent's fork, or its
	 * /proc/PID/maps once read.  A system-wide recording reads the maps of
	 * a process it did not see start at the first sample it drains.
	 */
	bool maps_known;
	/*
	 * System-wide: gone before its first sample was drained, with neither
	 * /proc nor the start's snapshot to give its modules; its samples are
	 * counted (sp_summary's unread_samples).
	 */
	bool maps_lost;
	int32_t ppid;   /* the parent a fork record named, 0 when none was seen */
	bool uid_known; /* uid holds the effective uid the spool last recorded */
	uint32_t uid;
	/*
	 * Indexes of the modules found last, most recent first (checked before
	 * use): a stack's frames keep to a few modules (a program, its runtime's
	 * library, libc), found again sample after sample without a search.
	 */
	uint32_t recent[SP_PROC_RECENT];
	uint64_t gen; /* changes whenever the module set changes (unique across processes) */
	/*
	 * The modules before its last exec, kept until a sample's pc lies in the
	 * new image: samples taken while execve runs carry the old image's pc.
	 */
	struct sp_proc_module *pre_exec;
	size_t npre_exec;
};

/* Insert a mapping; older mappings it overlaps are trimmed (an mmap replaces). */
int sp_process_add_module(struct sp_process *p, const struct sp_proc_module *m);
/* The module containing pc, or NULL. */
struct sp_proc_module *sp_process_find(struct sp_process *p, uint64_t pc);
int sp_process_copy_modules(struct sp_process *dst, const struct sp_process *src);
void sp_process_clear_modules(struct sp_process *p);
/* An exec: the modules move to p->pre_exec (the ones an earlier exec left are dropped). */
void sp_process_begin_exec(struct sp_process *p);
/* The pre-exec module containing pc, or NULL. */
struct sp_proc_module *sp_process_find_pre_exec(const struct sp_process *p, uint64_t pc);
/* The new image runs: the pre-exec modules are dropped. */
void sp_process_end_exec(struct sp_process *p);
void sp_process_release(struct sp_process *p);


/* ---- the recorder (recorder.c and the files named below) ----------------- */

#define SP_RECORD_MAX_FRAMES 1024
#define SP_ROOT_CHAIN_MAX 16 /* root-end frames remembered per thread */

/* Thread names (comm) by (pid, tid), so a forked task inherits its parent's (thread_names.c). */
struct sp_task_comm {
	char name[16]; /* as the kernel gives it (TASK_COMM_LEN) */
	bool written;  /* the spool has it */
};

struct sp_thread_names {
	struct sp_map index; /* (pid << 32 | tid) -> index into comms */
	struct sp_task_comm *comms;
	size_t n, cap;
	/* the name found last: comms[hint] is hint_key's while hint < n (sp_thread_names_filter
	 * moves names and forgets it) */
	size_t hint;
	uint64_t hint_key;
};

void sp_thread_names_init(struct sp_thread_names *t);
void sp_thread_names_release(struct sp_thread_names *t);
struct sp_task_comm *sp_thread_names_find(struct sp_thread_names *t, uint32_t pid, uint32_t tid);
/* Remember (pid, tid)'s name; written says the spool already has it.  Out of memory: unnamed. */
void sp_thread_names_remember(struct sp_thread_names *t, uint32_t pid, uint32_t tid,
			      const char *name, bool written);
/*
 * Keep the names for which keep(ctx, pid, tid, &written) is true (it may
 * clear written: the spool must name the thread again); out of memory, all.
 */
void sp_thread_names_filter(struct sp_thread_names *t,
			    bool (*keep)(void *ctx, uint32_t pid, uint32_t tid, bool *written),
			    void *ctx);
/*
 * (pid, tid)'s name from /proc (pid 0, the idle task: "[idle]"), not yet in
 * the spool; false, nothing remembered, when /proc has none (gone).
 */
bool sp_thread_names_discover(struct sp_thread_names *t, uint32_t pid, uint32_t tid);

/*
 * Stacks seen before (stack_cache.c): the same key (process, its module
 * generation, kernel and user return addresses, the end marker) gives the
 * stack id interned the first time, without interning its frames again.
 */
struct sp_stack_cache {
	struct sp_map map; /* key hash -> index into keys */
	struct sp_stack_key *keys;
	size_t nkeys, keys_cap;
	uint64_t *words; /* every key's words, back to back */
	size_t nwords, words_cap;
};

void sp_stack_cache_init(struct sp_stack_cache *c);
void sp_stack_cache_release(struct sp_stack_cache *c);
/* The hash of key words w[0..n). */
uint64_t sp_stack_cache_hash(const uint64_t *w, size_t n);
/* The stack id cached for key[0..n) with hash h, or false. */
bool sp_stack_cache_find(const struct sp_stack_cache *c, const uint64_t *key, size_t n, uint64_t h,
			 uint32_t *stack_id);
/* Remember key -> stack_id; out of memory or past the cap only means no caching. */
void sp_stack_cache_put(struct sp_stack_cache *c, const uint64_t *key, size_t n, uint64_t h,
			uint32_t stack_id);

/* The root end of each thread's last complete stack (callchain.c). */
struct sp_root_chain {
	uint32_t n;
	uint64_t pcs[SP_ROOT_CHAIN_MAX]; /* outermost frames last */
};

struct sp_root_chains {
	struct sp_map index; /* tid -> index into chains */
	struct sp_root_chain *chains;
	size_t n, cap;
	/* the chain found last: chains[hint] is hint_tid's while hint < n (chains never move) */
	size_t hint;
	uint32_t hint_tid;
};

void sp_root_chains_init(struct sp_root_chains *c);
void sp_root_chains_release(struct sp_root_chains *c);
/* Remember the root end of tid's complete stack pcs[0..n). */
void sp_root_chains_remember(struct sp_root_chains *c, uint32_t tid, const uint64_t *pcs, size_t n);
void sp_root_chains_forget(struct sp_root_chains *c, uint32_t tid);
/*
 * Complete a spliced stack pcs[0..*n) (room for SP_RECORD_MAX_FRAMES) from
 * tid's remembered root end; true when the root was reached.
 */
bool sp_root_chains_complete(struct sp_root_chains *c, uint32_t tid, uint64_t *pcs, size_t *n);

/*
 * Split perf's callchain at its context markers: kernel entries into kpcs
 * (at most max) as lookup addresses, the user frame-pointer chain returned in
 * place (*user, *nuser).  Returns the number of kernel entries.
 */
size_t sp_callchain_split(const struct sp_perf_sample *s, uint64_t *kpcs, size_t max,
			  const uint64_t **user, size_t *nuser);
/*
 * When DWARF stopped early after pcs[0..n), continue with the frame-pointer
 * chain user[0..nuser) only from where both chains agree
 * (docs/DESIGN.md, decision 3), stopping at the first address no module of p maps.  Returns
 * the new count; *used says whether frames were added; chain frames not used
 * are added to *ignored.
 */
size_t sp_callchain_splice(uint64_t *pcs, size_t n, struct sp_process *p, const uint64_t *user,
			   size_t nuser, bool *used, uint64_t *ignored);

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
struct sp_held_sample {
	int32_t pid, tid;
	uint64_t time, pc;
	uint64_t period; /* PERF_SAMPLE_PERIOD */
	uint32_t cut, whole; /* stack ids: with the truncation marker, without */
};
#define SP_HELD_MAX 64

struct sp_held_samples {
	struct sp_held_sample s[SP_HELD_MAX];
	size_t n;
};

/* Perf maps of processes in containers, kept open: pid and fd (proc_maps.c). */
struct sp_kept_perf_maps {
	int32_t *pids;
	int *fds;
	size_t n, cap, fds_cap;
};

/* Every process the recording knows, by pid (proc_maps.c). */
struct sp_process_table {
	struct sp_map index; /* pid -> index into all */
	struct sp_process **all;
	size_t n, cap;
	size_t hint; /* index of the process found last (its pid checked: each pid is once in all) */
};

/* Attached roots, watched through pidfds (attach.c). */
struct sp_attached_roots {
	pid_t *pids;
	int *pidfds; /* -1 where pidfd_open failed */
	size_t n;
};

/* One sample's stack, reused from sample to sample (sample.c). */
struct sp_sample_scratch {
	uint64_t pcs[SP_RECORD_MAX_FRAMES];
	uint64_t kpcs[SP_RECORD_MAX_FRAMES];
	uint32_t frame_ids[2 * SP_RECORD_MAX_FRAMES + 1];
	uint64_t key[2 * SP_RECORD_MAX_FRAMES + 5]; /* this sample's stack-cache key */
};

/*
 * Where the last unwind of a thread read its stack (sample.c): the CFAs of
 * its frames (sp_unwind_stats.cfas).  The thread's next sample mostly has
 * the same callers at the same stack addresses, so their return-address
 * slots are prefetched from the new copy before the unwind reads them one
 * after the other: the copy is new memory at every sample, written by the
 * kernel on the target's CPU.  A few threads, by tid.
 */
#define SP_STACK_HINTS 8
struct sp_stack_hint {
	int32_t tid;
	uint32_t n;
	uint64_t cfa[SP_UNWIND_CFAS];
};

struct sp_offcpu_slot;
struct sp_offcpu_state {
	struct sp_offcpu_slot *slots;
	size_t n, cap;
	struct sp_map by_tid; /* tid -> slot */
	uint64_t lost_gen;    /* LOST records so far */
	uint64_t start_ns;    /* the recording's start (the spool header's) */
	/* No kernel sampling: blocked threads' stacks read after each drain (sp_offcpu_read_blocked). */
	uint8_t *stack_buf;
	size_t stack_len;
};

struct sp_recorder {
	struct sp_events events;
	struct sp_spool_writer *spool;
	struct sp_summary summary;
	struct sp_process_table procs;
	struct sp_modfile_cache files;
	struct sp_attached_roots roots;
	struct sp_map opened_tids; /* tids with events opened by attach/refresh */
	/* With event ids: tid -> the tid whose event stream samples it (sample.c) */
	struct sp_map sample_origin;
	struct sp_root_chains root_chains;
	struct sp_stack_cache stacks;
	struct sp_thread_names names;
	struct sp_sample_scratch scratch;
	struct sp_unwind_stats unwind_stats;
	struct sp_stack_hint stack_hints[SP_STACK_HINTS];
	/* The modules the last unwinds went through: the process's whose module set is seen_gen */
	struct sp_unwind_seen seen;
	uint64_t seen_gen;
	int write_error;
	uint64_t last_flush_ns; /* CLOCK_MONOTONIC of the last timed flush */
	uint64_t last_evict_ns; /* of the last sp_recorder_evict_gone pass */
	bool system_wide;       /* sp_recorder_attach_system: every process on the CPUs */
	struct sp_start_snapshot *snapshot; /* system-wide: /proc at the start (start_snapshot.c) */
	char *spool_path;       /* for sp_recorder_tail */
	struct sp_segments *segments; /* record --segments: borrowed (sp_record_opts) */
	bool rolling;                 /* record --rolling: the writer keeps a window */
	char snapshot_path[4096];     /* the last snapshot written */
	struct sp_tail *tail;   /* the tail following the spool, given images as it polls */
	bool finished;
	/* Samples that may have been taken inside an exec, held until it is known (sample.c). */
	struct sp_held_samples held;
	struct sp_kept_perf_maps kept;
	struct sp_offcpu_state offcpu; /* record --off-cpu (offcpu.c) */
	struct {
		uint64_t intervals, incomplete;
	} summary_offcpu;
	uint64_t compactions; /* sp_recorder_compact passes that renumbered */
};

/* offcpu.c: off-CPU intervals from switch records (docs/DESIGN.md, decision 12). */
/* A context-switches sample of (pid, tid): the stack it leaves the CPU with. */
void sp_offcpu_on_stack(struct sp_recorder *r, int32_t pid, int32_t tid, uint32_t stack,
			uint64_t time);
/*
 * Without kernel sampling (docs/DESIGN.md, decision 12), after each drain:
 * each thread switched out and not back yet, with no stack, once per
 * interval (from slot *i on; *i is then its slot); its user SP and PC from
 * /proc/PID/task/TID/syscall while it sleeps in a system call (false when
 * it runs or is runnable); the stack read from them, used if the thread's
 * switch-in comes after done_ns.
 */
/* Without kernel sampling: a CPU sample of (pid, tid), the stack a preemption may catch it in. */
void sp_offcpu_on_cpu_sample(struct sp_recorder *r, int32_t pid, int32_t tid, uint32_t stack);
bool sp_offcpu_next_blocked(struct sp_recorder *r, size_t *i, int32_t *pid, int32_t *tid);
bool sp_offcpu_blocked_regs(int32_t pid, int32_t tid, uint64_t *sp, uint64_t *pc);
void sp_offcpu_read_stack(struct sp_recorder *r, size_t i, uint32_t stack, uint64_t done_ns);
#ifndef SP_OFFCPU_READ_MS
#define SP_OFFCPU_READ_MS 10 /* the longest wait between two drains then */
#endif
/* sample.c: the stack of registers and a stack copy read from the live thread, interned; 0: none. */
struct sp_regs;
uint32_t sp_recorder_stack_from_regs(struct sp_recorder *r, int32_t pid, int32_t tid,
				     const struct sp_regs *regs, const uint8_t *stack, size_t len);
/* A PERF_RECORD_SWITCH or SWITCH_CPU_WIDE record. */
void sp_offcpu_on_switch(struct sp_recorder *r, const struct perf_event_header *h, size_t len);
/* A FORK (fork true) or EXIT record of (pid, tid). */
void sp_offcpu_on_task(struct sp_recorder *r, int32_t pid, int32_t tid, bool fork);
/* Records were lost: an interval open across the loss keeps no time. */
void sp_offcpu_on_lost(struct sp_recorder *r);
/* The recording ends at end_ns: intervals still open are written, cut there. */
void sp_offcpu_finish(struct sp_recorder *r, uint64_t end_ns);
void sp_offcpu_release(struct sp_offcpu_state *o);
/* thread_names.c: the spool's index of thread (pid, tid), interned and named.  0 or -errno. */
int sp_recorder_intern_thread(struct sp_recorder *r, int32_t pid, int32_t tid, uint32_t *thread);

/* How many times a process's container perf map is looked for, 0.2 s apart. */
#define SP_PERF_MAP_TRIES 50

#define SP_NO_ORIGIN UINT32_MAX /* sample_origin of a tid that started or ended anew */

/* A spool write's result: the first error is kept (the drain returns it) and counted once. */
static inline void sp_recorder_note_write(struct sp_recorder *r, int err)
{
	if (err && !r->write_error) {
		r->write_error = err;
		r->summary.error_stats[SP_ERR_SPOOL_WRITE]++;
	}
}

/* proc_maps.c: the process table, modules from mmap records and /proc/PID/maps. */
void sp_process_table_init(struct sp_process_table *t);
/* Frees every process. */
void sp_process_table_release(struct sp_process_table *t);
struct sp_process *sp_process_table_find(struct sp_process_table *t, pid_t pid);
/* The process of pid, made on first sight; a pid seen again after its exit starts anew. */
struct sp_process *sp_process_table_add(struct sp_process_table *t, pid_t pid);
/* Record who p runs as (or from's user, p being gone) when that is new to the spool. */
void sp_recorder_note_owner(struct sp_recorder *r, struct sp_process *p,
			    const struct sp_process *from, uint64_t time);
void sp_recorder_mark_python(struct sp_recorder *r, struct sp_process *p, bool is_python,
			     uint64_t time);
/* A process in a container: open its perf map while it lives and keep it (retried). */
void sp_recorder_keep_perf_map(struct sp_recorder *r, struct sp_process *p, uint64_t now_ns);
/* A mapping of no file: anonymous memory or a kernel-made region other than [vdso]. */
bool sp_anon_path(const char *path);
/* Register an executable mapping of p: module record, then the process's map.  0 or -errno. */
int sp_recorder_add_mapping(struct sp_recorder *r, struct sp_process *p, uint64_t start,
			    uint64_t end, uint64_t pgoff, uint64_t dev, uint64_t ino,
			    const char *path, uint64_t time);
/* Every executable mapping of p from /proc (a live thread's maps once the leader exited). */
int sp_recorder_read_maps(struct sp_recorder *r, struct sp_process *p);
/*
 * Does /proc/PID/maps list code a perf map may name: executable anonymous
 * memory (a JIT) or a Python runtime?  False when it cannot be read.
 */
bool sp_pid_may_have_perf_map(pid_t pid);
/* sp_unwind's module lookup in a struct sp_process (ctx), compiling CFI on first use. */
const struct sp_unwind_module *sp_recorder_find_module(void *ctx, uint64_t pc);
/* System-wide: a process first seen at sample s, its owner and modules from /proc. */
struct sp_process *sp_recorder_discover_process(struct sp_recorder *r,
						const struct sp_perf_sample *s);

/*
 * start_snapshot.c: every process's executable mappings, name and user as
 * /proc gave them when a system-wide recording started (its events on), for
 * a process whose first sample is drained after it exited.  Bounded (32 MiB,
 * 4,096 mappings a process); kernel threads have no entry.  0 or -errno.
 */
struct sp_start_snapshot;
int sp_start_snapshot_take(struct sp_start_snapshot **out);
void sp_start_snapshot_free(struct sp_start_snapshot *s);
/* pid now names a new process (a fork): its entry no longer describes it. */
void sp_start_snapshot_forget(struct sp_start_snapshot *s, pid_t pid);
/* The name pid had (NULL: no entry, s may be NULL); valid while s lives. */
const char *sp_start_snapshot_comm(const struct sp_start_snapshot *s, pid_t pid);
size_t sp_start_snapshot_count(const struct sp_start_snapshot *s);
/*
 * pid's entry: its executable mappings (*n of them; valid while s lives) and
 * its owner (*uid when *uid_known); NULL when it has none (s may be NULL).
 */
const struct sp_proc_maps_line *sp_start_snapshot_find(const struct sp_start_snapshot *s, pid_t pid,
						       size_t *n, uint32_t *uid, bool *uid_known);

/* sample.c: one PERF_RECORD_SAMPLE, unwound and written (or held). */
void sp_recorder_on_sample(struct sp_recorder *r, const void *rec, size_t len);
/*
 * Write the held samples of pid (all pids when pid is -1) or only of tid
 * (tid >= 0): as taken inside an exec (exec) or as cut stacks.
 */
void sp_recorder_release_held(struct sp_recorder *r, int32_t pid, int32_t tid, bool exec);

/*
 * name_hints.c: count p in the summary's no_perf_map (once) when it ran
 * Python or JIT code whose names no perf map in /tmp (nor a jitdump) gives.
 */
void sp_recorder_note_name_hint(struct sp_recorder *r, struct sp_process *p);

/* images.c: forget processes gone for good (at most every 2 s); name replaced images at the end. */
void sp_recorder_evict_gone(struct sp_recorder *r, uint64_t now_ns);
/*
 * compact.c (docs/DESIGN.md, decision 14): an always-on recording's
 * dictionaries, once grown enough, keep only what live processes, held
 * samples, off-CPU slots and a flight recorder's window use; the ids held
 * here are renumbered and the stack cache emptied.  Only between files.
 */
void sp_recorder_compact(struct sp_recorder *r);
/*
 * compact.c: after processes were forgotten or the dictionaries compacted,
 * empty the stack cache (its keys would keep gone processes' stacks, and
 * compaction renumbers stacks) and give freed memory back.
 */
void sp_recorder_trim(struct sp_recorder *r);
/* compact.c: forget the names and off-CPU slots of threads of processes gone (not in the table). */
void sp_recorder_forget_threads(struct sp_recorder *r);
/* offcpu.c, for compaction: forget the slots of gone(pid) threads, keep the others' stacks. */
void sp_offcpu_keep_stacks(struct sp_recorder *r, bool (*gone)(struct sp_recorder *r, int32_t pid));
/* offcpu.c: the slots' stacks under their ids after compaction. */
void sp_offcpu_renumber_stacks(struct sp_recorder *r);
/* A stack id the recorder holds, after a compaction: its new id, 0 for one dropped (offcpu.c). */
uint32_t sp_recorder_compacted_stack(const struct sp_recorder *r, uint32_t stack);
void sp_recorder_store_replaced_images(struct sp_recorder *r);

#endif
