/* SPDX-License-Identifier: MIT */
/* The recording session every front end runs: start, drain until an end, finish, stop the command. */
#include "record/record.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NS_PER_S 1000000000ull
#define NS_PER_MS 1000000ull
/* A launched command gets this long after SIGTERM before SIGKILL. */
#define TERM_GRACE_NS (5 * NS_PER_S)

static int stop_count(const struct sp_session_opts *o)
{
	return o->stop_requests ? (int)*o->stop_requests : 0;
}

static void notice(const struct sp_session_opts *o, enum sp_session_notice what, pid_t pid, int err)
{
	if (o->hooks.notice)
		o->hooks.notice(o->hooks.ctx, what, pid, err);
}

static int failed(struct sp_session_result *res, enum sp_session_stage stage, pid_t pid, int err)
{
	res->failed_stage = stage;
	res->failed_pid = pid;
	return err;
}

/* Every CPU sampled first; a command given with it runs while everything is sampled, and bounds it. */
static int start_system(const struct sp_session_opts *o, struct sp_session_result *res,
			struct sp_recorder **rec, struct sp_launch **launch)
{
	int err = sp_recorder_attach_system(o->spool_path, &o->record, rec);
	if (err)
		return failed(res, SP_SESSION_STAGE_ATTACH, -1, err);
	if (o->command && (err = sp_launch_suspended(o->command, launch)) == 0) {
		res->command_pid = sp_launch_pid(*launch);
		err = sp_launch_start(*launch);
		if (err)
			sp_launch_try_wait(*launch, NULL);
	}
	if (err) {
		sp_recorder_finish(*rec, NULL);
		return failed(res, SP_SESSION_STAGE_EXEC, res->command_pid, err);
	}
	return 0;
}

/* The command waits before execve while its events open; they switch on at its exec. */
static int start_command(const struct sp_session_opts *o, struct sp_session_result *res,
			 struct sp_recorder **rec, struct sp_launch **launch)
{
	int err = sp_launch_suspended(o->command, launch);
	if (err)
		return failed(res, SP_SESSION_STAGE_LAUNCH, -1, err);
	pid_t pid = res->command_pid = sp_launch_pid(*launch);
	err = sp_recorder_attach(pid, o->spool_path, SP_ATTACH_ENABLE_ON_EXEC, &o->record, rec);
	if (err)
		return failed(res, SP_SESSION_STAGE_ATTACH, pid, err);
	err = sp_launch_start(*launch);
	if (err) {
		sp_launch_try_wait(*launch, NULL);
		sp_recorder_finish(*rec, NULL);
		return failed(res, SP_SESSION_STAGE_EXEC, pid, err);
	}
	return 0;
}

/* Running processes: the first attach creates the spool, the rest (and descendants) join it. */
static int start_pids(const struct sp_session_opts *o, struct sp_session_result *res,
		      struct sp_recorder **rec)
{
	enum sp_attach_mode mode = o->attach_mode;
	int err = sp_recorder_attach(o->pids[0], o->spool_path, mode, &o->record, rec);
	if (err)
		return failed(res, SP_SESSION_STAGE_ATTACH, o->pids[0], err);
	for (size_t i = 1; i < o->npids; i++) {
		err = sp_recorder_open_process(*rec, o->pids[i], mode);
		if (err) {
			failed(res, SP_SESSION_STAGE_ATTACH, o->pids[i], err);
			goto half_made;
		}
	}
	for (size_t i = 0; o->descendants && i < o->npids; i++) {
		pid_t *kids = NULL;
		size_t n = 0;
		err = sp_discover_descendants(o->pids[i], &kids, &n);
		if (err) {
			notice(o, SP_SESSION_NOTICE_NO_DESCENDANTS, o->pids[i], err);
			continue;
		}
		for (size_t k = 0; k < n; k++) {
			/* A descendant may exit between the listing and the attach. */
			err = sp_recorder_open_process(*rec, kids[k], mode);
			if (err && err != -SP_E_NO_PROCESS && err != -ESRCH) {
				failed(res, SP_SESSION_STAGE_ATTACH, kids[k], err);
				free(kids);
				goto half_made;
			}
		}
		free(kids);
	}
	return 0;
half_made:
	/*
	 * A half-made recording is no use: leave no spool behind (a segment
	 * directory's partial file goes with its sp_segments; a flight recorder
	 * wrote nothing, its path being only a template).
	 */
	if (!o->record.segments && !o->record.rolling_ns)
		unlink(o->spool_path);
	return err;
}

/*
 * End a launched command still running when recording stopped, as perf does:
 * after a stop request (a terminal's Ctrl-C reached it already) it gets a
 * moment to exit on its own; then SIGTERM; a command still there 5 s later,
 * or one more stop request, gets SIGKILL.  True when our SIGTERM, sent
 * without a stop request (the deadline), ended it.
 */
static bool end_command(const struct sp_session_opts *o, struct sp_launch *launch, pid_t pid,
			int first_stop, int *status)
{
	for (int i = 0; i < 20 && first_stop; i++) {
		if (sp_launch_try_wait(launch, status) == 1)
			return false;
		usleep(10000);
	}
	if (sp_launch_try_wait(launch, status) == 1)
		return false;
	kill(pid, SIGTERM);
	uint64_t kill_at = sp_monotonic_ns() + TERM_GRACE_NS;
	bool killed = false, said = false;
	while (sp_launch_try_wait(launch, status) == 0) {
		uint64_t now = sp_monotonic_ns();
		if (!said && !killed && now >= kill_at - (TERM_GRACE_NS - NS_PER_S)) {
			notice(o, SP_SESSION_NOTICE_TERM_WAIT, pid, 0);
			said = true;
		}
		if (!killed && (stop_count(o) > first_stop || now >= kill_at)) {
			if (now >= kill_at)
				notice(o, SP_SESSION_NOTICE_KILL_SENT, pid, 0);
			kill(pid, SIGKILL);
			killed = true;
		}
		usleep(10000);
	}
	return !first_stop && WIFSIGNALED(*status) && WTERMSIG(*status) == SIGTERM;
}

/* A wait(2) status as a shell gives it: the exit code, or 128+N when killed by signal N. */
static int wait_status_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
}

static int exit_status(const struct sp_session_result *res, bool launched)
{
	if (res->error)
		return 1;
	if (!launched || res->command_ended_by_stop)
		return 0; /* the command ended because the deadline asked for it: that is success */
	return wait_status_code(res->command_status);
}

/* Drain until the target ends, the deadline, a stop request or the hook; says which. */
static enum sp_session_end drain(const struct sp_session_opts *o, struct sp_recorder *rec,
				 struct sp_launch *launch, uint64_t deadline,
				 struct sp_session_result *res)
{
	for (;;) {
		if (stop_count(o))
			return SP_SESSION_STOP_REQUESTED;
		if (launch && sp_launch_try_wait(launch, &res->command_status) == 1) {
			res->command_exited = true;
			return SP_SESSION_TARGET_EXITED;
		}
		if (!launch && !o->system_wide && !sp_recorder_process_is_active(rec, 0))
			return SP_SESSION_TARGET_EXITED;
		uint64_t now = sp_monotonic_ns();
		if (deadline && now >= deadline)
			return SP_SESSION_DEADLINE;
		/* a short duration (-d 0.01) ends on time, not at the next 100 ms wakeup */
		int wait_ms = 100;
		if (deadline && deadline - now < 100 * NS_PER_MS)
			wait_ms = (int)((deadline - now + NS_PER_MS - 1) / NS_PER_MS);
		if (sp_recorder_wait(rec, wait_ms) < 0)
			return SP_SESSION_WAIT_FAILED;
		int err = sp_recorder_consume_available(rec);
		if (err) {
			notice(o, SP_SESSION_NOTICE_DRAIN_FAILED, -1, err);
			return SP_SESSION_DRAIN_FAILED;
		}
		if (o->hooks.drained && o->hooks.drained(o->hooks.ctx, rec, sp_monotonic_ns()))
			return SP_SESSION_HOOK_STOPPED;
	}
}

int sp_session_run(const struct sp_session_opts *o, struct sp_session_result *res)
{
	struct sp_recorder *rec = NULL;
	struct sp_launch *launch = NULL;
	int err;

	if (!res)
		return -SP_E_BAD_ARG;
	memset(res, 0, sizeof(*res));
	res->command_pid = -1;
	res->failed_pid = -1;
	if (!o || !o->spool_path || (!o->command && !o->npids && !o->system_wide) ||
	    (o->npids && !o->pids))
		return -SP_E_BAD_ARG;
	if (o->system_wide)
		err = start_system(o, res, &rec, &launch);
	else if (o->command)
		err = start_command(o, res, &rec, &launch);
	else
		err = start_pids(o, res, &rec);
	if (err)
		goto out;

	uint64_t start = sp_monotonic_ns();
	if (o->hooks.started && (err = o->hooks.started(o->hooks.ctx, rec))) {
		sp_recorder_finish(rec, NULL);
		if (launch)
			end_command(o, launch, res->command_pid, 1, &res->command_status);
		goto out;
	}
	res->end = drain(o, rec, launch, o->duration_ns ? start + o->duration_ns : 0, res);
	/* Stop requests after this one hurry the command along (end_command). */
	int first_stop = stop_count(o);
	res->elapsed_ns = sp_monotonic_ns() - start;
	res->error = sp_recorder_finish(rec, &res->summary);
	if (o->hooks.finished)
		o->hooks.finished(o->hooks.ctx, rec, res);
	if (launch && !res->command_exited)
		res->command_ended_by_stop =
			end_command(o, launch, res->command_pid, first_stop, &res->command_status);
	res->exit_status = exit_status(res, launch != NULL);
out:
	sp_recorder_free(rec);
	sp_launch_free(launch);
	return err;
}
