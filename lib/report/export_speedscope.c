/* SPDX-License-Identifier: MIT */
/* speedscope export: speedscope's JSON file format, one sampled profile per thread. */
#include "report/export.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define SCHEMA_URL "https://www.speedscope.app/file-format-schema.json"

struct speedscope {
	struct sp_agg *a;
	const struct sp_spool *s;
	bool lines;                /* frames per source line: --lines */
	struct sp_intern frames;   /* "name\0source\0module[\0line]" -> index in shared.frames */
	struct sp_buf frames_json; /* shared.frames, rendered as frames are met */
	size_t *frame_off;         /* by frame id: its text's offset in frame_text, plus one; 0: not yet */
	uint32_t *frame_len;       /* by frame id: its text's length */
	struct sp_buf frame_text;  /* each frame's ",I,J" (its indexes, inlined functions after
				      their caller), back to back */
	struct sp_buf key, text;   /* scratch */
};

/*
 * Index of a frame in shared.frames, added on first use.  Frames are kept
 * apart by name, source file and module, so static functions of the same
 * name in two libraries stay two frames, and with --lines by line too.
 * "file" is the source file when the symbolizer knows it, else the module,
 * which is where the code is.
 */
static int frame_index(struct speedscope *ss, const struct sp_resolved_frame *rf, uint32_t *index)
{
	const char *module = rf->module ? rf->module : "";
	const char *source = rf->file ? rf->file : "";
	const char *file = source[0] ? source : module;
	ss->key.len = 0;
	int err;
	if ((err = sp_buf_append(&ss->key, rf->name, strlen(rf->name) + 1)) ||
	    (err = sp_buf_append(&ss->key, source, strlen(source) + 1)) ||
	    (err = sp_buf_append(&ss->key, module, strlen(module))))
		return err;
	uint32_t line = ss->lines ? rf->line : 0;
	/* A C string holds no NUL: the separator keeps "module" + line apart from any module. */
	if (line && ((err = sp_buf_append(&ss->key, "", 1)) ||
		     (err = sp_buf_append(&ss->key, &line, sizeof(line)))))
		return err;
	bool added;
	if ((err = sp_intern(&ss->frames, ss->key.data, ss->key.len, index, &added)) || !added)
		return err;
	struct sp_buf *b = &ss->frames_json;
	if ((err = sp_buf_append(b, *index ? ",\n{\"name\":" : "{\"name\":", *index ? 10 : 8)) ||
	    (err = sp_json_put_string(b, rf->name)))
		return err;
	if (file[0] && ((err = sp_buf_append(b, ",\"file\":", 8)) ||
			(err = sp_json_put_string(b, file))))
		return err;
	if (line) {
		char num[32];
		int n = snprintf(num, sizeof(num), ",\"line\":%" PRIu32, line);
		if ((err = sp_buf_append(b, num, (size_t)n)))
			return err;
	}
	return sp_buf_append(b, "}", 1);
}

static const struct sp_resolved_frame truncated = {.name = "[truncated]", .module = ""};

/* A spool frame's ",I,J" text of shared.frames indexes, inlined functions after their caller; made once. */
static int frame_text(struct speedscope *ss, uint32_t frame_id, const char **text, size_t *len)
{
	*len = 0;
	if (frame_id >= sp_spool_frame_count(ss->s))
		return 0;
	if (!ss->frame_off[frame_id]) {
		const struct sp_frame *f = sp_spool_frame(ss->s, frame_id);
		const struct sp_resolved_frame *lines = &truncated;
		size_t nlines = 1, start = ss->frame_text.len;
		int err = 0;
		if (f->mode != SP_FRAME_TRUNCATED)
			err = sp_symbolizer_resolve_all(ss->a->sym, frame_id, &lines, &nlines);
		for (size_t j = nlines; !err && j-- > 0;) {
			uint32_t index;
			char num[16];
			if (!(err = frame_index(ss, &lines[j], &index))) {
				int n = snprintf(num, sizeof(num), ",%" PRIu32, index);
				err = sp_buf_append(&ss->frame_text, num, (size_t)n);
			}
		}
		if (!err && ss->frame_text.len - start > UINT32_MAX)
			err = -ENOMEM;
		if (err)
			return err;
		ss->frame_off[frame_id] = start + 1;
		ss->frame_len[frame_id] = (uint32_t)(ss->frame_text.len - start);
	}
	*text = (const char *)ss->frame_text.data + ss->frame_off[frame_id] - 1;
	*len = ss->frame_len[frame_id];
	return 0;
}

/* Stack sid as "[root,...,leaf]" of frame indexes into ss->text. */
static int render_stack(struct speedscope *ss, uint32_t sid)
{
	const uint32_t *fr;
	size_t n = sp_agg_stack_frames(ss->a, sid, &fr);
	int err = 0;
	ss->text.len = 0;
	for (size_t i = n; !err && i-- > 0;) {
		const char *text;
		size_t len;
		if ((err = frame_text(ss, fr[i], &text, &len)))
			break;
		/* Grown by doubling: most frames are a memcpy. */
		if (ss->text.len + len > ss->text.cap &&
		    (err = sp_buf_reserve(&ss->text, len)))
			break;
		memcpy(ss->text.data + ss->text.len, text, len);
		ss->text.len += len;
	}
	if (err)
		return err;
	/* ",a,b" becomes "[a,b": the first frame's comma opens the list. */
	if (ss->text.len)
		ss->text.data[0] = '[';
	else if ((err = sp_buf_append(&ss->text, "[", 1)))
		return err;
	return sp_buf_append(&ss->text, "]", 1);
}

/*
 * The length of sid's rendered stack (render_stack), from its frames'
 * texts; remembered by stack in lens (the length plus one, 0: not yet).
 */
static int stack_len(struct speedscope *ss, uint32_t sid, uint64_t *lens, uint64_t *out)
{
	if (!lens[sid]) {
		const uint32_t *fr;
		size_t n = sp_agg_stack_frames(ss->a, sid, &fr);
		uint64_t sum = 0;
		for (size_t i = 0; i < n; i++) {
			const char *text;
			size_t len;
			int err = frame_text(ss, fr[i], &text, &len);
			if (err)
				return err;
			sum += len;
		}
		lens[sid] = (sum ? sum : 1) + 2;
	}
	*out = lens[sid] - 1;
	return 0;
}

/*
 * How many of each thread's events are written (keep[t]), threads in
 * order, within the output budget (sp_export_output_budget): its samples
 * (by_thread), or with a time metric its samples and intervals
 * (ev_by_thread, sp_export_time_events), an interval with its cause frame.
 * all[0] counts the samples, all[1] the intervals, left_out[] those not
 * written.
 */
static int keep_within_budget(struct speedscope *ss, const uint32_t *by_thread,
			      const uint64_t *ev_by_thread, const size_t *first, size_t nthreads,
			      size_t *keep, size_t all[2], size_t left_out[2])
{
	uint64_t budget = sp_export_output_budget(ss->s), used = 0, len = 0;
	uint64_t *lens = calloc(ss->a->nstacks ? ss->a->nstacks : 1, sizeof(*lens));
	if (!lens)
		return -ENOMEM;
	int err = 0;
	all[0] = all[1] = left_out[0] = left_out[1] = 0;
	for (size_t t = 0; t < nthreads && !err; t++) {
		keep[t] = 0;
		for (size_t i = first[t]; i < first[t + 1] && !err; i++) {
			uint64_t e = ev_by_thread ? ev_by_thread[i] : by_thread[i];
			bool interval = e & SP_EXPORT_INTERVAL;
			all[interval]++;
			if (used >= budget) {
				left_out[interval]++;
				continue;
			}
			uint32_t sid = interval ? sp_spool_offcpu(ss->s, (uint32_t)e)->stack_id
						: sp_spool_sample(ss->s, (uint32_t)e)->stack_id;
			err = stack_len(ss, sid < ss->a->nstacks ? sid : 0, lens, &len);
			used += len + 2 + (interval ? 12 : 0); /* ",CAUSE" */
			keep[t]++;
		}
	}
	free(lens);
	return err;
}

/* Write s as a JSON string value. */
static int put_string(struct speedscope *ss, const char *s, FILE *out)
{
	ss->text.len = 0;
	int err = sp_json_put_string(&ss->text, s);
	if (!err && ss->text.len && fwrite(ss->text.data, 1, ss->text.len, out) != ss->text.len)
		err = -EIO;
	return err;
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s && s[1] ? s + 1 : p;
}

/* A profile's opening: its type and name, "comm (pid P, tid T)". */
static int put_profile_name(struct speedscope *ss, const struct sp_thread *t, FILE *out)
{
	/* Name: "comm (pid P, tid T)", the way speedscope's own importers name threads. */
	char ids[64];
	snprintf(ids, sizeof(ids), " (pid %" PRId32 ", tid %" PRId32 ")", t->pid, t->tid);
	struct sp_buf name;
	sp_buf_init(&name);
	const char *comm = t->name[0] ? t->name : "[unknown]";
	int err = sp_buf_append(&name, comm, strlen(comm));
	if (!err)
		err = sp_buf_append(&name, ids, strlen(ids) + 1);
	if (!err) {
		fputs("{\"type\":\"sampled\",\"name\":", out);
		err = put_string(ss, (const char *)name.data, out);
	}
	sp_buf_release(&name);
	return err;
}

/*
 * The weight of a profile's entry i: of samples[i] (a sample index) its
 * period in ns with a time event, else what it counts; of events[i]
 * (sp_export_time_events; samples NULL) a sample's period in ns, an
 * interval its time off CPU (docs/DESIGN.md, decision 12).
 */
static uint64_t entry_weight(const struct speedscope *ss, const struct sp_sample_unit *u,
			     const uint32_t *samples, const uint64_t *events, size_t i)
{
	if (samples)
		return u->time ? u->period : sp_sample_weight(u, sp_spool_sample(ss->s, samples[i]));
	return events[i] & SP_EXPORT_INTERVAL
		       ? sp_spool_offcpu(ss->s, (uint32_t)events[i])->duration_ns
		       : u->period;
}

/* A profile's "weights" array and its end: entry_weight of each of the n entries, 16 a line. */
static int put_weights(const struct speedscope *ss, const struct sp_sample_unit *u,
		       const uint32_t *samples, const uint64_t *events, size_t n, FILE *out)
{
	fputs("],\n\"weights\":[", out);
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%s%" PRIu64, i == 0 ? "" : i % 16 ? "," : ",\n",
			entry_weight(ss, u, samples, events, i));
	fputs("]}", out);
	return ferror(out) ? -EIO : 0;
}

/* One thread's samples, oldest first, each weighing one sampling period. */
static int write_profile(struct speedscope *ss, const struct sp_thread *t, const uint32_t *samples,
			 size_t n, const struct sp_sample_unit *u, FILE *out)
{
	int err = put_profile_name(ss, t, out);
	if (err)
		return err;
	/*
	 * Times are ns since the profile's first sample.  Each sample stands for
	 * one period of the thread's CPU time (as pprof's cpu value): the time to
	 * the thread's next sample would also count the time it waited or slept.
	 * endValue - startValue is the total weight, which speedscope takes as the
	 * profile's length.  Other events weigh what they count, no time: "none",
	 * from 0.
	 */
	/*
	 * A time event's samples weigh u->period ns; a counted event's their periods
	 * (docs/DESIGN.md, decision 12).
	 */
	uint64_t sum = 0;
	for (size_t i = 0; i < n; i++)
		sum = sp_u64_add_sat(sum, entry_weight(ss, u, samples, NULL, i));
	uint64_t start = u->time ? sp_spool_sample(ss->s, samples[0])->timestamp_ns - ss->a->first_ns
				 : 0;
	fprintf(out,
		",\"unit\":\"%s\",\"startValue\":%" PRIu64 ",\"endValue\":%" PRIu64
		",\n\"samples\":[\n",
		u->time ? "nanoseconds" : "none", start, start + sum);
	for (size_t i = 0; i < n; i++) {
		const struct sp_sample *smp = sp_spool_sample(ss->s, samples[i]);
		uint32_t sid = smp->stack_id < ss->a->nstacks ? smp->stack_id : 0;
		/* Rendered per sample: the output is this long anyway, and memory stays small. */
		if ((err = render_stack(ss, sid)))
			return err;
		fwrite(ss->text.data, 1, ss->text.len, out);
		fputs(i + 1 < n ? ",\n" : "\n", out);
	}
	return put_weights(ss, u, samples, NULL, n, out);
}

/*
 * A time metric (docs/DESIGN.md, decision 12): one thread's events in time
 * order (sp_export_time_events), each weighing its time in ns: a sample its
 * period of CPU time (wall time), an interval its time off CPU under a
 * [blocked] or [preempted] frame.  Laid end to end from the first one's
 * time, so with wall time speedscope's time order view is the thread's
 * timeline.
 */
static int write_time_profile(struct speedscope *ss, const struct sp_thread *t,
			      const uint64_t *events, size_t n, const struct sp_sample_unit *u,
			      const uint32_t cause[2], FILE *out)
{
	int err = put_profile_name(ss, t, out);
	if (err)
		return err;
	uint64_t sum = 0, first;
	for (size_t i = 0; i < n; i++)
		sum = sp_u64_add_sat(sum, entry_weight(ss, u, NULL, events, i));
	first = events[0] & SP_EXPORT_INTERVAL
			? sp_spool_offcpu(ss->s, (uint32_t)events[0])->start_ns
			: sp_spool_sample(ss->s, (uint32_t)events[0])->timestamp_ns;
	uint64_t start = first > ss->a->first_ns ? first - ss->a->first_ns : 0;
	fprintf(out,
		",\"unit\":\"nanoseconds\",\"startValue\":%" PRIu64 ",\"endValue\":%" PRIu64
		",\n\"samples\":[\n",
		start, sp_u64_add_sat(start, sum));
	for (size_t i = 0; i < n; i++) {
		const struct sp_offcpu *o = events[i] & SP_EXPORT_INTERVAL
						    ? sp_spool_offcpu(ss->s, (uint32_t)events[i])
						    : NULL;
		uint32_t sid = o ? o->stack_id : sp_spool_sample(ss->s, (uint32_t)events[i])->stack_id;
		if ((err = render_stack(ss, sid < ss->a->nstacks ? sid : 0)))
			return err;
		if (o) { /* "[...]" becomes "[...,CAUSE]" */
			char num[16];
			int k = snprintf(num, sizeof(num), "%s%" PRIu32 "]", ss->text.len > 2 ? "," : "",
					 cause[(o->flags & SP_OFFCPU_PREEMPTED) != 0]);
			ss->text.len--;
			if ((err = sp_buf_append(&ss->text, num, (size_t)k)))
				return err;
		}
		fwrite(ss->text.data, 1, ss->text.len, out);
		fputs(i + 1 < n ? ",\n" : "\n", out);
	}
	return put_weights(ss, u, NULL, events, n, out);
}

/* The thread of event e (sp_export_time_events). */
static uint32_t event_thread(const struct sp_spool *s, uint64_t e)
{
	return e & SP_EXPORT_INTERVAL ? sp_spool_offcpu(s, (uint32_t)e)->thread
				      : sp_spool_sample(s, (uint32_t)e)->thread;
}

/*
 * Samples by thread, oldest first within each: a stable bucket pass over
 * the time order.  first[t] (nthreads + 1 of them, zeroed) gets where
 * thread t's samples start in by_thread.
 */
static int samples_by_thread(struct sp_agg *a, size_t *first, uint32_t **order, uint32_t *by_thread)
{
	const struct sp_spool *s = a->spool;
	size_t nsamples = sp_spool_sample_count(s), nthreads = sp_spool_thread_count(s);
	int err = sp_export_time_order(s, order);
	if (err)
		return err;
	for (size_t i = 0; i < nsamples; i++)
		if (sp_agg_kept(a, i)) /* filtered out samples are in no profile */
			first[sp_spool_sample(s, i)->thread + 1]++;
	for (size_t t = 0; t < nthreads; t++)
		first[t + 1] += first[t];
	for (size_t i = 0; i < nsamples; i++) {
		if (!sp_agg_kept(a, (*order)[i]))
			continue;
		uint32_t t = sp_spool_sample(s, (*order)[i])->thread;
		by_thread[first[t]++] = (*order)[i];
	}
	for (size_t t = nthreads; t > 0; t--)
		first[t] = first[t - 1];
	first[0] = 0;
	return 0;
}

/*
 * A time metric: the cause frames (cause[0] [blocked], cause[1]
 * [preempted]) added, and the events (sp_export_time_events) by thread as
 * samples_by_thread groups samples, into *by_thread (malloc'd; *events too).
 */
static int time_events_by_thread(struct speedscope *ss, size_t *first, uint32_t cause[2],
				 uint64_t **events, uint64_t **by_thread)
{
	const struct sp_spool *s = ss->s;
	size_t nthreads = sp_spool_thread_count(s), n;
	int err = 0;
	for (int k = 0; !err && k < 2; k++) {
		struct sp_resolved_frame rf = {.name = k ? "[preempted]" : "[blocked]", .module = ""};
		err = frame_index(ss, &rf, &cause[k]);
	}
	if (err || (err = sp_export_time_events(ss->a, events, &n)))
		return err;
	uint64_t *v = *by_thread = malloc((n ? n : 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		uint32_t t = event_thread(s, (*events)[i]);
		if (t < nthreads)
			first[t + 1]++;
	}
	for (size_t t = 0; t < nthreads; t++)
		first[t + 1] += first[t];
	for (size_t i = 0; i < n; i++) {
		uint32_t t = event_thread(s, (*events)[i]);
		if (t < nthreads)
			v[first[t]++] = (*events)[i];
	}
	for (size_t t = nthreads; t > 0; t--)
		first[t] = first[t - 1];
	first[0] = 0;
	return 0;
}

int sp_export_speedscope(struct sp_agg *a, const struct sp_report_opts *opts, FILE *out)
{
	struct speedscope ss;
	memset(&ss, 0, sizeof(ss));
	ss.a = a;
	ss.s = a->spool;
	ss.lines = opts->lines;
	sp_intern_init(&ss.frames);
	sp_buf_init(&ss.frames_json);
	sp_buf_init(&ss.frame_text);
	sp_buf_init(&ss.key);
	sp_buf_init(&ss.text);
	const struct sp_spool *s = a->spool;
	const struct sp_spool_meta *meta = sp_spool_meta(s);
	size_t nsamples = sp_spool_sample_count(s), nthreads = sp_spool_thread_count(s);
	struct sp_sample_unit unit;
	sp_sample_unit_of(s, &unit);
	uint32_t *order = NULL, *by_thread = NULL;
	uint64_t *events = NULL, *ev_by_thread = NULL; /* a time metric's */
	uint32_t cause[2] = {0, 0};
	size_t *first = NULL, *keep = NULL;
	int err = -ENOMEM;
	size_t nframes = sp_spool_frame_count(s);
	ss.frame_off = calloc(nframes ? nframes : 1, sizeof(*ss.frame_off));
	ss.frame_len = calloc(nframes ? nframes : 1, sizeof(*ss.frame_len));
	first = calloc(nthreads + 1, sizeof(*first));
	by_thread = malloc((nsamples ? nsamples : 1) * sizeof(*by_thread));
	if (!ss.frame_off || !ss.frame_len || !first || !by_thread)
		goto out;

	/*
	 * shared.frames, in the order the sampled stacks meet them (each stack
	 * once, however often the spool spells it); the samples come after.
	 */
	for (size_t sid = 1; sid < a->nstacks; sid++) {
		if (!a->stack_count[sid] || a->stack_canon[sid] != sid)
			continue;
		const uint32_t *fr;
		const char *text;
		size_t n = sp_agg_stack_frames(a, (uint32_t)sid, &fr), len;
		for (size_t i = n; i-- > 0;)
			if ((err = frame_text(&ss, fr[i], &text, &len)))
				goto out;
	}

	if (a->metric != SP_METRIC_CPU)
		err = time_events_by_thread(&ss, first, cause, &events, &ev_by_thread);
	else
		err = samples_by_thread(a, first, &order, by_thread);
	if (err)
		goto out;

	/* Within the output budget: the first samples (and intervals) of the first threads. */
	size_t all[2], left_out[2];
	keep = calloc(nthreads + 1, sizeof(*keep));
	if (!keep) {
		err = -ENOMEM;
		goto out;
	}
	if ((err = keep_within_budget(&ss, by_thread, ev_by_thread, first, nthreads, keep, all,
				       left_out)))
		goto out;

	/* The busiest thread is the one speedscope opens first. */
	size_t active = 0, best = 0, nprofiles = 0;
	for (size_t t = 0; t < nthreads; t++) {
		size_t n = keep[t];
		if (!n)
			continue;
		if (n > best) {
			best = n;
			active = nprofiles;
		}
		nprofiles++;
	}

	const char *title = meta->command && meta->command[0] ? meta->command
			    : opts->spool_path ? base_name(opts->spool_path)
					       : "stackpulse";
	fputs("{\"$schema\":\"" SCHEMA_URL "\",\n\"exporter\":\"stackpulse " SP_VERSION "\",\n"
	      "\"name\":", out);
	/* What the budget left out is said in the name, which speedscope shows. */
	char *named = NULL, what[128];
	if (left_out[0] && left_out[1])
		snprintf(what, sizeof(what), "%zu of %zu samples and %zu of %zu off-CPU intervals",
			 left_out[0], all[0], left_out[1], all[1]);
	else
		snprintf(what, sizeof(what), "%zu of %zu %s", left_out[0] ? left_out[0] : left_out[1],
			 left_out[0] ? all[0] : all[1], left_out[0] ? "samples" : "off-CPU intervals");
	if ((left_out[0] || left_out[1]) &&
	    asprintf(&named, "%s [%s left out: output stops past %" PRIu64 " MiB for this spool's size]",
		     title, what, sp_export_output_budget(s) >> 20) < 0) {
		err = -ENOMEM;
		goto out;
	}
	err = put_string(&ss, named ? named : title, out);
	free(named);
	if (err)
		goto out;
	fprintf(out, ",\n\"activeProfileIndex\":%zu,\n\"shared\":{\"frames\":[", active);
	if (ss.frames_json.len) {
		putc('\n', out);
		fwrite(ss.frames_json.data, 1, ss.frames_json.len, out);
		putc('\n', out);
	}
	fputs("]},\n\"profiles\":[", out);
	size_t written = 0;
	for (size_t t = 0; t < nthreads; t++) {
		size_t n = keep[t];
		if (!n)
			continue;
		fputs(written++ ? ",\n" : "\n", out);
		const struct sp_thread *th = sp_spool_thread(s, (uint32_t)t);
		if (events)
			err = write_time_profile(&ss, th, ev_by_thread + first[t], n, &unit, cause, out);
		else
			err = write_profile(&ss, th, by_thread + first[t], n, &unit, out);
		if (err)
			goto out;
	}
	fputs(written ? "\n]}\n" : "]}\n", out);
	err = ferror(out) ? -EIO : 0;
out:
	free(order);
	free(by_thread);
	free(events);
	free(ev_by_thread);
	free(first);
	free(keep);
	free(ss.frame_off);
	free(ss.frame_len);
	sp_buf_release(&ss.frame_text);
	sp_intern_release(&ss.frames);
	sp_buf_release(&ss.frames_json);
	sp_buf_release(&ss.key);
	sp_buf_release(&ss.text);
	return err;
}
