/* SPDX-License-Identifier: MIT */
/* Processes whose Python or JIT functions will have no names: no perf map when they ended. */
#include "formats/formats.h"
#include "record/record.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* Whether p maps a file whose name is base ("libjvm.so", "node"). */
static bool maps_file(const struct sp_process *p, const char *base)
{
	size_t bl = strlen(base);
	for (size_t i = 0; i < p->nmods; i++) {
		const struct sp_modfile *f = p->mods[i].file;
		size_t n;
		const char *name = f && f->path ? sp_path_name_span(f->path, &n) : NULL;
		if (name && n == bl && !memcmp(name, base, bl))
			return true;
	}
	return false;
}

/*
 * A map last written well before p's exec (seen while recording) was left by
 * an earlier process with its pid, as the report judges it
 * (sp_perf_map_stale): p wrote none.
 */
static bool left_before_exec(const struct sp_process *p, const struct stat *st)
{
	uint64_t written_us =
		(uint64_t)st->st_mtim.tv_sec * 1000000u + (uint64_t)st->st_mtim.tv_nsec / 1000u;
	return sp_perf_map_stale(written_us, p->exec_seen_us);
}

/* A JVM asked to write its map at exit, still running: the map comes later. */
static bool dumps_map_at_exit(pid_t pid)
{
	char args[4096];
	size_t n = sp_pid_cmdline(pid, args, sizeof(args));
	for (size_t i = 0; i < n; i += strlen(args + i) + 1)
		if (!strcmp(args + i, "-XX:+DumpPerfMapAtExit"))
			return true;
	return false;
}

/*
 * Decided when the process ends (its map is complete then: a JVM writes it
 * at exit) or the recording does, never per sample.  A map that exists but
 * that the report will not believe (owner, mode) is the report's to say.
 */
void sp_recorder_note_name_hint(struct sp_recorder *r, struct sp_process *p)
{
	if (!p->name_hint_check || p->name_hint_noted)
		return;
	p->name_hint_noted = true;
	enum sp_name_hint kind;
	if (p->is_python)
		kind = SP_NAME_HINT_PYTHON;
	else if (maps_file(p, "libjvm.so"))
		kind = SP_NAME_HINT_JVM;
	else if (maps_file(p, "node"))
		kind = SP_NAME_HINT_NODE;
	else
		return;
	/* JIT code only once a stack went through it, and a jitdump names it. */
	if (kind != SP_NAME_HINT_PYTHON && (!p->jit || sp_jit_code_has_jitdump(p->jit)))
		return;
	char path[64];
	struct stat st;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)p->pid);
	if (!lstat(path, &st) && S_ISREG(st.st_mode) && !left_before_exec(p, &st))
		return;
	if (kind == SP_NAME_HINT_JVM && !p->exited && dumps_map_at_exit(p->pid))
		return;
	if (!r->summary.no_perf_map[kind]++)
		r->summary.no_perf_map_pid[kind] = p->pid;
}
