/* SPDX-License-Identifier: MIT */
/* The dump of a spool: one stable line (text or JSON) per record, in file order (stackpulse-dump(1)). */
#include "spool/spool.h"

#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

/*
 * Print s in double quotes with C escapes.  Every byte outside printable
 * ASCII is escaped, so a line is one line and the output is the same bytes
 * whatever the locale.
 */
static void put_quoted(FILE *out, const char *s)
{
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"':
			fputs("\\\"", out);
			break;
		case '\\':
			fputs("\\\\", out);
			break;
		case '\n':
			fputs("\\n", out);
			break;
		case '\t':
			fputs("\\t", out);
			break;
		case '\r':
			fputs("\\r", out);
			break;
		default:
			if (*p < 0x20 || *p >= 0x7f)
				fprintf(out, "\\x%02x", *p);
			else
				fputc(*p, out);
		}
	}
	fputc('"', out);
}

/* Stack 0 is "no node" (the empty stack, or a root's parent): shown as "-" like other absent ids. */
static void put_stack_id(FILE *out, uint32_t id)
{
	if (id)
		fprintf(out, "%" PRIu32, id);
	else
		fputc('-', out);
}

static const char *mode_name(uint8_t mode)
{
	static const char *const names[] = {"user", "kernel", "truncated"};
	return mode < SP_ARRAY_SIZE(names) ? names[mode] : "?";
}

static void dump_meta(FILE *out, const struct sp_spool *s)
{
	const struct sp_spool_meta *m = &s->meta;
	fprintf(out, "meta version=%u start_us=%" PRIu64 " interval_us=%" PRIu64
		     " start_ns=%" PRIu64 " frequency=%" PRIu32 " stack_size=%" PRIu32,
		s->version, m->start_timestamp_us, m->sample_interval_us, m->start_monotonic_ns,
		m->frequency_hz, m->stack_size);
	const char *ev = sp_event_name(m->event_source);
	if (ev)
		fprintf(out, " event=%s", ev);
	else
		fprintf(out, " event=%" PRIu32, m->event_source);
	fprintf(out, " period=%" PRIu64 " system_wide=%u", m->sample_period,
		(m->flags & SP_META_SYSTEM_WIDE) ? 1u : 0u);
	fputs(" command=", out);
	put_quoted(out, m->command);
	fputs(" hostname=", out);
	put_quoted(out, m->hostname);
	fputs(" kernel=", out);
	put_quoted(out, m->kernel_release);
}

static const struct module_flag_name {
	uint32_t bit;
	const char *name;
} module_flag_names[] = {
	{SP_MODULE_KERNEL, "kernel"},
	{SP_MODULE_ANON, "anon"},
	{SP_MODULE_DELETED, "deleted"},
	{SP_MODULE_HAS_BIAS, "has-bias"},
};

static void dump_module_flags(FILE *out, uint32_t flags)
{
	if (!flags) {
		fputc('0', out);
		return;
	}
	const char *sep = "";
	for (size_t i = 0; i < SP_ARRAY_SIZE(module_flag_names); i++) {
		if (flags & module_flag_names[i].bit) {
			fprintf(out, "%s%s", sep, module_flag_names[i].name);
			sep = ",";
			flags &= ~module_flag_names[i].bit;
		}
	}
	/* Bits a later version defines still show, as a number. */
	if (flags)
		fprintf(out, "%s0x%" PRIx32, sep, flags);
}

static void dump_module(FILE *out, const struct sp_module *m)
{
	fprintf(out, "module id=%" PRIu32 " pid=%" PRId32 " start=0x%" PRIx64 " end=0x%" PRIx64
		     " offset=0x%" PRIx64 " inode=%" PRIu64 " dev=%" PRIu32 ":%" PRIu32
		     " bias=0x%" PRIx64 " size=%" PRIu64 " mtime_ns=%" PRId64 " flags=",
		m->id, m->pid, m->start, m->end, m->file_offset, m->inode, m->dev_major,
		m->dev_minor, m->load_bias, m->file_size, m->mtime_ns);
	dump_module_flags(out, m->flags);
	fputs(" build_id=", out);
	if (!m->build_id_len)
		fputc('-', out);
	for (unsigned i = 0; i < m->build_id_len; i++)
		fprintf(out, "%02x", m->build_id[i]);
	fputs(" path=", out);
	put_quoted(out, m->path);
	if (m->same_bytes_as)
		fprintf(out, " same_bytes_as=%" PRIu32, m->same_bytes_as - 1);
}

static void dump_frame(FILE *out, uint32_t id, const struct sp_frame *f)
{
	fprintf(out, "frame id=%" PRIu32, id);
	if (f->module_id == SP_NO_MODULE)
		fputs(" module=-", out);
	else
		fprintf(out, " module=%" PRIu32, f->module_id);
	fprintf(out, " mode=%s abs=0x%" PRIx64 " rel=0x%" PRIx64, mode_name(f->mode), f->abs_ip,
		f->rel_ip);
	/* A truncation marker carries its stop reason in abs_ip. */
	if (f->mode == SP_FRAME_TRUNCATED)
		fprintf(out, " stop=%s", f->abs_ip < SP_STOP_COUNT_ ?
						 sp_stop_reason_name((unsigned)f->abs_ip) : "?");
}

static void dump_summary(FILE *out, const struct sp_summary *m)
{
	fprintf(out,
		"summary sample_events=%" PRIu64 " samples=%" PRIu64 " lost_events=%" PRIu64
		" kernel_enabled=%d missing_pid=%" PRIu64 " missing_tid=%" PRIu64
		" idle_tid=%" PRIu64 " missing_timestamp=%" PRIu64 " empty_stack=%" PRIu64
		" truncated_markers=%" PRIu64 " ignored_callchain_frames=%" PRIu64,
		m->sample_events, m->samples, m->lost_events, m->kernel_enabled,
		m->missing_pid_samples, m->missing_tid_samples, m->idle_tid_samples,
		m->missing_timestamp_samples, m->empty_stack_samples, m->truncated_frame_markers,
		m->ignored_user_callchain_frames);
	for (unsigned i = 0; i < SP_STOP_COUNT_; i++)
		fprintf(out, " stop.%s=%" PRIu64, sp_stop_reason_name(i), m->stop_reasons[i]);
	for (unsigned i = 0; i < SP_ERR_COUNT_; i++)
		fprintf(out, " err.%s=%" PRIu64, sp_error_kind_name(i), m->error_stats[i]);
	fprintf(out, " spliced_stacks=%" PRIu64 " code_frames=%" PRIu64 " fp_frames=%" PRIu64,
		m->spliced_stacks, m->code_frames, m->fp_frames);
}

static void put_string_id(FILE *out, const struct sp_spool *s, uint32_t id)
{
	if (id == SP_SYM_NO_STRING)
		fputc('-', out);
	else
		put_quoted(out, s->sym_strings[id]);
}

/* Symbol records show their strings, not their string ids. */
static void dump_symbol_record(FILE *out, const struct sp_spool *s, const struct sp_spool_log *r)
{
	uint32_t i = r->index;
	if (r->type == SP_REC_SYM_STRINGS) {
		size_t end = i + 1 < s->nstrrecs ? s->strrec_first[i + 1] : s->nsym_strings;
		fprintf(out, "sym-strings first=%" PRIu32 " count=%zu", s->strrec_first[i],
			end - s->strrec_first[i]);
	} else if (r->type == SP_REC_SYM_FRAME) {
		const struct sp_spool_symframe *sf = &s->symframes[i];
		fprintf(out, "sym-frame frame=%" PRIu32 " n=%" PRIu32, sf->frame, sf->n);
		for (uint32_t k = 0; k < sf->n; k++) {
			const struct sp_spool_sym *e = &s->syms[sf->first + k];
			fprintf(out, " [kind=%u origin=%u flags=0x%" PRIx32 " name=", e->kind,
				e->origin, e->flags);
			put_string_id(out, s, e->name);
			fputs(" module=", out);
			put_string_id(out, s, e->module);
			fputs(" file=", out);
			put_string_id(out, s, e->file);
			fprintf(out, " line=%" PRIu32 " offset=0x%" PRIx64 "]", e->line,
				e->symbol_offset);
		}
	} else if (r->type == SP_REC_SYM_KERNEL) {
		const struct sp_spool_ksym *k = &s->ksyms[i];
		fprintf(out, "sym-kernel addr=0x%" PRIx64 " size=0x%" PRIx64 " name=", k->addr,
			k->size);
		put_string_id(out, s, k->name);
		fputs(" module=", out);
		put_string_id(out, s, k->module);
	} else {
		const struct sp_spool_pmline *l = &s->pmlines[i];
		fprintf(out, "sym-perf-map pid=%" PRId32 " start=0x%" PRIx64 " size=0x%" PRIx64
			     " name=", l->pid, l->start, l->size);
		put_string_id(out, s, l->name);
	}
}

static void dump_record(FILE *out, const struct sp_spool *s, const struct sp_spool_log *r)
{
	uint32_t i = r->index;
	switch (r->type) {
	case SP_REC_META:
		dump_meta(out, s);
		break;
	case SP_REC_MODULE:
		dump_module(out, &s->modules[i]);
		break;
	case SP_REC_FRAME:
		dump_frame(out, i, &s->frames[i]);
		break;
	case SP_REC_STACK:
		fprintf(out, "stack id=%" PRIu32 " parent=", i);
		put_stack_id(out, s->stack_parent[i]);
		fprintf(out, " frame=%" PRIu32, s->stack_frame[i]);
		break;
	case SP_REC_THREAD:
		fprintf(out, "thread index=%" PRIu32 " pid=%" PRId32 " tid=%" PRId32, i,
			s->threads[i].pid, s->threads[i].tid);
		break;
	case SP_REC_THREAD_NAME:
		fprintf(out, "thread-name index=%" PRIu32 " name=", s->names[i].thread);
		put_quoted(out, s->names[i].name);
		break;
	case SP_REC_SAMPLE:
		fprintf(out, "sample thread=%" PRIu32 " stack=", s->samples[i].thread);
		put_stack_id(out, s->samples[i].stack_id);
		fprintf(out, " time_ns=%" PRIu64, s->samples[i].timestamp_ns);
		/* Spools that store periods show every sample's; older ones stay as they read. */
		if (s->periods_stored)
			fprintf(out, " period=%" PRIu64, s->samples[i].period);
		break;
	case SP_REC_OFFCPU:
		fprintf(out, "off-cpu thread=%" PRIu32 " stack=", s->offcpus[i].thread);
		put_stack_id(out, s->offcpus[i].stack_id);
		fprintf(out, " start_ns=%" PRIu64 " duration_ns=%" PRIu64 " flags=%" PRIu32,
			s->offcpus[i].start_ns, s->offcpus[i].duration_ns, s->offcpus[i].flags);
		break;
	case SP_REC_EXEC:
		fprintf(out, "exec pid=%" PRId32 " python=%d time_ns=%" PRIu64, s->execs[i].pid,
			s->execs[i].is_python_runtime, s->execs[i].timestamp_ns);
		break;
	case SP_REC_LOST:
		fprintf(out, "lost count=%" PRIu64 " time_ns=%" PRIu64, s->losts[i].count,
			s->losts[i].timestamp_ns);
		break;
	case SP_REC_OWNER:
		fprintf(out, "owner pid=%" PRId32 " uid=%" PRIu32 " time_ns=%" PRIu64,
			s->owners[i].pid, s->owners[i].uid, s->owners[i].timestamp_ns);
		break;
	case SP_REC_SUMMARY:
		dump_summary(out, &s->summaries[i]);
		break;
	case SP_REC_SYM_STRINGS:
	case SP_REC_SYM_FRAME:
	case SP_REC_SYM_KERNEL:
	case SP_REC_SYM_PERF_MAP:
		dump_symbol_record(out, s, r);
		break;
	default:
		fprintf(out, "%s type=%u length=%" PRIu64,
			s->unknowns[i].damaged ? "damaged-symbols" : "unknown", s->unknowns[i].type,
			s->unknowns[i].length);
		break;
	}
	fputc('\n', out);
}

int sp_spool_dump_text(const struct sp_spool *s, FILE *out)
{
	for (size_t i = 0; i < s->nlog; i++) {
		dump_record(out, s, &s->log[i]);
		/* Stop at the first failed write rather than pushing megabytes into a dead pipe. */
		if (ferror(out))
			return errno ? -errno : -EIO;
	}
	if (s->truncated)
		fprintf(out, "# truncated: the spool ends mid-record; %zu records kept\n", s->nlog);
	else if (!s->nsummaries)
		fprintf(out, "# cut short: no summary trailer (the recorder did not finish)\n");
	if (fflush(out) || ferror(out))
		return errno ? -errno : -EIO;
	return 0;
}

/* ---- JSON Lines -------------------------------------------------------- */

/*
 * One JSON object being built.  The first error sticks and later appends do
 * nothing, so a record's writer reads as a list of fields.
 */
struct jline {
	struct sp_buf b;
	int err;
};

static void jfmt(struct jline *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void jfmt(struct jline *j, const char *fmt, ...)
{
	char tmp[128];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (!j->err)
		j->err = sp_buf_append(&j->b, tmp, n < (int)sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

static void jstr(struct jline *j, const char *key, const char *s)
{
	jfmt(j, ",\"%s\":", key);
	if (!j->err)
		j->err = sp_json_put_string(&j->b, s);
}

static void ju64(struct jline *j, const char *key, uint64_t v)
{
	jfmt(j, ",\"%s\":%" PRIu64, key, v);
}

static void ji64(struct jline *j, const char *key, int64_t v)
{
	jfmt(j, ",\"%s\":%" PRId64, key, v);
}

/* Addresses and other 64-bit bit patterns: "0x..." strings, exact in every JSON reader. */
static void jhex(struct jline *j, const char *key, uint64_t v)
{
	jfmt(j, ",\"%s\":\"0x%" PRIx64 "\"", key, v);
}

/* Stack ids and module ids: null where the text dump shows "-". */
static void jid_or_null(struct jline *j, const char *key, uint32_t v, bool present)
{
	if (present)
		ju64(j, key, v);
	else
		jfmt(j, ",\"%s\":null", key);
}

static void json_meta(struct jline *j, const struct sp_spool *s)
{
	const struct sp_spool_meta *m = &s->meta;
	ju64(j, "version", s->version);
	ju64(j, "start_us", m->start_timestamp_us);
	ju64(j, "interval_us", m->sample_interval_us);
	ju64(j, "start_ns", m->start_monotonic_ns);
	ju64(j, "frequency", m->frequency_hz);
	ju64(j, "stack_size", m->stack_size);
	const char *ev = sp_event_name(m->event_source);
	if (ev)
		jstr(j, "event", ev);
	else
		ju64(j, "event", m->event_source);
	ju64(j, "period", m->sample_period);
	ju64(j, "system_wide", (m->flags & SP_META_SYSTEM_WIDE) ? 1u : 0u);
	jstr(j, "command", m->command);
	jstr(j, "hostname", m->hostname);
	jstr(j, "kernel", m->kernel_release);
}

static void json_module(struct jline *j, const struct sp_module *m)
{
	ju64(j, "id", m->id);
	ji64(j, "pid", m->pid);
	jhex(j, "start", m->start);
	jhex(j, "end", m->end);
	jhex(j, "offset", m->file_offset);
	/* Identities compared exactly that can pass 2^53: decimal strings. */
	jfmt(j, ",\"inode\":\"%" PRIu64 "\"", m->inode);
	jfmt(j, ",\"dev\":\"%" PRIu32 ":%" PRIu32 "\"", m->dev_major, m->dev_minor);
	jhex(j, "bias", m->load_bias);
	ju64(j, "size", m->file_size);
	jfmt(j, ",\"mtime_ns\":\"%" PRId64 "\"", m->mtime_ns);
	jfmt(j, ",\"flags\":[");
	uint32_t flags = m->flags;
	const char *sep = "";
	for (size_t i = 0; i < SP_ARRAY_SIZE(module_flag_names); i++) {
		if (flags & module_flag_names[i].bit) {
			jfmt(j, "%s\"%s\"", sep, module_flag_names[i].name);
			sep = ",";
			flags &= ~module_flag_names[i].bit;
		}
	}
	if (flags)
		jfmt(j, "%s\"0x%" PRIx32 "\"", sep, flags);
	jfmt(j, "]");
	if (m->build_id_len) {
		jfmt(j, ",\"build_id\":\"");
		for (unsigned i = 0; i < m->build_id_len; i++)
			jfmt(j, "%02x", m->build_id[i]);
		jfmt(j, "\"");
	} else {
		jfmt(j, ",\"build_id\":null");
	}
	jstr(j, "path", m->path);
	if (m->same_bytes_as)
		ju64(j, "same_bytes_as", m->same_bytes_as - 1);
}

static void json_frame(struct jline *j, uint32_t id, const struct sp_frame *f)
{
	ju64(j, "id", id);
	jid_or_null(j, "module", f->module_id, f->module_id != SP_NO_MODULE);
	jstr(j, "mode", mode_name(f->mode));
	jhex(j, "abs", f->abs_ip);
	jhex(j, "rel", f->rel_ip);
	if (f->mode == SP_FRAME_TRUNCATED)
		jstr(j, "stop", f->abs_ip < SP_STOP_COUNT_ ?
					sp_stop_reason_name((unsigned)f->abs_ip) : "?");
}

static void json_summary(struct jline *j, const struct sp_summary *m)
{
	ju64(j, "sample_events", m->sample_events);
	ju64(j, "samples", m->samples);
	ju64(j, "lost_events", m->lost_events);
	jfmt(j, ",\"kernel_enabled\":%s", m->kernel_enabled ? "true" : "false");
	ju64(j, "missing_pid", m->missing_pid_samples);
	ju64(j, "missing_tid", m->missing_tid_samples);
	ju64(j, "idle_tid", m->idle_tid_samples);
	ju64(j, "missing_timestamp", m->missing_timestamp_samples);
	ju64(j, "empty_stack", m->empty_stack_samples);
	ju64(j, "truncated_markers", m->truncated_frame_markers);
	ju64(j, "ignored_callchain_frames", m->ignored_user_callchain_frames);
	jfmt(j, ",\"stop\":{");
	for (unsigned i = 0; i < SP_STOP_COUNT_; i++)
		jfmt(j, "%s\"%s\":%" PRIu64, i ? "," : "", sp_stop_reason_name(i),
		     m->stop_reasons[i]);
	jfmt(j, "},\"err\":{");
	for (unsigned i = 0; i < SP_ERR_COUNT_; i++)
		jfmt(j, "%s\"%s\":%" PRIu64, i ? "," : "", sp_error_kind_name(i),
		     m->error_stats[i]);
	jfmt(j, "}");
	ju64(j, "spliced_stacks", m->spliced_stacks);
	ju64(j, "code_frames", m->code_frames);
	ju64(j, "fp_frames", m->fp_frames);
}

/* A stored string by id: null for "none" (the text dump's "-"). */
static void jstr_id(struct jline *j, const char *key, const struct sp_spool *s, uint32_t id)
{
	if (id == SP_SYM_NO_STRING)
		jfmt(j, ",\"%s\":null", key);
	else
		jstr(j, key, s->sym_strings[id]);
}

/* Symbol records (stackpulse symbolize) with their strings, as the text dump shows them. */
static void json_symbol_record(struct jline *j, const struct sp_spool *s,
			       const struct sp_spool_log *r)
{
	uint32_t i = r->index;
	if (r->type == SP_REC_SYM_STRINGS) {
		size_t end = i + 1 < s->nstrrecs ? s->strrec_first[i + 1] : s->nsym_strings;
		ju64(j, "first", s->strrec_first[i]);
		ju64(j, "count", end - s->strrec_first[i]);
	} else if (r->type == SP_REC_SYM_FRAME) {
		const struct sp_spool_symframe *sf = &s->symframes[i];
		ju64(j, "frame", sf->frame);
		jfmt(j, ",\"chain\":[");
		for (uint32_t k = 0; k < sf->n; k++) {
			const struct sp_spool_sym *e = &s->syms[sf->first + k];
			jfmt(j, "%s{\"kind\":%u,\"origin\":%u,\"flags\":%" PRIu32, k ? "," : "",
			     e->kind, e->origin, e->flags);
			jstr_id(j, "name", s, e->name);
			jstr_id(j, "module", s, e->module);
			jstr_id(j, "file", s, e->file);
			ju64(j, "line", e->line);
			jhex(j, "offset", e->symbol_offset);
			jfmt(j, "}");
		}
		jfmt(j, "]");
	} else if (r->type == SP_REC_SYM_KERNEL) {
		const struct sp_spool_ksym *k = &s->ksyms[i];
		jhex(j, "addr", k->addr);
		jhex(j, "size", k->size);
		jstr_id(j, "name", s, k->name);
		jstr_id(j, "module", s, k->module);
	} else {
		const struct sp_spool_pmline *l = &s->pmlines[i];
		ji64(j, "pid", l->pid);
		jhex(j, "start", l->start);
		jhex(j, "size", l->size);
		jstr_id(j, "name", s, l->name);
	}
}

static const char *record_name(uint8_t type)
{
	switch (type) {
	case SP_REC_META:
		return "meta";
	case SP_REC_MODULE:
		return "module";
	case SP_REC_FRAME:
		return "frame";
	case SP_REC_STACK:
		return "stack";
	case SP_REC_THREAD:
		return "thread";
	case SP_REC_THREAD_NAME:
		return "thread-name";
	case SP_REC_SAMPLE:
		return "sample";
	case SP_REC_OFFCPU:
		return "off-cpu";
	case SP_REC_EXEC:
		return "exec";
	case SP_REC_LOST:
		return "lost";
	case SP_REC_OWNER:
		return "owner";
	case SP_REC_SUMMARY:
		return "summary";
	case SP_REC_SYM_STRINGS:
		return "sym-strings";
	case SP_REC_SYM_FRAME:
		return "sym-frame";
	case SP_REC_SYM_KERNEL:
		return "sym-kernel";
	case SP_REC_SYM_PERF_MAP:
		return "sym-perf-map";
	default:
		return "unknown";
	}
}

static void json_record(struct jline *j, const struct sp_spool *s, const struct sp_spool_log *r)
{
	uint32_t i = r->index;
	const char *name = record_name(r->type);
	if (!strcmp(name, "unknown") && s->unknowns[i].damaged)
		name = "damaged-symbols";
	jfmt(j, "{\"type\":\"%s\"", name);
	switch (r->type) {
	case SP_REC_META:
		json_meta(j, s);
		break;
	case SP_REC_MODULE:
		json_module(j, &s->modules[i]);
		break;
	case SP_REC_FRAME:
		json_frame(j, i, &s->frames[i]);
		break;
	case SP_REC_STACK:
		ju64(j, "id", i);
		jid_or_null(j, "parent", s->stack_parent[i], s->stack_parent[i] != 0);
		ju64(j, "frame", s->stack_frame[i]);
		break;
	case SP_REC_THREAD:
		ju64(j, "index", i);
		ji64(j, "pid", s->threads[i].pid);
		ji64(j, "tid", s->threads[i].tid);
		break;
	case SP_REC_THREAD_NAME:
		ju64(j, "index", s->names[i].thread);
		jstr(j, "name", s->names[i].name);
		break;
	case SP_REC_SAMPLE:
		ju64(j, "thread", s->samples[i].thread);
		jid_or_null(j, "stack", s->samples[i].stack_id, s->samples[i].stack_id != 0);
		ju64(j, "time_ns", s->samples[i].timestamp_ns);
		if (s->periods_stored)
			ju64(j, "period", s->samples[i].period);
		break;
	case SP_REC_OFFCPU:
		ju64(j, "thread", s->offcpus[i].thread);
		jid_or_null(j, "stack", s->offcpus[i].stack_id, s->offcpus[i].stack_id != 0);
		ju64(j, "start_ns", s->offcpus[i].start_ns);
		ju64(j, "duration_ns", s->offcpus[i].duration_ns);
		ju64(j, "flags", s->offcpus[i].flags);
		break;
	case SP_REC_EXEC:
		ji64(j, "pid", s->execs[i].pid);
		jfmt(j, ",\"python\":%s", s->execs[i].is_python_runtime ? "true" : "false");
		ju64(j, "time_ns", s->execs[i].timestamp_ns);
		break;
	case SP_REC_LOST:
		ju64(j, "count", s->losts[i].count);
		ju64(j, "time_ns", s->losts[i].timestamp_ns);
		break;
	case SP_REC_OWNER:
		ji64(j, "pid", s->owners[i].pid);
		ju64(j, "uid", s->owners[i].uid);
		ju64(j, "time_ns", s->owners[i].timestamp_ns);
		break;
	case SP_REC_SUMMARY:
		json_summary(j, &s->summaries[i]);
		break;
	case SP_REC_SYM_STRINGS:
	case SP_REC_SYM_FRAME:
	case SP_REC_SYM_KERNEL:
	case SP_REC_SYM_PERF_MAP:
		json_symbol_record(j, s, r);
		break;
	default:
		ju64(j, "record_type", s->unknowns[i].type);
		ju64(j, "length", s->unknowns[i].length);
		break;
	}
	jfmt(j, "}\n");
}

/* Write the line built so far and empty the buffer for the next one. */
static int jflush(struct jline *j, FILE *out)
{
	if (j->err)
		return j->err;
	if (j->b.len && fwrite(j->b.data, 1, j->b.len, out) != j->b.len)
		return errno ? -errno : -EIO;
	j->b.len = 0;
	return 0;
}

int sp_spool_dump_json(const struct sp_spool *s, FILE *out)
{
	struct jline j = {.err = 0};
	sp_buf_init(&j.b);
	int err = 0;
	for (size_t i = 0; i < s->nlog && !err; i++) {
		json_record(&j, s, &s->log[i]);
		err = jflush(&j, out);
	}
	if (!err) {
		if (s->truncated)
			jfmt(&j, "{\"type\":\"truncated\",\"records\":%zu}\n", s->nlog);
		else if (!s->nsummaries)
			jfmt(&j, "{\"type\":\"cut-short\"}\n");
		err = jflush(&j, out);
	}
	sp_buf_release(&j.b);
	if (err)
		return err;
	if (fflush(out) || ferror(out))
		return errno ? -errno : -EIO;
	return 0;
}
