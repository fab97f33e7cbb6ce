/* SPDX-License-Identifier: MIT */
/* Finding every live descendant of a process through /proc, for recording a process tree. */
#include "record/record.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A pid list that grows by doubling. */
struct pid_list {
	pid_t *v;
	size_t n, cap;
};

static int pid_list_push(struct pid_list *l, pid_t pid)
{
	if (sp_array_reserve((void **)&l->v, &l->cap, l->n + 1, sizeof(*l->v)))
		return -ENOMEM;
	l->v[l->n++] = pid;
	return 0;
}

/* The whole of a small /proc file into b (NUL-terminated, b->len excludes the NUL). */
static int slurp(const char *path, struct sp_buf *b)
{
	b->len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int err = 0;
	for (;;) {
		if ((err = sp_buf_reserve(b, 4096)))
			break;
		ssize_t r = read(fd, b->data + b->len, b->cap - b->len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err = -errno;
			break;
		}
		if (r == 0)
			break;
		b->len += (size_t)r;
	}
	close(fd);
	if (!err)
		b->data[b->len] = '\0';
	return err;
}

/* A decimal pid filling the whole of s (a /proc directory name); 0 if s is not one. */
static pid_t parse_pid(const char *s)
{
	long v = 0;
	if (!*s)
		return 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return 0;
		v = v * 10 + (*s - '0');
		if (v > INT_MAX)
			return 0;
	}
	return (pid_t)v;
}

/*
 * The state letter and ppid of /proc/PID/stat text.  comm sits in parentheses
 * and may itself hold spaces and ')' ("a) S 1 (b"), so the fields start after
 * the last ')' in the line (proc_pid_stat(5)).  -SP_E_BAD_ARG when malformed.
 */
static int parse_stat(const char *text, size_t len, char *state, pid_t *ppid)
{
	const char *close = NULL;
	for (size_t i = len; i > 0; i--) {
		if (text[i - 1] == ')') {
			close = text + i - 1;
			break;
		}
	}
	if (!close || close[1] != ' ' || !close[2] || close[3] != ' ')
		return -SP_E_BAD_ARG;
	char *end;
	errno = 0;
	long p = strtol(close + 4, &end, 10);
	if (errno || end == close + 4 || p < 0 || p > INT_MAX || (*end != ' ' && *end != '\n'))
		return -SP_E_BAD_ARG;
	*state = close[2];
	*ppid = (pid_t)p;
	return 0;
}

/*
 * The flags field of /proc/PID/stat text, the seventh after comm's last ')'
 * (state ppid pgrp session tty_nr tpgid flags, proc_pid_stat(5)).
 * -SP_E_BAD_ARG when malformed.
 */
static int parse_stat_flags(const char *text, size_t len, unsigned long *flags)
{
	const char *p = NULL;
	for (size_t i = len; i > 0 && !p; i--)
		if (text[i - 1] == ')')
			p = text + i;
	for (int field = 0; p && field < 6; field++) {
		if (*p != ' ')
			return -SP_E_BAD_ARG;
		p += 1 + strcspn(p + 1, " \n");
	}
	if (!p || *p != ' ' || p[1] < '0' || p[1] > '9')
		return -SP_E_BAD_ARG;
	char *end;
	errno = 0;
	unsigned long v = strtoul(p + 1, &end, 10);
	if (errno || (*end != ' ' && *end != '\n' && *end))
		return -SP_E_BAD_ARG;
	*flags = v;
	return 0;
}

/* Zombies (and the dead) have no threads to sample and keep no children. */
static bool is_dead_state(char state)
{
	return state == 'Z' || state == 'X' || state == 'x';
}

/* 1 when PID's stat says it runs, 0 when it is a zombie or gone, -errno otherwise. */
static int stat_alive(const char *proc, pid_t pid, struct sp_buf *b)
{
	char path[PATH_MAX];
	char state;
	pid_t ppid;
	snprintf(path, sizeof(path), "%s/%d/stat", proc, (int)pid);
	int err = slurp(path, b);
	if (err == -ENOENT || err == -ESRCH)
		return 0;
	if (err)
		return err;
	if (parse_stat((const char *)b->data, b->len, &state, &ppid))
		return 0;
	return !is_dead_state(state);
}

/* Queue pid unless it was seen before: pid reuse can make the parent links cycle. */
static int visit(struct sp_map *seen, struct pid_list *queue, pid_t pid)
{
	uint32_t dummy;
	if (pid <= 0 || sp_map_get(seen, (uint64_t)pid, &dummy))
		return 0;
	int err = sp_map_put(seen, (uint64_t)pid, 0);
	return err ? err : pid_list_push(queue, pid);
}

/*
 * Queue the children of pid listed in every thread's children file: a child's
 * parent is the thread that forked it, so the leader's file alone misses
 * children of other threads.  A process that exits meanwhile has no children
 * left to find, so its vanishing files are not an error.
 */
static int queue_children(const char *proc, pid_t pid, struct sp_map *seen,
			  struct pid_list *queue, struct sp_buf *b)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%d/task", proc, (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return errno == ENOENT || errno == ESRCH ? 0 : -errno;
	int err = 0;
	struct dirent *de;
	while (!err && (de = readdir(d))) {
		pid_t tid = parse_pid(de->d_name);
		if (!tid)
			continue;
		snprintf(path, sizeof(path), "%s/%d/task/%d/children", proc, (int)pid, (int)tid);
		int r = slurp(path, b);
		if (r == -ENOENT || r == -ESRCH)
			continue;
		if (r) {
			err = r;
			break;
		}
		char *p = (char *)b->data, *end;
		for (;;) {
			while (*p == ' ' || *p == '\n')
				p++;
			if (!*p)
				break;
			errno = 0;
			long child = strtol(p, &end, 10);
			if (end == p || errno || child <= 0 || child > INT_MAX)
				break; /* not a pid list: ignore the rest */
			p = end;
			if ((err = visit(seen, queue, (pid_t)child)))
				break;
		}
	}
	closedir(d);
	return err;
}

/* A (parent, child) link from one /proc/PID/stat. */
struct link {
	pid_t ppid, pid;
};

static int by_ppid(const void *pa, const void *pb)
{
	const struct link *a = pa, *b = pb;
	if (a->ppid != b->ppid)
		return a->ppid < b->ppid ? -1 : 1;
	return (a->pid > b->pid) - (a->pid < b->pid);
}

/*
 * Every live process's parent from one pass over /proc/PID/stat, sorted by
 * parent.  stat's ppid is the parent process (thread group), whichever of its
 * threads forked, so one pass covers what every thread's children file would.
 */
static int read_links(const char *proc, struct link **out, size_t *n, struct sp_buf *b)
{
	DIR *d = opendir(proc);
	if (!d)
		return -errno;
	struct link *v = NULL;
	size_t len = 0, cap = 0;
	int err = 0;
	struct dirent *de;
	char path[PATH_MAX];
	while ((de = readdir(d))) {
		pid_t pid = parse_pid(de->d_name);
		if (!pid)
			continue;
		snprintf(path, sizeof(path), "%s/%d/stat", proc, (int)pid);
		char state;
		pid_t ppid;
		if (slurp(path, b) || parse_stat((const char *)b->data, b->len, &state, &ppid))
			continue; /* exited during the scan, or not readable: not a descendant now */
		if (is_dead_state(state) || ppid <= 0)
			continue;
		if (sp_array_reserve((void **)&v, &cap, len + 1, sizeof(*v))) {
			err = -ENOMEM;
			break;
		}
		v[len++] = (struct link){.ppid = ppid, .pid = pid};
	}
	closedir(d);
	if (err) {
		free(v);
		return err;
	}
	qsort(v, len, sizeof(*v), by_ppid);
	*out = v;
	*n = len;
	return 0;
}

/* Queue the children of pid from the sorted links (binary search to the first). */
static int queue_linked(const struct link *links, size_t nlinks, pid_t pid, struct sp_map *seen,
			struct pid_list *queue)
{
	size_t lo = sp_partition_point(nlinks, i, links[i].ppid < pid);
	int err = 0;
	for (size_t i = lo; !err && i < nlinks && links[i].ppid == pid; i++)
		err = visit(seen, queue, links[i].pid);
	return err;
}

/*
 * The walk over a /proc tree at proc (a parameter so tests can give a made-up
 * one).  children_files picks the per-thread children files, else the stat scan.
 */
static int discover(const char *proc, pid_t root, bool children_files, pid_t **out, size_t *n)
{
	char path[PATH_MAX];
	struct stat st;
	if (root <= 0 || !out || !n)
		return -SP_E_BAD_ARG;
	snprintf(path, sizeof(path), "%s/%d", proc, (int)root);
	if (stat(path, &st))
		return errno == ENOENT || errno == ESRCH ? -SP_E_NO_PROCESS : -errno;

	struct sp_map seen;
	struct pid_list queue = {0};
	struct sp_buf b;
	struct link *links = NULL;
	size_t nlinks = 0;
	int err;
	sp_map_init(&seen);
	sp_buf_init(&b);
	/* The root is queue[0]; marking it seen keeps a cycle from listing it. */
	if ((err = visit(&seen, &queue, root)))
		goto out;
	if (!children_files && (err = read_links(proc, &links, &nlinks, &b)))
		goto out;

	/* Breadth-first; the seen set bounds it by the number of distinct pids. */
	size_t kept = 1;
	for (size_t i = 0; i < queue.n; i++) {
		pid_t pid = queue.v[i];
		if (i > 0 && children_files) {
			/* A zombie or a process gone meanwhile is neither listed nor walked. */
			int alive = stat_alive(proc, pid, &b);
			if (alive < 0) {
				err = alive;
				goto out;
			}
			if (!alive)
				continue;
		}
		if (i > 0)
			queue.v[kept++] = pid; /* compacts in place: kept <= i */
		err = children_files ? queue_children(proc, pid, &seen, &queue, &b)
				     : queue_linked(links, nlinks, pid, &seen, &queue);
		if (err)
			goto out;
	}
	*n = kept - 1;
	if (*n == 0) {
		*out = NULL;
	} else {
		memmove(queue.v, queue.v + 1, *n * sizeof(*queue.v));
		*out = queue.v;
		queue.v = NULL;
	}
out:
	free(queue.v);
	free(links);
	sp_buf_release(&b);
	sp_map_release(&seen);
	return err;
}

/*
 * Without CONFIG_PROC_CHILDREN the children files do not exist at all; our
 * own thread's file is the one that certainly would, so it decides.
 */
static bool have_children_files(void)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)gettid());
	return access(path, R_OK) == 0;
}

int sp_discover_descendants(pid_t root, pid_t **out, size_t *n)
{
	return discover("/proc", root, have_children_files(), out, n);
}

/*
 * PF_KTHREAD from the kernel's include/linux/sched.h, set on every kernel
 * thread since 2.6.27 (the flags field of stat).  /proc/PID/status says
 * "Kthread: 1" only from 6.3, and an empty cmdline is also a zombie's or a
 * process's that cleared it.
 */
#define PF_KTHREAD 0x00200000ul

static int kernel_thread_in(const char *proc, pid_t pid)
{
	char path[PATH_MAX];
	struct sp_buf b;
	unsigned long flags;
	if (pid <= 0)
		return -SP_E_BAD_ARG;
	snprintf(path, sizeof(path), "%s/%d/stat", proc, (int)pid);
	sp_buf_init(&b);
	int err = slurp(path, &b);
	if (err == -ENOENT || err == -ESRCH)
		err = -SP_E_NO_PROCESS;
	else if (!err)
		err = parse_stat_flags((const char *)b.data, b.len, &flags);
	sp_buf_release(&b);
	return err ? err : (flags & PF_KTHREAD) != 0;
}

int sp_pid_is_kernel_thread(pid_t pid)
{
	return kernel_thread_in("/proc", pid);
}
