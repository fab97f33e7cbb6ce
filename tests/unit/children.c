/* SPDX-License-Identifier: MIT */
/* Unit tests for descendant discovery: a real tree, both /proc methods, made-up /proc trees. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

/*
 * The file itself, so the tests can drive its walk over a made-up /proc and
 * force the stat-scan fallback that this kernel (with CONFIG_PROC_CHILDREN)
 * never needs.  The archive's children.o is then never linked in: every
 * symbol it defines is already defined here.
 */
#include "../../lib/record/children.c"

#include <ftw.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>

/* Above PID_MAX_LIMIT (4194304): no process ever has it. */
#define NEVER_A_PID 4194399

/* ---- a real tree: C -> G -> GG, and TC forked by a second thread of C ---- */

struct tree {
	pid_t c, g, gg, tc;
	int hold; /* write end: closing it makes every process of the tree exit */
};

struct tagged {
	char tag;
	pid_t pid;
};

static int hold_pipe[2], report_pipe[2];

/* In a tree process: say who we are, then wait for the hold pipe's EOF. */
static void announce_and_hold(char tag)
{
	struct tagged t = {.tag = tag, .pid = getpid()};
	if (write(report_pipe[1], &t, sizeof(t)) != (ssize_t)sizeof(t))
		_exit(3);
	char c;
	while (read(hold_pipe[0], &c, 1) < 0 && errno == EINTR)
		;
}

/* Children exit on EOF; reaping them keeps the tree's ends clean. */
static void reap_all(void)
{
	while (wait(NULL) > 0 || errno == EINTR)
		;
}

static pid_t fork_holder(char tag, void (*body)(void))
{
	pid_t pid = fork();
	if (pid == 0) {
		close(hold_pipe[1]);
		if (body)
			body();
		announce_and_hold(tag);
		reap_all();
		_exit(0);
	}
	return pid;
}

static void grandchild_body(void)
{
	if (fork_holder('2', NULL) < 0)
		_exit(4);
}

/* A thread of C that forks: its child is listed only in this thread's children file. */
static void *thread_main(void *arg)
{
	if (fork_holder('t', NULL) < 0)
		_exit(5);
	char c;
	while (read(hold_pipe[0], &c, 1) < 0 && errno == EINTR)
		;
	return arg;
}

static void child_body(void)
{
	pthread_t th;
	if (pthread_create(&th, NULL, thread_main, NULL))
		_exit(6);
	if (fork_holder('g', grandchild_body) < 0)
		_exit(7);
	/* main falls through to announce_and_hold, then joins nothing: EOF ends both. */
}

static struct tree make_tree(void)
{
	struct tree t = {0};
	cr_assert_eq(pipe(hold_pipe), 0);
	cr_assert_eq(pipe(report_pipe), 0);
	t.c = fork_holder('c', child_body);
	cr_assert_gt(t.c, 0);
	close(hold_pipe[0]);
	close(report_pipe[1]);
	t.hold = hold_pipe[1];
	for (int i = 0; i < 4; i++) {
		struct pollfd p = {.fd = report_pipe[0], .events = POLLIN};
		cr_assert_eq(poll(&p, 1, 5000), 1, "tree process %d did not report", i);
		struct tagged x;
		cr_assert_eq(read(report_pipe[0], &x, sizeof(x)), (ssize_t)sizeof(x));
		switch (x.tag) {
		case 'c': t.c = x.pid; break;
		case 'g': t.g = x.pid; break;
		case '2': t.gg = x.pid; break;
		case 't': t.tc = x.pid; break;
		default: cr_assert_fail("unknown tag %c", x.tag);
		}
	}
	close(report_pipe[0]);
	cr_assert(t.g > 0 && t.gg > 0 && t.tc > 0);
	return t;
}

static void end_tree(struct tree *t)
{
	close(t->hold);
	int status;
	cr_assert_eq(waitpid(t->c, &status, 0), t->c);
}

static ssize_t index_of(const pid_t *v, size_t n, pid_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == pid)
			return (ssize_t)i;
	return -1;
}

static void expect_tree(const pid_t *v, size_t n, const struct tree *t, const char *how)
{
	cr_expect_eq(n, 3, "%s: %zu descendants", how, n);
	ssize_t g = index_of(v, n, t->g), gg = index_of(v, n, t->gg), tc = index_of(v, n, t->tc);
	cr_expect_geq(g, 0, "%s: grandchild's parent missing", how);
	cr_expect_geq(gg, 0, "%s: grandchild missing", how);
	cr_expect_geq(tc, 0, "%s: the thread's child missing", how);
	cr_expect_eq(index_of(v, n, t->c), -1, "%s: root listed", how);
	/* Breadth-first: depth 1 before depth 2. */
	cr_expect_lt(g, gg, "%s: not breadth-first", how);
	cr_expect_lt(tc, gg, "%s: not breadth-first", how);
}

Test(children, finds_the_whole_tree)
{
	struct tree t = make_tree();
	pid_t *v = NULL;
	size_t n = 0;
	cr_assert_eq(sp_discover_descendants(t.c, &v, &n), 0);
	expect_tree(v, n, &t, "public");
	free(v);

	cr_assert_eq(discover("/proc", t.c, true, &v, &n), 0);
	expect_tree(v, n, &t, "children files");
	free(v);

	cr_assert_eq(discover("/proc", t.c, false, &v, &n), 0);
	expect_tree(v, n, &t, "stat scan");
	free(v);

	/* From this test process: the whole tree, C included. */
	cr_assert_eq(sp_discover_descendants(getpid(), &v, &n), 0);
	cr_expect_geq(index_of(v, n, t.c), 0);
	cr_expect_geq(index_of(v, n, t.gg), 0);
	free(v);
	end_tree(&t);
}

Test(children, leaf_has_none)
{
	struct tree t = make_tree();
	pid_t *v = (pid_t *)&t; /* must be overwritten */
	size_t n = 99;
	cr_assert_eq(sp_discover_descendants(t.gg, &v, &n), 0);
	cr_expect_eq(n, 0);
	cr_expect_null(v);
	cr_assert_eq(discover("/proc", t.tc, false, &v, &n), 0);
	cr_expect_eq(n, 0);
	end_tree(&t);
}

static char proc_state(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[len] = '\0';
	char *p = strrchr(buf, ')');
	return p && p[1] ? p[2] : 0;
}

Test(children, zombies_are_not_listed)
{
	struct tree t = make_tree();
	/* GG dies; G is blocked in read, so GG stays a zombie until the end. */
	cr_assert_eq(kill(t.gg, SIGKILL), 0);
	for (int i = 0; i < 500 && proc_state(t.gg) != 'Z'; i++)
		usleep(10000);
	cr_assert_eq(proc_state(t.gg), 'Z');
	for (int files = 0; files < 2; files++) {
		pid_t *v;
		size_t n;
		cr_assert_eq(discover("/proc", t.c, files, &v, &n), 0);
		cr_expect_eq(n, 2, "%s: %zu descendants", files ? "files" : "scan", n);
		cr_expect_eq(index_of(v, n, t.gg), -1, "zombie listed");
		cr_expect_geq(index_of(v, n, t.g), 0);
		cr_expect_geq(index_of(v, n, t.tc), 0);
		free(v);
	}
	end_tree(&t);
}

Test(children, missing_root_is_no_process)
{
	pid_t *v = NULL;
	size_t n = 7;
	cr_expect_eq(sp_discover_descendants(NEVER_A_PID, &v, &n), -SP_E_NO_PROCESS);
	cr_expect_eq(discover("/proc", NEVER_A_PID, false, &v, &n), -SP_E_NO_PROCESS);
	cr_expect_eq(n, 7, "n changed on failure");
	cr_expect_null(v);

	/* A process that existed a moment ago. */
	pid_t pid = fork();
	if (pid == 0)
		_exit(0);
	cr_assert_eq(waitpid(pid, NULL, 0), pid);
	cr_expect_eq(sp_discover_descendants(pid, &v, &n), -SP_E_NO_PROCESS);
	cr_expect_eq(sp_discover_descendants(0, &v, &n), -SP_E_BAD_ARG);
	cr_expect_eq(sp_discover_descendants(-1, &v, &n), -SP_E_BAD_ARG);
}

/* ---- /proc/PID/stat parsing ------------------------------------------------ */

/* Text inline: parameters are copied into each test's process, where pointers may differ. */
struct stat_case {
	char text[48];
	int err;
	char state;
	pid_t ppid;
};

ParameterizedTestParameters(children, parses_stat)
{
	static struct stat_case cases[] = {
		{"42 (sleep) S 7 42 42 0 -1", 0, 'S', 7},
		{"42 (a b) R 1 0\n", 0, 'R', 1},
		{"42 (x) S 99 (y) Z 3 0", 0, 'Z', 3}, /* comm "x) S 99 (y": the last ')' wins */
		{"42 ()) Z 0 0", 0, 'Z', 0},
		{"42 ((() t 12\n", 0, 't', 12},
		{"42 (no close paren S 7", -SP_E_BAD_ARG, 0, 0},
		{"42 (x)", -SP_E_BAD_ARG, 0, 0},
		{"42 (x) S", -SP_E_BAD_ARG, 0, 0},
		{"42 (x) S x", -SP_E_BAD_ARG, 0, 0},
		{"42 (x) S -5 0", -SP_E_BAD_ARG, 0, 0},
		{"42 (x) S 99999999999 0", -SP_E_BAD_ARG, 0, 0},
		{"", -SP_E_BAD_ARG, 0, 0},
	};
	return cr_make_param_array(struct stat_case, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(struct stat_case *c, children, parses_stat)
{
	char state = 0;
	pid_t ppid = -1;
	int err = parse_stat(c->text, strlen(c->text), &state, &ppid);
	cr_expect_eq(err, c->err, "'%s': %d", c->text, err);
	if (!c->err) {
		cr_expect_eq(state, c->state, "'%s': state %c", c->text, state);
		cr_expect_eq(ppid, c->ppid, "'%s': ppid %d", c->text, (int)ppid);
	}
}

struct flags_case {
	char text[64];
	int err;
	unsigned long flags;
};

ParameterizedTestParameters(children, parses_stat_flags)
{
	static struct flags_case cases[] = {
		{"2 (kthreadd) S 0 0 0 0 -1 2129984 0 0", 0, 2129984},
		{"42 (a) b) R 1 42 42 34816 42 4194560\n", 0, 4194560},
		{"42 (x) S 1 2 3 4 5 6", 0, 6}, /* the line's end after flags */
		{"42 (x) S 1 2 3 4 5", -SP_E_BAD_ARG, 0},
		{"42 (x) S 1 2 3 4 5 -6 0", -SP_E_BAD_ARG, 0},
		{"42 (x) S 1 2 3 4 5 6x 0", -SP_E_BAD_ARG, 0},
		{"42 (x) S 1 2 3 4 5 99999999999999999999999 0", -SP_E_BAD_ARG, 0},
		{"42 no parentheses S 1 2 3 4 5 6", -SP_E_BAD_ARG, 0},
		{"", -SP_E_BAD_ARG, 0},
	};
	return cr_make_param_array(struct flags_case, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(struct flags_case *c, children, parses_stat_flags)
{
	unsigned long flags = 7;
	int err = parse_stat_flags(c->text, strlen(c->text), &flags);
	cr_expect_eq(err, c->err, "'%s': %d", c->text, err);
	cr_expect_eq(flags, c->err ? 7 : c->flags, "'%s': flags %lu", c->text, flags);
}

Test(children, this_process_is_no_kernel_thread)
{
	cr_expect_eq(sp_pid_is_kernel_thread(getpid()), 0);
	cr_expect_eq(sp_pid_is_kernel_thread(NEVER_A_PID), -SP_E_NO_PROCESS);
	cr_expect_eq(sp_pid_is_kernel_thread(0), -SP_E_BAD_ARG);
}

/* ---- made-up /proc trees ----------------------------------------------------- */

static char fake[64];

static void fake_setup(void)
{
	strcpy(fake, "/tmp/sp-children-XXXXXX");
	cr_assert_not_null(mkdtemp(fake));
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void fake_teardown(void)
{
	nftw(fake, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

/* Write text to fake/rel, creating the directories on the way. */
static void put(const char *rel, const char *text)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", fake, rel);
	for (char *p = path + strlen(fake) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f, "%s", path);
	fputs(text, f);
	fclose(f);
}

/* A stat file for pid with comm, state and ppid. */
static void put_stat(pid_t pid, const char *comm, char state, pid_t ppid)
{
	char rel[64], text[256];
	snprintf(rel, sizeof(rel), "%d/stat", (int)pid);
	snprintf(text, sizeof(text), "%d (%s) %c %d %d %d 0 -1 4194560\n", (int)pid, comm, state,
		 (int)ppid, (int)pid, (int)pid);
	put(rel, text);
}

static void put_children(pid_t pid, pid_t tid, const char *list)
{
	char rel[64];
	snprintf(rel, sizeof(rel), "%d/task/%d/children", (int)pid, (int)tid);
	put(rel, list);
}

static void sorted(pid_t *v, size_t n)
{
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
			pid_t x = v[j];
			v[j] = v[j - 1];
			v[j - 1] = x;
		}
}

TestSuite(fake_proc, .init = fake_setup, .fini = fake_teardown);

/*
 * 100 -> 200 (comm with ") S 1 ("), 300 (forked by thread 101 of 100);
 * 200 -> 400 (zombie) -> nothing; 300 -> 500 (comm "x (y) z");
 * 600 is nobody's; "self" and a malformed stat are noise.
 */
static void common_tree(void)
{
	put_stat(100, "root", 'S', 1);
	put_stat(200, "a) S 1 (b", 'R', 100);
	put_stat(300, "t", 'S', 100);
	put_stat(400, "zombie", 'Z', 200);
	put_stat(500, "x (y) z", 'D', 300);
	put_stat(600, "other", 'S', 1);
	put("700/stat", "garbage without parentheses\n");
	put("self/stat", "1 (x) S 100 0\n");
}

Test(fake_proc, kernel_threads_by_their_flags)
{
	put("2/stat", "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0\n"); /* PF_KTHREAD|... */
	put("77/stat", "77 (kworker/0:1-events) I 2 0 0 0 -1 69238880 0 0\n");
	put("100/stat", "100 (x) S 2097152 (y) S 1 100 100 0 -1 4194560 0\n"); /* 2097152 in comm */
	put("200/stat", "200 (bad\n");
	cr_expect_eq(kernel_thread_in(fake, 2), 1);
	cr_expect_eq(kernel_thread_in(fake, 77), 1);
	cr_expect_eq(kernel_thread_in(fake, 100), 0);
	cr_expect_eq(kernel_thread_in(fake, 200), -SP_E_BAD_ARG);
	cr_expect_eq(kernel_thread_in(fake, 300), -SP_E_NO_PROCESS);
}

Test(fake_proc, stat_scan_walks_parent_links)
{
	common_tree();
	pid_t *v;
	size_t n;
	cr_assert_eq(discover(fake, 100, false, &v, &n), 0);
	cr_assert_eq(n, 3, "%zu", n);
	sorted(v, n);
	cr_expect_eq(v[0], 200);
	cr_expect_eq(v[1], 300);
	cr_expect_eq(v[2], 500);
	free(v);
}

Test(fake_proc, children_files_of_every_thread)
{
	common_tree();
	put_children(100, 100, "200 ");
	put_children(100, 101, "300\n");
	put_children(200, 200, "400 ");
	put_children(300, 300, "500 777 "); /* 777: exited, no /proc entry left */
	put_children(500, 500, "");
	pid_t *v;
	size_t n;
	cr_assert_eq(discover(fake, 100, true, &v, &n), 0);
	cr_assert_eq(n, 3, "%zu", n);
	cr_expect_eq(v[0], 200);
	cr_expect_eq(v[1], 300);
	cr_expect_eq(v[2], 500);
	free(v);
}

Test(fake_proc, cycles_end)
{
	/* Pid reuse can make links loop; the walk must end and never list the root. */
	put_stat(10, "a", 'S', 20);
	put_stat(20, "b", 'S', 10);
	put_stat(30, "c", 'S', 30);
	put_children(10, 10, "20 10");
	put_children(20, 20, "10 20 20");
	put_children(30, 30, "30");
	for (int files = 0; files < 2; files++) {
		pid_t *v;
		size_t n;
		cr_assert_eq(discover(fake, 10, files, &v, &n), 0);
		cr_expect_eq(n, 1);
		cr_expect_eq(v[0], 20);
		free(v);
		cr_assert_eq(discover(fake, 30, files, &v, &n), 0);
		cr_expect_eq(n, 0);
	}
}

Test(fake_proc, garbage_children_file_is_cut_off)
{
	put_stat(10, "a", 'S', 1);
	put_stat(20, "b", 'S', 10);
	put_stat(30, "c", 'S', 10);
	put_children(10, 10, "20 x30 30");
	pid_t *v;
	size_t n;
	cr_assert_eq(discover(fake, 10, true, &v, &n), 0);
	cr_expect_eq(n, 1);
	cr_expect_eq(v[0], 20);
	free(v);
}

Test(fake_proc, missing_root)
{
	common_tree();
	pid_t *v;
	size_t n;
	cr_expect_eq(discover(fake, 12345, true, &v, &n), -SP_E_NO_PROCESS);
	cr_expect_eq(discover(fake, 12345, false, &v, &n), -SP_E_NO_PROCESS);
}
