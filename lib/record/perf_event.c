/* SPDX-License-Identifier: MIT */
/* Opening sampling events per task and CPU, and draining their rings in time order. */
#include "record/record.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Largest ring per CPU (locked memory: one per online CPU). */
#define RING_MAX_BYTES (16u << 20)
/* Smallest ring map_ring falls back to when the locked-memory limit refuses more. */
#define RING_MIN_BYTES (256u << 10)
#define SIDE_RING_PAGES 16 /* a side-band ring: a few hundred mapping records */
/*
 * Time the drain loop may take to get a CPU after the watermark wakeup before
 * a ring at the full sample rate overflows.  The 10 kHz rings (capped at
 * RING_MAX_BYTES) have 36 ms and lose nothing with two busy threads on two CPUs.
 */
#define DRAIN_HEADROOM_MS 50
/* Cache lines of the next record prefetched by peek: 512 bytes reach past a sample's registers. */
#define NEXT_RECORD_LINES 8

static long perf_event_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group,
			    unsigned long flags)
{
	return syscall(SYS_perf_event_open, attr, pid, cpu, group, flags);
}

uint32_t sp_max_sample_rate(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_max_sample_rate", "r");
	unsigned long v = 0;
	if (!f)
		return 0;
	if (fscanf(f, "%lu", &v) != 1)
		v = 0;
	fclose(f);
	return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/*
 * Without CAP_IPC_LOCK (approximated by root) the kernel lets a user lock
 * kernel.perf_event_mlock_kb per online CPU for rings, plus RLIMIT_MEMLOCK:
 * size the rings to share that budget evenly, rather than let the first CPUs
 * take it all (shrink_rings still handles what this estimate misses).
 */
static void fit_locked_memory(struct sp_events *e)
{
	if (geteuid() == 0)
		return;
	unsigned long mlock_kb = 516;
	FILE *f = fopen("/proc/sys/kernel/perf_event_mlock_kb", "re");
	if (f) {
		if (fscanf(f, "%lu", &mlock_kb) != 1)
			mlock_kb = 516;
		fclose(f);
	}
	struct rlimit rl;
	uint64_t extra = 0;
	if (!getrlimit(RLIMIT_MEMLOCK, &rl))
		extra = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX / 2 : (uint64_t)rl.rlim_cur;
	uint64_t budget = (uint64_t)mlock_kb * 1024 + extra / (uint64_t)(e->ncpus ? e->ncpus : 1);
	while ((e->ring_pages + 1) * e->page_size > budget &&
	       e->ring_pages * e->page_size > RING_MIN_BYTES && e->ring_pages > 1)
		e->ring_pages /= 2;
}

/*
 * Bytes in a ring that wake the drain loop: all but DRAIN_HEADROOM_MS of
 * samples at the full rate (one busy thread per CPU), kept between a quarter
 * and three quarters of the ring.  Each wakeup costs the recorder 20-40 us of
 * CPU on this 2-vCPU VM (a sleep/wake cycle alone is 17 us), so at 999 Hz,
 * where a quarter of the 4 MiB ring is 31 samples, the wakeups were a third
 * of the recorder's CPU: waking at 74 samples took fixed_work's recording
 * (10 s attached) from 3.2-3.4 to 2.1-2.4 us per sample (medians of 3 runs,
 * idle and loaded machine).  A quarter still applies where the headroom
 * needs more (10 kHz), three quarters bound it at slow rates, where the drain
 * loop's timeout comes first anyway.
 */
static void set_watermark(struct sp_events *e)
{
	uint64_t ring = (uint64_t)e->ring_pages * e->page_size;
	uint64_t headroom = e->bytes_per_s * DRAIN_HEADROOM_MS / 1000;
	uint64_t wm = ring > headroom ? ring - headroom : 0;
	if (wm < ring / 4)
		wm = ring / 4;
	if (wm > ring / 4 * 3)
		wm = ring / 4 * 3;
	e->attr.wakeup_watermark = (uint32_t)wm;
}

/* perf_event_open(2)'s type and config of each enum sp_event_source */
static const struct {
	uint32_t type;
	uint64_t config;
} event_attrs[SP_EVENT_COUNT_] = {
	[SP_EVENT_CYCLES] = {PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
	[SP_EVENT_CPU_CLOCK] = {PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK},
	[SP_EVENT_INSTRUCTIONS] = {PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
	[SP_EVENT_CACHE_MISSES] = {PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES},
	[SP_EVENT_BRANCH_MISSES] = {PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES},
	[SP_EVENT_REF_CYCLES] = {PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES},
	[SP_EVENT_TASK_CLOCK] = {PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK},
	[SP_EVENT_PAGE_FAULTS] = {PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS},
	[SP_EVENT_MAJOR_FAULTS] = {PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ},
	[SP_EVENT_CONTEXT_SWITCHES] = {PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES},
	[SP_EVENT_CPU_MIGRATIONS] = {PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS},
};

static void set_source(struct sp_events *e, enum sp_event_source src)
{
	e->source = src;
	e->attr.type = event_attrs[src].type;
	e->attr.config = event_attrs[src].config;
}

/* Keep only the CPUs opts names (perf -C); each must be online. */
static int pick_cpus(struct sp_events *e, const struct sp_record_opts *opts)
{
	if (!opts->cpus)
		return 0;
	int n = 0;
	for (size_t i = 0; i < opts->ncpus; i++) {
		bool online = false, dup = false;
		for (int k = 0; k < e->ncpus; k++)
			online |= e->cpus[k] == opts->cpus[i];
		for (int k = 0; k < n; k++)
			dup |= e->cpus[k] == opts->cpus[i];
		if (!online)
			return -SP_E_BAD_CPU;
		if (!dup)
			e->cpus[n++] = opts->cpus[i];
	}
	if (n == 0)
		return -SP_E_BAD_CPU;
	e->ncpus = n;
	return 0;
}

int sp_events_init(struct sp_events *e, const struct sp_record_opts *opts, bool enable_on_exec,
		   bool ids, bool system_wide)
{
	memset(e, 0, sizeof(*e));
	e->epfd = -1;
	sp_map_init(&e->id_tid);
	sp_map_init(&e->cs_ids);
	/* by period, freq is the rate the rings are sized for (below) */
	uint32_t freq = sp_record_opts_frequency(opts);
	uint32_t stack = sp_record_opts_stack_size(opts);
	uint32_t max_rate = sp_max_sample_rate();
	if (!opts->period && max_rate && freq > max_rate)
		return -SP_E_FREQ_LIMIT;
	/* The kernel wants a multiple of 8 and fits the copy in a u16-sized record. */
	if (stack < 8 || stack > SP_MAX_SAMPLE_USER_STACK || stack % 8)
		return -SP_E_STACK_SIZE;
	enum sp_event_source src = SP_EVENT_CYCLES;
	if (opts->event && sp_event_parse(opts->event, &src))
		return -SP_E_BAD_ARG;
	e->source_chosen = opts->event != NULL;
	e->system_wide = system_wide;

	struct perf_event_attr *a = &e->attr;
	a->size = sizeof(*a);
	set_source(e, src);
	if (opts->period) {
		a->freq = 0;
		a->sample_period = opts->period;
		/*
		 * The ring's sizing below wants a rate.  The clocks' is known; an
		 * event's count may come in bursts (page faults: thousands a
		 * second), so its rings are sized as for 10 kHz.
		 */
		uint64_t hz = sp_event_counts_time(src) ? 1000000000ull / opts->period : 10000;
		freq = hz < 1 ? 1 : hz > 100000 ? 100000 : (uint32_t)hz;
	} else {
		a->freq = 1;
		a->sample_freq = freq;
	}
	/*
	 * The callchain brings kernel frames (-k) and the user frame-pointer
	 * chain that extends stacks deeper than the copy (docs/DESIGN.md, decision 3).
	 */
	a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
			 PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
	/* Each sample's weight: the period the kernel chose (docs/DESIGN.md, decision 12). */
	a->sample_type |= PERF_SAMPLE_PERIOD;
	/* Attaching without a stop: tell an inherited stream from one opened for the thread. */
	if (ids || opts->off_cpu)
		a->sample_type |= PERF_SAMPLE_IDENTIFIER;
	e->ids = ids;
	e->off_cpu = opts->off_cpu;
	/* Switch records: each switch-out with its cause, each switch-in (docs/DESIGN.md, decision 12). */
	a->context_switch = opts->off_cpu;
	a->sample_regs_user = sp_perf_regs_mask();
	a->sample_stack_user = stack;
	/*
	 * Time in system calls is CPU time too: count it whenever the kernel
	 * lets us (the sample then carries the user stack of the syscall),
	 * and add kernel frames only with -k.
	 */
	a->exclude_kernel = 0;
	a->exclude_callchain_kernel = !opts->include_kernel;
	e->kernel_enabled = opts->include_kernel;
	a->exclude_hv = 1;
	/* system-wide, an idle CPU's samples say how idle the machine was */
	a->exclude_idle = !system_wide;
	a->mmap = 1;
	a->mmap2 = 1;
	a->comm = 1;
	a->comm_exec = 1;
	a->task = 1;
	a->sample_id_all = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	/* a CPU's event already sees every task: nothing to inherit */
	a->inherit = !opts->no_inherit && !system_wide;
	a->disabled = 1;
	a->enable_on_exec = enable_on_exec;
	/* Never precise_ip: skid-free IPs with stale registers would mislead the unwinder. */
	a->precise_ip = 0;
	sp_perf_layout_init(&e->layout, a->sample_type, a->sample_regs_user, true);

	/*
	 * A sample reserves the whole requested stack size in the ring even
	 * when the copy is short (33 KiB at the default 32 KiB), and one CPU
	 * running busy threads at 10 kHz fills 330 MB/s.  The drain loop must
	 * get a CPU before the ring is full, and on a machine whose CPUs all run
	 * the target that can take tens of milliseconds (the scheduler lets a
	 * busy thread finish its slice).  So hold ~100 ms of samples per CPU,
	 * at least 32 samples and 256 KiB, at most RING_MAX_BYTES; map_ring
	 * halves the size when the locked-memory limit refuses it.
	 */
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	e->page_size = page;
	size_t per_sample = (size_t)stack + 1024;
	/* --off-cpu: every switch-out is a sample too; size for 10 kHz of them, as a counted event's. */
	if (opts->off_cpu && freq < 10000)
		freq = 10000;
	size_t want = per_sample * (freq / 10 > 32 ? freq / 10 : 32);
	if (want < 256 * 1024)
		want = 256 * 1024;
	if (want > RING_MAX_BYTES)
		want = RING_MAX_BYTES;
	e->ring_pages = 1;
	while (e->ring_pages * page < want)
		e->ring_pages *= 2;
	e->bytes_per_s = (uint64_t)per_sample * freq;
	a->watermark = 1;

	int n = sp_online_cpus(&e->cpus);
	if (n < 0)
		return n;
	e->ncpus = n;
	int err = pick_cpus(e, opts);
	if (err)
		return err;
	n = e->ncpus;
	fit_locked_memory(e);
	set_watermark(e);
	e->rings = calloc((size_t)n, sizeof(*e->rings));
	e->side_rings = calloc((size_t)n, sizeof(*e->side_rings));
	/* One scratch slot per ring: each ring's current record may have wrapped. */
	e->scratch_size = 65536 + 4096;
	e->scratch = malloc(e->scratch_size * (size_t)n);
	if (!e->rings || !e->side_rings || !e->scratch)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		e->rings[i].fd = -1;
		e->rings[i].cpu = e->cpus[i];
		e->side_rings[i].fd = -1;
		e->side_rings[i].cpu = e->cpus[i];
	}
	/* The side band follows the same tasks; it counts nothing and samples nothing. */
	struct perf_event_attr *sa = &e->side_attr;
	sa->size = sizeof(*sa);
	sa->type = PERF_TYPE_SOFTWARE;
	sa->config = PERF_COUNT_SW_DUMMY;
	sa->mmap = 1;
	sa->mmap2 = 1;
	sa->exclude_kernel = 1;
	sa->exclude_hv = 1;
	sa->inherit = a->inherit;
	sa->disabled = 1;
	sa->enable_on_exec = a->enable_on_exec;
	/* a wakeup as soon as one byte is written: every mapping record (as perf's side band) */
	sa->watermark = 1;
	sa->wakeup_watermark = 1;
	/*
	 * --off-cpu: a context-switches event sampling every switch-out, same layout
	 * (docs/DESIGN.md, decision 12).
	 */
	e->cs_attr = *a;
	e->cs_attr.type = PERF_TYPE_SOFTWARE;
	e->cs_attr.config = PERF_COUNT_SW_CONTEXT_SWITCHES;
	e->cs_attr.freq = 0;
	e->cs_attr.sample_period = 1;
	e->cs_attr.context_switch = 0;
	e->cs_attr.mmap = e->cs_attr.mmap2 = e->cs_attr.comm = e->cs_attr.comm_exec = 0;
	e->cs_attr.task = 0;
	e->cs_attr.exclude_idle = 0;
	e->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (e->epfd < 0)
		return -errno;
	return 0;
}

static int remember_fd(struct sp_events *e, int fd)
{
	if (sp_array_reserve((void **)&e->fds, &e->fds_cap, e->nfds + 1,
			     sizeof(*e->fds)))
		return -ENOMEM;
	e->fds[e->nfds++] = fd;
	return 0;
}

/* Map the ring of fd, its first event: a header page and pages data pages. */
static int map_ring(struct sp_events *e, struct sp_ring *r, int fd, size_t pages)
{
	size_t len = (pages + 1) * e->page_size;
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	r->fd = fd;
	r->base = p;
	r->data_size = pages * e->page_size;
	return 0;
}

/*
 * Halve the ring size after the kernel refused to map it (err): locked memory
 * for rings is limited for users without CAP_IPC_LOCK (perf_event_mlock_kb per
 * CPU, then RLIMIT_MEMLOCK).  False when it cannot shrink further.
 */
static bool shrink_rings(struct sp_events *e, int err)
{
	if ((err != -EPERM && err != -ENOMEM) || e->ring_pages * e->page_size <= RING_MIN_BYTES ||
	    e->ring_pages == 1)
		return false;
	e->ring_pages /= 2;
	set_watermark(e);
	return true;
}

/*
 * Every event is watched, not only a ring's owner: the kernel wakes all the
 * events attached to a ring, and the owner's thread may exit first (its fd
 * then reports EPOLLHUP and is dropped, see sp_events_wait).
 */
static int watch_fd(struct sp_events *e, int fd)
{
	struct epoll_event ev = {.events = EPOLLIN, .data = {.u64 = (uint64_t)(uint32_t)fd}};
	return epoll_ctl(e->epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

/* Errors that mean "no such hardware event here", so cpu-clock is worth a try. */
static bool hardware_unavailable(int err)
{
	return err == ENOENT || err == EOPNOTSUPP || err == ENODEV || err == EINVAL ||
	       err == ENOSYS;
}

static int open_one(struct sp_events *e, pid_t tid, int cpu)
{
	for (;;) {
		long fd = perf_event_open(&e->attr, tid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd >= 0) {
			e->source_fixed = true;
			return (int)fd;
		}
		int err = errno;
		/*
		 * perf_event_paranoid >= 2 denies kernel sampling to unprivileged
		 * users while allowing their own user space: go on user-only.
		 */
		if ((err == EACCES || err == EPERM) && !e->attr.exclude_kernel && !e->source_fixed) {
			e->attr.exclude_kernel = 1;
			e->attr.exclude_callchain_kernel = 1;
			e->kernel_enabled = false;
			e->kernel_denied = true;
			continue;
		}
		if (!e->source_fixed && e->attr.type == PERF_TYPE_HARDWARE &&
		    hardware_unavailable(err)) {
			/* a named event is what the user asked for: say it is missing */
			if (e->source_chosen)
				return -SP_E_NO_HW_EVENT;
			set_source(e, SP_EVENT_CPU_CLOCK);
			continue;
		}
		return -err;
	}
}

/*
 * The side-band event for tid on ring i's CPU (see struct sp_events): its
 * ring is mapped by the first one, the others write into it.  Failures only
 * mean no side band there.
 */
static void open_side(struct sp_events *e, int i, pid_t tid)
{
	struct sp_ring *r = &e->side_rings[i];
	long fd = perf_event_open(&e->side_attr, tid, r->cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return;
	/* remembered first, so every fd kept (a ring's owner too) is closed at release */
	if (remember_fd(e, (int)fd)) {
		close((int)fd);
		return;
	}
	if (r->fd < 0 ? map_ring(e, r, (int)fd, SIDE_RING_PAGES)
		      : ioctl((int)fd, PERF_EVENT_IOC_SET_OUTPUT, r->fd))
		return; /* stays in fds, closed at release; no side band from it */
	watch_fd(e, (int)fd);
}

/*
 * --off-cpu: the context-switches event for tid on ring r's CPU, writing
 * into r, its id noted.  The kernel samples a switch in kernel mode, so
 * where kernel sampling is denied (perf_event_paranoid 2) it would never
 * fire and is not opened: intervals then come without stacks.  Failures
 * only mean no stacks there.
 */
static void open_switch_sampler(struct sp_events *e, pid_t tid, const struct sp_ring *r)
{
	if (e->attr.exclude_kernel)
		return;
	e->cs_attr.exclude_callchain_kernel = e->attr.exclude_callchain_kernel;
	e->cs_attr.inherit = e->attr.inherit;
	e->cs_attr.enable_on_exec = e->attr.enable_on_exec;
	long fd = perf_event_open(&e->cs_attr, tid, r->cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return;
	uint64_t id;
	if (remember_fd(e, (int)fd)) {
		close((int)fd);
		return;
	}
	if (ioctl((int)fd, PERF_EVENT_IOC_SET_OUTPUT, r->fd) || ioctl((int)fd, PERF_EVENT_IOC_ID, &id))
		return; /* stays in fds, closed at release */
	sp_map_put(&e->cs_ids, id, (uint32_t)tid);
}

int sp_events_open_task(struct sp_events *e, pid_t tid)
{
	int opened = 0, last_err = 0;
	for (int i = 0; i < e->ncpus; i++) {
		struct sp_ring *r = &e->rings[i];
		int fd = open_one(e, tid, r->cpu);
		/*
		 * The first event on a CPU maps its ring.  When the size is
		 * refused, reopen the event with the smaller ring's watermark
		 * (the kernel would clamp the old one to "full").
		 */
		while (fd >= 0 && r->fd < 0) {
			int err = map_ring(e, r, fd, e->ring_pages);
			if (!err)
				break;
			close(fd);
			if (!shrink_rings(e, err))
				return err;
			fd = open_one(e, tid, r->cpu);
		}
		if (fd < 0) {
			/* A CPU that went offline is not fatal; anything else is. */
			if (fd == -ENODEV)
				continue;
			return fd;
		}
		int err = remember_fd(e, fd);
		if (!err && r->fd != fd && ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, r->fd))
			err = -errno;
		uint64_t id;
		if (!err && e->ids)
			err = ioctl(fd, PERF_EVENT_IOC_ID, &id) ? -errno
								: sp_map_put(&e->id_tid, id, (uint32_t)tid);
		if (!err)
			err = watch_fd(e, fd);
		if (err) {
			last_err = err;
			break;
		}
		opened++;
		open_side(e, i, tid);
		if (e->off_cpu)
			open_switch_sampler(e, tid, r);
	}
	if (last_err)
		return last_err;
	return opened ? 0 : -SP_E_NO_EVENT;
}

int sp_events_open_cpus(struct sp_events *e)
{
	/* pid -1: each CPU's one event owns its ring, as a task's first does */
	return sp_events_open_task(e, -1);
}

int sp_events_enable(struct sp_events *e, size_t from)
{
	for (size_t i = from; i < e->nfds; i++)
		if (ioctl(e->fds[i], PERF_EVENT_IOC_ENABLE, 0))
			return -errno;
	return 0;
}

void sp_events_disable(struct sp_events *e)
{
	for (size_t i = 0; i < e->nfds; i++)
		ioctl(e->fds[i], PERF_EVENT_IOC_DISABLE, 0);
}

int sp_events_wait(struct sp_events *e, int timeout_ms)
{
	struct epoll_event ev[8];
	int n = epoll_wait(e->epfd, ev, 8, timeout_ms);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	for (int i = 0; i < n; i++) {
		/*
		 * An event reports EPOLLHUP for good once its thread exits
		 * (perf_poll), which would turn this wait into a busy loop.  The
		 * ring lives on for the other events writing into it (SET_OUTPUT)
		 * and they still wake us, so only that fd stops being watched.
		 */
		if (ev[i].events & (EPOLLHUP | EPOLLERR))
			epoll_ctl(e->epfd, EPOLL_CTL_DEL, (int)ev[i].data.u64, NULL);
	}
	return n > 0;
}

static uint64_t ring_head(const struct sp_ring *r)
{
	const struct perf_event_mmap_page *pg = (const void *)r->base;
	return __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
}

bool sp_events_pending(const struct sp_events *e)
{
	for (int i = 0; i < e->ncpus; i++) {
		const struct sp_ring *r = &e->rings[i];
		if (r->fd >= 0 && ring_head(r) != ((const struct perf_event_mmap_page *)(void *)r->base)->data_tail)
			return true;
	}
	return false;
}

/* Bytes [from, to) of a record in two pieces (a, alen bytes; then b) to the same place in dst. */
static void copy_span(uint8_t *dst, const uint8_t *a, size_t alen, const uint8_t *b, size_t from,
		      size_t to)
{
	if (from < alen && from < to) {
		size_t n = (to < alen ? to : alen) - from;
		memcpy(dst + from, a + from, n);
		from += n;
	}
	if (from < to)
		memcpy(dst + from, b + (from - alen), to - from);
}

/*
 * The record at the ring's tail, or NULL when the ring is drained up to its
 * head snapshot.  A record that wraps the end of the ring is copied into
 * scratch so callers always see contiguous, aligned bytes.
 */
static const struct perf_event_header *peek(struct sp_events *e, struct sp_ring *r,
					    uint8_t *scratch, uint64_t *corrupt)
{
	if (r->fd < 0 || r->tail >= r->head)
		return NULL;
	const uint8_t *data = r->base + e->page_size;
	size_t mask = r->data_size - 1;
	size_t off = (size_t)(r->tail & mask);
	struct perf_event_header h;
	/* Headers are 8-byte aligned in the ring and never wrap. */
	memcpy(&h, data + off, sizeof(h));
	if (h.size < sizeof(h) || h.size % 8 || h.size > r->head - r->tail ||
	    h.size > e->scratch_size) {
		(*corrupt)++;
		r->tail = r->head;
		return NULL;
	}
	/*
	 * The next record's first lines (its header, fields, callchain and
	 * registers), asked for while this one is handled: the kernel wrote
	 * them on the target's CPU, and a memory-bound target (xz -9) has
	 * pushed them out of every cache by the time the drain comes.
	 */
	for (size_t k = 0; k < NEXT_RECORD_LINES; k++)
		__builtin_prefetch(data + ((off + h.size + 64 * k) & mask));
	if (off + h.size <= r->data_size)
		return (const void *)(data + off);
	size_t first = r->data_size - off, lo = h.size, hi = h.size;
	/* a sample's unused stack bytes are left out: the parser reads dyn_size of them */
	if (h.type == PERF_RECORD_SAMPLE)
		sp_perf_sample_stack_hole(&e->layout, data + off, first, data, h.size, &lo, &hi);
	copy_span(scratch, data + off, first, data, 0, lo);
	copy_span(scratch, data + off, first, data, hi, h.size);
	return (const void *)scratch;
}

int sp_events_drain(struct sp_events *e, sp_record_fn fn, void *ctx, uint64_t *corrupt)
{
	struct {
		const struct perf_event_header *rec;
		uint64_t time;
	} cur[e->ncpus > 0 ? e->ncpus : 1];
	const size_t slot = e->scratch_size;
	for (int i = 0; i < e->ncpus; i++) {
		struct sp_ring *r = &e->rings[i];
		if (r->fd < 0)
			continue;
		r->head = ring_head(r);
		r->tail = ((struct perf_event_mmap_page *)(void *)r->base)->data_tail;
	}
	for (int i = 0; i < e->ncpus; i++) {
		uint8_t *s = e->scratch + slot * (size_t)i;
		cur[i].rec = peek(e, &e->rings[i], s, corrupt);
		cur[i].time = 0;
		if (cur[i].rec && sp_perf_record_time(&e->layout, cur[i].rec, cur[i].rec->size, &cur[i].time))
			cur[i].time = 0;
	}
	for (;;) {
		int best = -1;
		for (int i = 0; i < e->ncpus; i++)
			if (cur[i].rec && (best < 0 || cur[i].time < cur[best].time))
				best = i;
		if (best < 0)
			break;
		struct sp_ring *r = &e->rings[best];
		fn(ctx, cur[best].rec, cur[best].rec->size);
		r->tail += cur[best].rec->size;
		uint8_t *s = e->scratch + slot * (size_t)best;
		cur[best].rec = peek(e, r, s, corrupt);
		if (cur[best].rec &&
		    sp_perf_record_time(&e->layout, cur[best].rec, cur[best].rec->size, &cur[best].time))
			cur[best].time = 0;
	}
	for (int i = 0; i < e->ncpus; i++) {
		struct sp_ring *r = &e->rings[i];
		if (r->fd < 0)
			continue;
		struct perf_event_mmap_page *pg = (void *)r->base;
		__atomic_store_n(&pg->data_tail, r->tail, __ATOMIC_RELEASE);
	}
	return 0;
}

void sp_events_drain_side(struct sp_events *e, sp_record_fn fn, void *ctx, uint64_t *corrupt)
{
	for (int i = 0; e->side_rings && i < e->ncpus; i++) {
		struct sp_ring *r = &e->side_rings[i];
		if (r->fd < 0)
			continue;
		r->head = ring_head(r);
		r->tail = ((struct perf_event_mmap_page *)(void *)r->base)->data_tail;
		const struct perf_event_header *rec;
		/* the main drain's scratch slot i is free until it runs */
		while ((rec = peek(e, r, e->scratch + e->scratch_size * (size_t)i, corrupt))) {
			fn(ctx, rec, rec->size);
			r->tail += rec->size;
		}
		struct perf_event_mmap_page *pg = (void *)r->base;
		__atomic_store_n(&pg->data_tail, r->tail, __ATOMIC_RELEASE);
	}
}

void sp_events_release(struct sp_events *e)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	for (int i = 0; e->rings && i < e->ncpus; i++)
		if (e->rings[i].base)
			munmap(e->rings[i].base, e->rings[i].data_size + page);
	for (int i = 0; e->side_rings && i < e->ncpus; i++)
		if (e->side_rings[i].base)
			munmap(e->side_rings[i].base, e->side_rings[i].data_size + page);
	for (size_t i = 0; i < e->nfds; i++)
		close(e->fds[i]);
	if (e->epfd >= 0)
		close(e->epfd);
	free(e->rings);
	free(e->side_rings);
	free(e->cpus);
	free(e->fds);
	sp_map_release(&e->id_tid);
	sp_map_release(&e->cs_ids);
	free(e->scratch);
	memset(e, 0, sizeof(*e));
	e->epfd = -1;
}
