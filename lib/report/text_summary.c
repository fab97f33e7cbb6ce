/* SPDX-License-Identifier: MIT */
/* The summary a recording prints when it ends: what was written, at what cost, and why stacks ended. */
#include "report/views.h"

#include <inttypes.h>
#include <string.h>

void sp_summary_write_text(const struct sp_summary *s, const struct sp_summary_text *t, FILE *out)
{
	const struct sp_record_opts *o = t->opts;
	double kib = (double)t->spool_bytes / 1024.0;
	uint64_t n = s->samples ? s->samples : 1;
	char per_sample[32] = "no samples", rate[48];
	if (s->samples)
		snprintf(per_sample, sizeof(per_sample), "%.1f bytes/sample",
			 kib * 1024.0 / (double)n);
	if (o->period)
		snprintf(rate, sizeof(rate), "every %" PRIu64 " %s", o->period,
			 sp_event_counts_time(t->source) ? "ns" : "events");
	else
		snprintf(rate, sizeof(rate), "at %u Hz", sp_record_opts_frequency(o));
	/* With --off-cpu, context-switch samples are sample events too: their stacks are the intervals'. */
	const char *switches = t->off_cpu && s->sample_events > s->samples
				       ? "; the others context switches, their stacks the intervals'"
				       : "";
	/*
	 * A flight recorder writes its window's samples, but counts empty and
	 * truncated stacks over the whole run: their share is of every sample
	 * taken, not of the window's.
	 */
	uint64_t of = t->samples_taken ? t->samples_taken : n;
	fprintf(out,
		"stackpulse %s: wrote '%s' (%.1f KiB, %s) in %.1f s, %s %s\n"
		"  %" PRIu64 " samples written (of %" PRIu64 " sample events%s), %" PRIu64
		" lost, %" PRIu64 " empty stacks, %" PRIu64 " truncated stacks (%.1f%%%s)\n",
		t->subcommand, t->spool_path, kib, per_sample, t->elapsed_s, sp_event_name(t->source), rate,
		s->samples,
		s->sample_events, switches, s->lost_events, s->empty_stack_samples,
		s->truncated_frame_markers, 100.0 * (double)s->truncated_frame_markers / (double)of,
		t->samples_taken ? " of all samples taken" : "");
	if (t->off_cpu)
		fprintf(out, "  %" PRIu64 " off-CPU interval%s written, %" PRIu64 " incomplete (cut by"
			     " the recording's ends or lost records)\n", t->offcpu_intervals,
			t->offcpu_intervals == 1 ? "" : "s", t->offcpu_incomplete);
	/*
	 * The recorder's own CPU (draining, unwinding, writing) and peak resident
	 * memory (the perf rings are locked kernel pages it does not count), not
	 * the target's.
	 */
	if (t->cpu_s >= 0) {
		double cpu = t->cpu_s, peak = t->peak_mib;
		/* top's display (symbolizing, counting, drawing) runs in the same process */
		const char *who = t->with_display ? "CPU (recording and display)" : "recorder CPU";
		uint64_t taken = t->samples_taken ? t->samples_taken : s->samples;
		if (taken)
			fprintf(out, "  %s %.3f s (%.1f us per sample), %.1f MiB peak\n", who,
				cpu, cpu * 1e6 / (double)taken, peak);
		else
			fprintf(out, "  %s %.3f s, %.1f MiB peak\n", who, cpu, peak);
	}
	/* The skip counters, named only when something was skipped. */
	const struct {
		const char *what;
		uint64_t n;
	} skipped[] = {
		{"without pid/tid", s->missing_pid_samples + s->missing_tid_samples},
		{"of the idle task", s->idle_tid_samples},
		{"without timestamp", s->missing_timestamp_samples},
	};
	for (size_t i = 0; i < sizeof(skipped) / sizeof(skipped[0]); i++)
		if (skipped[i].n)
			fprintf(out, "  %" PRIu64 " samples %s\n", skipped[i].n, skipped[i].what);
	if (sp_summary_error_total(s)) {
		fprintf(out, "  why stacks ended early or samples were skipped:\n");
		for (unsigned i = 0; i < SP_STOP_COUNT_; i++)
			if (i != SP_STOP_ROOT && s->stop_reasons[i])
				fprintf(out, "    %-18s %10" PRIu64 "  %s\n", sp_stop_reason_name(i),
					s->stop_reasons[i], sp_stop_reason_text(i));
		for (unsigned i = 0; i < SP_ERR_COUNT_; i++)
			if (s->error_stats[i])
				fprintf(out, "    %-18s %10" PRIu64 "  %s\n", sp_error_kind_name(i),
					s->error_stats[i], sp_error_kind_text(i));
	}
	if (s->lost_events)
		fprintf(out, "  %" PRIu64 " samples were lost: %s or lower --stack-size%s\n",
			s->lost_events, o->period ? "raise -c's period" : "lower -F",
			t->realtime ? "" : ", or drain faster with --realtime (as root)");
	if (s->spliced_stacks)
		fprintf(out, "  %" PRIu64 " of those stacks %s continued with the kernel's "
				"frame-pointer chain where both chains met\n",
			s->spliced_stacks, s->spliced_stacks == 1 ? "was" : "were");
	if (s->exec_samples)
		fprintf(out, "  %" PRIu64 " sample%s taken while execve replaced the image: the "
				"calling program's frame alone (its callers left with the old image)\n",
			s->exec_samples, s->exec_samples == 1 ? "" : "s");
	if (s->jitdump_frames)
		fprintf(out, "  %" PRIu64 " frame%s of JIT code %s unwound with the unwinding "
				"information its runtime wrote into %s\n",
			s->jitdump_frames, s->jitdump_frames == 1 ? "" : "s",
			s->jitdump_frames == 1 ? "was" : "were",
			s->jitdumps == 1 ? "a jitdump" : "jitdumps");
	if (s->container_perf_maps)
		fprintf(out, "  %" PRIu64 " frame%s of JIT or Python code named from the perf map%s of %" PRIu64
				" process%s in containers (kept in the spool: their /tmp goes with them)\n",
			s->container_perf_map_frames, s->container_perf_map_frames == 1 ? "" : "s",
			s->container_perf_maps == 1 ? "" : "s", s->container_perf_maps,
			s->container_perf_maps == 1 ? "" : "es");
	if (s->container_perf_maps_missing)
		fprintf(out, "  %" PRIu64 " process%s in containers running JIT code or Python had no "
				"perf map to trust in the container's /tmp (perf-NSPID.map, NSPID its pid "
				"there): its JIT frames stay addresses; start Python with -X perf, Node with "
				"--perf-basic-prof\n",
			s->container_perf_maps_missing, s->container_perf_maps_missing == 1 ? "" : "es");
	for (unsigned k = 0; k < SP_NAME_HINT_COUNT_; k++) {
		char tail[80];
		if (!s->no_perf_map[k])
			continue;
		if (s->no_perf_map[k] == 1)
			snprintf(tail, sizeof(tail), " (pid %" PRId32 ")", s->no_perf_map_pid[k]);
		else
			snprintf(tail, sizeof(tail), " (%" PRIu64 " processes, the first pid %" PRId32 ")",
				 s->no_perf_map[k], s->no_perf_map_pid[k]);
		sp_name_hint_write(k, "  hint: ", "        ", tail, out);
	}
	if (t->system_wide)
		fprintf(out, "  system-wide%s%s: %" PRIu64 " sample%s of kernel threads and idle "
				"CPUs; %" PRIu64 " process%s already running read from /proc at "
				"%s first sample\n",
			t->cpu_list ? ", CPUs " : "", t->cpu_list ? t->cpu_list : "",
			s->kernel_task_samples, s->kernel_task_samples == 1 ? "" : "s",
			s->processes_discovered, s->processes_discovered == 1 ? "" : "es",
			s->processes_discovered == 1 ? "its" : "their");
	if (s->processes_from_start_list)
		fprintf(out, "  %" PRIu64 " process%s had exited before %s first sample was drained: "
				"%s modules and name came from the list of /proc made at the start (a "
				"child forked since: its parent's)\n",
			s->processes_from_start_list, s->processes_from_start_list == 1 ? "" : "es",
			s->processes_from_start_list == 1 ? "its" : "their",
			s->processes_from_start_list == 1 ? "its" : "their");
	if (s->processes_unread)
		fprintf(out, "  %" PRIu64 " sample%s of %" PRIu64 " process%s that exited before %s "
				"maps could be read: %s frames are addresses\n",
			s->unread_samples, s->unread_samples == 1 ? "" : "s", s->processes_unread,
			s->processes_unread == 1 ? "" : "es", s->processes_unread == 1 ? "its" : "their",
			s->unread_samples == 1 ? "its" : "their");
	if (t->cpu_list && !t->system_wide)
		fprintf(out, "  sampled only on CPUs %s (-C): time the targets ran on other CPUs "
				"is not counted\n", t->cpu_list);
	if (s->processes_forgotten)
		fprintf(out, "  %" PRIu64 " process%s gone for good %s forgotten and %" PRIu64
				" module file%s no process mapped any more closed, to bound memory\n",
			s->processes_forgotten, s->processes_forgotten == 1 ? "" : "es",
			s->processes_forgotten == 1 ? "was" : "were", s->files_closed,
			s->files_closed == 1 ? "" : "s");
	if (s->fp_frames)
		fprintf(out, "  %" PRIu64 " frame%s in code without unwind tables %s found by "
				"frame pointers, kept where the stack reached its root\n",
			s->fp_frames, s->fp_frames == 1 ? "" : "s", s->fp_frames == 1 ? "was" : "were");
	/* A denial was said once when recording started; only "on" is news here. */
	if (o->include_kernel && s->kernel_enabled && t->counts_kernel_time)
		fprintf(out, "  kernel frames on\n");
	unsigned copied = sp_record_opts_stack_size(o);
	/* Only where the whole copy was used: a copy ending at the stack's top is no hint. */
	if (s->stacks_cut_by_copy && copied < SP_MAX_SAMPLE_USER_STACK)
		fprintf(out, "  %" PRIu64 " stack%s deeper than the copied %u bytes %s cut: raise "
				"--stack-size (up to %u)\n", s->stacks_cut_by_copy,
			s->stacks_cut_by_copy == 1 ? "" : "s", copied,
			s->stacks_cut_by_copy == 1 ? "was" : "were", SP_MAX_SAMPLE_USER_STACK);
	else if (s->stacks_cut_by_copy)
		fprintf(out, "  stacks deeper than %u bytes (the kernel's largest copy) were "
				"cut; frame pointers (-fno-omit-frame-pointer) let them go on\n",
			copied);
}
