/* SPDX-License-Identifier: MIT */
/* Sample filters of the reports: by process, thread, name, time, module and function. */
#include "report/aggregate.h"

#include <fnmatch.h>
#include <string.h>

bool sp_filter_active(const struct sp_report_filter *f)
{
	return f->npids || f->ntids || f->comm || f->module || f->focus || f->exclude ||
	       f->has_start || f->has_end;
}

static bool has_id(const int32_t *ids, size_t n, int32_t id)
{
	for (size_t i = 0; i < n; i++)
		if (ids[i] == id)
			return true;
	return false;
}

bool sp_filter_thread(const struct sp_report_filter *f, const struct sp_thread *t)
{
	if (!t)
		return false;
	if (f->npids && !has_id(f->pids, f->npids, t->pid))
		return false;
	if (f->ntids && !has_id(f->tids, f->ntids, t->tid))
		return false;
	return !f->comm || !strcmp(f->comm, t->name);
}

uint64_t sp_filter_origin_ns(const struct sp_spool *s)
{
	const struct sp_spool_meta *m = sp_spool_meta(s);
	uint64_t first = UINT64_MAX;
	size_t n = sp_spool_sample_count(s);
	for (size_t i = 0; i < n; i++) {
		uint64_t t = sp_spool_sample(s, i)->timestamp_ns;
		first = t < first ? t : first;
	}
	/* A header start after the first sample is not the start (a foreign writer). */
	if (m && m->start_monotonic_ns && m->start_monotonic_ns <= first)
		return m->start_monotonic_ns;
	return n ? first : 0;
}

bool sp_filter_time(const struct sp_report_filter *f, uint64_t ts_ns, uint64_t origin_ns)
{
	uint64_t t = ts_ns > origin_ns ? ts_ns - origin_ns : 0;
	return (!f->has_start || t >= f->start_ns) && (!f->has_end || t < f->end_ns);
}

/* The Module column's form of a module: a path given is reduced to its basename. */
static bool same_module(const char *want, const char *module)
{
	const char *slash = strrchr(want, '/');
	if (slash && slash[1])
		want = slash + 1;
	return module && !strcmp(want, module);
}

static bool name_matches(const char *pattern, const char *name)
{
	return !strcmp(pattern, name) || !fnmatch(pattern, name, 0);
}

int sp_filter_stack(const struct sp_report_filter *f, const struct sp_spool *s,
		    struct sp_symbolizer *sym, const uint32_t *fr, size_t n, bool *pass)
{
	bool module = false, focus = false, excluded = false;
	for (size_t i = 0; i < n; i++) {
		const struct sp_frame *frame = sp_spool_frame(s, fr[i]);
		if (!frame || frame->mode == SP_FRAME_TRUNCATED)
			continue;
		const struct sp_resolved_frame *rf;
		size_t k;
		int err = sp_symbolizer_resolve_all(sym, fr[i], &rf, &k);
		if (err)
			return err;
		for (size_t j = 0; j < k; j++) {
			module = module || (f->module && same_module(f->module, rf[j].module));
			focus = focus || (f->focus && name_matches(f->focus, rf[j].name));
			excluded = excluded || (f->exclude && name_matches(f->exclude, rf[j].name));
		}
	}
	*pass = (!f->module || module) && (!f->focus || focus) && !excluded;
	return 0;
}
