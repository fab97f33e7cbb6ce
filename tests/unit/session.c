/* SPDX-License-Identifier: MIT */
/* The recording session (lib/record/session.c) on tests/workloads/chain4: ends, hooks, stop policy. */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "stackpulse.h"

#define CHAIN4 "tests/workloads/chain4"

static char spool_path[64];

static void make_path(void)
{
	snprintf(spool_path, sizeof(spool_path), "/tmp/sp-session-test-%d.spool", (int)getpid());
	if (access(CHAIN4, X_OK))
		cr_skip_test("%s is not built (make workloads)", CHAIN4);
}

static void drop_path(void)
{
	unlink(spool_path);
}

struct seen {
	int started, drained, finished;
	int notices[8];
	bool finished_before_exit; /* the command was still running in finished */
	pid_t pid;
	int stop_after; /* drained calls before asking to stop, 0: never */
};

static int on_started(void *ctx, struct sp_recorder *rec)
{
	struct seen *s = ctx;
	cr_assert_not_null(rec);
	s->started++;
	return 0;
}

static int on_drained(void *ctx, struct sp_recorder *rec, uint64_t now_ns)
{
	struct seen *s = ctx;
	cr_assert_gt(now_ns, 0);
	s->drained++;
	return s->stop_after && s->drained >= s->stop_after;
}

static void on_finished(void *ctx, struct sp_recorder *rec, const struct sp_session_result *res)
{
	struct seen *s = ctx;
	s->finished++;
	s->finished_before_exit = !res->command_exited && res->command_pid > 0 &&
				  kill(res->command_pid, 0) == 0;
}

static void on_notice(void *ctx, enum sp_session_notice what, pid_t pid, int err)
{
	struct seen *s = ctx;
	if ((unsigned)what < 8)
		s->notices[what]++;
}

static struct sp_session_opts chain4_opts(char **argv, struct seen *s)
{
	struct sp_session_opts o = {
		.spool_path = spool_path,
		.command = argv,
		.hooks = {s, on_started, on_drained, on_finished, on_notice},
	};
	return o;
}

Test(session, records_a_command_until_it_exits, .init = make_path, .fini = drop_path)
{
	char *argv[] = {CHAIN4, "-t", "1", NULL};
	struct seen s = {0};
	struct sp_session_opts o = chain4_opts(argv, &s);
	struct sp_session_result res;
	int err = sp_session_run(&o, &res);
	cr_assert_eq(err, 0, "%s", sp_strerror(err));
	cr_assert_eq(res.end, SP_SESSION_TARGET_EXITED);
	cr_assert(res.command_exited);
	cr_assert_eq(res.exit_status, 0);
	cr_assert_eq(res.error, 0);
	cr_assert_gt(res.summary.samples, 100, "%lu samples", (unsigned long)res.summary.samples);
	cr_assert_gt(res.elapsed_ns, 500000000ull);
	cr_assert_eq(s.started, 1);
	cr_assert_gt(s.drained, 0);
	cr_assert_eq(s.finished, 1);
	/* the spool is finished: it opens, with the samples the summary counts */
	struct sp_spool *sp;
	cr_assert_eq(sp_spool_open(spool_path, &sp), 0);
	cr_assert_eq(sp_spool_sample_count(sp), res.summary.samples);
	sp_spool_free(sp);
}

Test(session, deadline_ends_the_command_with_sigterm, .init = make_path, .fini = drop_path)
{
	char *argv[] = {CHAIN4, "-t", "30", NULL};
	struct seen s = {0};
	struct sp_session_opts o = chain4_opts(argv, &s);
	o.duration_ns = 300000000ull;
	struct sp_session_result res;
	cr_assert_eq(sp_session_run(&o, &res), 0);
	cr_assert_eq(res.end, SP_SESSION_DEADLINE);
	cr_assert(s.finished_before_exit, "finished comes before the command is stopped");
	cr_assert(res.command_ended_by_stop);
	cr_assert(WIFSIGNALED(res.command_status) && WTERMSIG(res.command_status) == SIGTERM);
	cr_assert_eq(res.exit_status, 0, "ended by the deadline: success");
}

Test(session, a_stop_request_ends_draining, .init = make_path, .fini = drop_path)
{
	char *argv[] = {CHAIN4, "-t", "30", NULL};
	struct seen s = {0};
	struct sp_session_opts o = chain4_opts(argv, &s);
	static volatile sig_atomic_t stops = 1; /* as a handler would have counted it */
	o.stop_requests = &stops;
	struct sp_session_result res;
	cr_assert_eq(sp_session_run(&o, &res), 0);
	cr_assert_eq(res.end, SP_SESSION_STOP_REQUESTED);
	cr_assert_eq(s.drained, 0);
	cr_assert(!res.command_ended_by_stop, "a stop request is no deadline");
	cr_assert_eq(res.exit_status, 128 + SIGTERM);
}

Test(session, the_drained_hook_stops, .init = make_path, .fini = drop_path)
{
	char *argv[] = {CHAIN4, "-t", "30", NULL};
	struct seen s = {.stop_after = 3};
	struct sp_session_opts o = chain4_opts(argv, &s);
	struct sp_session_result res;
	cr_assert_eq(sp_session_run(&o, &res), 0);
	cr_assert_eq(res.end, SP_SESSION_HOOK_STOPPED);
	cr_assert_eq(s.drained, 3);
}

static int refuse(void *ctx, struct sp_recorder *rec)
{
	return 42;
}

Test(session, a_started_hook_refusal_is_returned, .init = make_path, .fini = drop_path)
{
	char *argv[] = {CHAIN4, "-t", "30", NULL};
	struct seen s = {0};
	struct sp_session_opts o = chain4_opts(argv, &s);
	o.hooks.started = refuse;
	struct sp_session_result res;
	cr_assert_eq(sp_session_run(&o, &res), 42);
	cr_assert_eq(s.drained, 0);
	cr_assert_eq(s.finished, 0);
}

Test(session, failures_say_where, .init = make_path, .fini = drop_path)
{
	char *missing[] = {"/no/such/program", NULL};
	struct sp_session_opts o = {.spool_path = spool_path, .command = missing};
	struct sp_session_result res;
	int err = sp_session_run(&o, &res);
	cr_assert_lt(err, 0);
	cr_assert_eq(res.failed_stage, SP_SESSION_STAGE_EXEC);
	cr_assert_gt(res.failed_pid, 0);
	unlink(spool_path); /* the finished, empty spool of the command that could not run */

	pid_t gone = 0x7ffffff0;
	struct sp_session_opts p = {.spool_path = spool_path, .pids = &gone, .npids = 1,
				    .attach_mode = SP_ATTACH_ENABLE_THEN_SCAN};
	err = sp_session_run(&p, &res);
	cr_assert_lt(err, 0);
	cr_assert_eq(res.failed_stage, SP_SESSION_STAGE_ATTACH);
	cr_assert_eq(res.failed_pid, gone);
	cr_assert_neq(access(spool_path, F_OK), 0, "no spool is left behind");

	struct sp_session_opts none = {.spool_path = spool_path};
	cr_assert_eq(sp_session_run(&none, &res), -SP_E_BAD_ARG);
	cr_assert_eq(sp_session_run(NULL, &res), -SP_E_BAD_ARG);
}

Test(session, defaults_come_from_one_place)
{
	struct sp_record_opts o = {0};
	cr_assert_eq(sp_record_opts_frequency(&o), SP_DEFAULT_FREQUENCY);
	cr_assert_eq(sp_record_opts_stack_size(&o), SP_DEFAULT_STACK_SIZE);
	o.frequency_hz = 97;
	o.stack_size = 1024;
	cr_assert_eq(sp_record_opts_frequency(&o), 97);
	cr_assert_eq(sp_record_opts_stack_size(&o), 1024);
	o.period = 1000;
	cr_assert_eq(sp_record_opts_frequency(&o), 0, "by period: no frequency");
}
