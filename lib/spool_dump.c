/* SPDX-License-Identifier: MIT */
/* The text dump of a spool: one stable line per record, in file order (stackpulse-dump(1)). */
#include "spool_format.h"

#include <inttypes.h>

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

static const char *event_name(uint32_t source)
{
	switch (source) {
	case SP_EVENT_CYCLES:
		return "cycles";
	case SP_EVENT_CPU_CLOCK:
		return "cpu-clock";
	default:
		return NULL;
	}
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
	const char *ev = event_name(m->event_source);
	if (ev)
		fprintf(out, " event=%s", ev);
	else
		fprintf(out, " event=%" PRIu32, m->event_source);
	fputs(" command=", out);
	put_quoted(out, m->command);
	fputs(" hostname=", out);
	put_quoted(out, m->hostname);
	fputs(" kernel=", out);
	put_quoted(out, m->kernel_release);
}

static void dump_module_flags(FILE *out, uint32_t flags)
{
	static const struct {
		uint32_t bit;
		const char *name;
	} names[] = {
		{SP_MODULE_KERNEL, "kernel"},
		{SP_MODULE_ANON, "anon"},
		{SP_MODULE_DELETED, "deleted"},
		{SP_MODULE_HAS_BIAS, "has-bias"},
	};
	if (!flags) {
		fputc('0', out);
		return;
	}
	const char *sep = "";
	for (size_t i = 0; i < SP_ARRAY_SIZE(names); i++) {
		if (flags & names[i].bit) {
			fprintf(out, "%s%s", sep, names[i].name);
			sep = ",";
			flags &= ~names[i].bit;
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
	fprintf(out, " spliced_stacks=%" PRIu64 " code_frames=%" PRIu64, m->spliced_stacks,
		m->code_frames);
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
		break;
	case SP_REC_EXEC:
		fprintf(out, "exec pid=%" PRId32 " python=%d time_ns=%" PRIu64, s->execs[i].pid,
			s->execs[i].is_python_runtime, s->execs[i].timestamp_ns);
		break;
	case SP_REC_LOST:
		fprintf(out, "lost count=%" PRIu64 " time_ns=%" PRIu64, s->losts[i].count,
			s->losts[i].timestamp_ns);
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
