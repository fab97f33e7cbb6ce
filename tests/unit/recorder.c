/* SPDX-License-Identifier: MIT */
/* The recorder's library API on real processes: attach modes, open_process, queries, finish. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "stackpulse.h"

/* A child spinning in user space until killed. */
static pid_t spinner(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		volatile unsigned long x = 0;
		for (;;)
			x = x * 6364136223846793005UL + 1;
	}
	return pid;
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static char spool_path[64];

static void make_path(void)
{
	snprintf(spool_path, sizeof(spool_path), "/tmp/sp-recorder-test-%d.spool", (int)getpid());
}

static void drop_path(void)
{
	unlink(spool_path);
}

static void drain_for(struct sp_recorder *r, int ms)
{
	for (int t = 0; t < ms; t += 50) {
		sp_recorder_wait(r, 50);
		cr_assert_eq(sp_recorder_consume_available(r), 0);
	}
}

Test(recorder, records_two_processes_into_one_spool, .init = make_path, .fini = drop_path)
{
	pid_t a = spinner(), b = spinner();
	struct sp_recorder *r = NULL;
	struct sp_record_opts opts = {.frequency_hz = 499};
	int err = sp_recorder_attach(a, spool_path, SP_ATTACH_STOP_ENABLE_RESUME, &opts, &r);
	cr_assert_eq(err, 0, "attach: %s", sp_strerror(err));
	cr_assert_eq(sp_recorder_open_process(r, b, SP_ATTACH_STOP_ENABLE_RESUME), 0);
	/* Opening the same pid again is a no-op, not a second set of events. */
	cr_assert_eq(sp_recorder_open_process(r, b, SP_ATTACH_STOP_ENABLE_RESUME), 0);
	drain_for(r, 600);

	pid_t alive[4];
	cr_assert_eq(sp_recorder_active_processes(r, alive, 4), 2);
	cr_assert(sp_recorder_has_active_processes_except(r, a));
	reap(b);
	usleep(50000);
	cr_assert(sp_recorder_process_is_active(r, a));
	cr_assert_not(sp_recorder_process_is_active(r, b));
	cr_assert_not(sp_recorder_has_active_processes_except(r, a));
	cr_assert_eq(sp_recorder_active_processes(r, NULL, 0), 1);
	/* No inherit needed for a single-threaded spinner: nothing new to open. */
	cr_assert_eq(sp_recorder_refresh_threads(r, a), 0);

	struct sp_summary s;
	cr_assert_eq(sp_recorder_finish(r, &s), 0);
	sp_recorder_free(r);
	reap(a);
	cr_assert_gt(s.samples, 100, "only %lu samples", (unsigned long)s.samples);
	cr_assert_eq(s.lost_events, 0);

	struct sp_spool *sp;
	cr_assert_eq(sp_spool_open(spool_path, &sp), 0);
	bool seen_a = false, seen_b = false;
	for (size_t i = 0; i < sp_spool_sample_count(sp); i++) {
		const struct sp_thread *t = sp_spool_thread(sp, sp_spool_sample(sp, i)->thread);
		seen_a |= t->pid == a;
		seen_b |= t->pid == b;
	}
	cr_assert(seen_a && seen_b, "samples from a: %d, from b: %d", seen_a, seen_b);
	cr_assert_not_null(sp_spool_summary(sp));
	sp_spool_free(sp);
}

Test(recorder, enable_on_exec_sees_the_command_from_its_start, .init = make_path,
     .fini = drop_path)
{
	char *argv[] = {"sh", "-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done", NULL};
	struct sp_launch *l;
	cr_assert_eq(sp_launch_suspended(argv, &l), 0);
	struct sp_recorder *r = NULL;
	cr_assert_eq(sp_recorder_attach(sp_launch_pid(l), spool_path, SP_ATTACH_ENABLE_ON_EXEC,
					NULL, &r), 0);
	/* Nothing is sampled before the exec. */
	cr_assert_not(sp_recorder_has_pending_events(r));
	cr_assert_eq(sp_launch_start(l), 0);
	int status;
	while (sp_launch_try_wait(l, &status) == 0) {
		sp_recorder_wait(r, 50);
		cr_assert_eq(sp_recorder_consume_available(r), 0);
	}
	struct sp_summary s;
	cr_assert_eq(sp_recorder_finish(r, &s), 0);
	sp_recorder_free(r);
	sp_launch_free(l);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	cr_assert_gt(s.samples, 10);

	/* The exec marker and the shell's modules were recorded. */
	struct sp_spool *sp;
	cr_assert_eq(sp_spool_open(spool_path, &sp), 0);
	cr_assert_geq(sp_spool_exec_count(sp), 1);
	cr_assert_gt(sp_spool_module_count(sp), 1);
	sp_spool_free(sp);
}

Test(recorder, refuses_bad_targets, .init = make_path, .fini = drop_path)
{
	struct sp_recorder *r = NULL;
	cr_assert_eq(sp_recorder_attach(0, spool_path, SP_ATTACH_STOP_ENABLE_RESUME, NULL, &r),
		     -SP_E_BAD_ARG);
	/* A pid past pid_max never exists. */
	cr_assert_eq(sp_recorder_attach(1 << 30, spool_path, SP_ATTACH_STOP_ENABLE_RESUME, NULL, &r),
		     -SP_E_NO_PROCESS);
	cr_assert_eq(access(spool_path, F_OK), -1, "a failed attach leaves no spool");
	struct sp_record_opts fast = {.frequency_hz = sp_max_sample_rate() + 1};
	pid_t a = spinner();
	cr_assert_eq(sp_recorder_attach(a, spool_path, SP_ATTACH_STOP_ENABLE_RESUME, &fast, &r),
		     -SP_E_FREQ_LIMIT);
	reap(a);
}
