/* SPDX-License-Identifier: MIT */
/* Annotation's text layout: a function's source lines with samples, then its annotated disassembly. */
#include "report/annotate.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

/* Source text as shown: leading blanks dropped, escaped for a terminal. */
static void put_source(FILE *out, const char *text)
{
	while (*text == ' ' || *text == '\t')
		text++;
	sp_fputs_printable(text, out);
}

/*
 * A line's text, or NULL; the first file of a function found missing is
 * named once (*said keeps which).
 */
static const char *text_of(const struct sp_ann_view *v, const char *file, uint32_t line,
			   FILE *out, const char **said)
{
	bool missing;
	const char *t = sp_ann_source_line(v->sources, file, line, v->comp_dir, v->module_path,
					   &missing);
	if (missing && (!*said || strcmp(*said, file))) {
		fputs("  (source not found: ", out);
		sp_fputs_printable(file, out);
		fputs("; give --source-dir)\n", out);
		*said = file;
	}
	return t;
}

/* The same line of the function (NULL files equal). */
static bool same_line(const struct sp_ann_line *x, const struct sp_ann_line *y)
{
	return x->line == y->line &&
	       (x->file && y->file ? !strcmp(x->file, y->file) : x->file == y->file);
}

static void put_row(FILE *out, const struct sp_ann_view *v, uint64_t samples, uint32_t line)
{
	fprintf(out, "%8.2f%% %7.2f%% %8" PRIu64 " %6" PRIu32 "  ",
		sp_ann_pct(samples, v->func->samples), sp_ann_pct(samples, v->profile_samples),
		samples, line);
}

static void write_lines(const struct sp_ann_view *v, FILE *out)
{
	const struct sp_ann_func *f = v->func;
	const char *file = NULL, *said = NULL;
	fputs("Source lines with samples (self samples; inlined code under the line that called it):\n"
	      "    Self%    Prof%  Samples   Line  Source\n", out);
	for (size_t i = 0; i < f->nlines;) {
		const struct sp_ann_line *l = &f->lines[i];
		if (l->file && (!file || strcmp(file, l->file))) {
			file = l->file;
			fputs("  ", out);
			sp_fputs_printable(file, out);
			fputs(":\n", out);
		} else if (!l->file && i == 0) {
			fputs("  (no source position known)\n", out);
		}
		/* The line's own samples (first in order: its inlined rows sort after). */
		uint64_t own = !l->inl_func ? l->samples : 0;
		put_row(out, v, own, l->line);
		const char *t = text_of(v, l->file, l->line, out, &said);
		if (t)
			put_source(out, t);
		fputc('\n', out);
		size_t j = i + (l->inl_func ? 0 : 1);
		for (; j < f->nlines && f->lines[j].inl_func && same_line(&f->lines[j], l); j++) {
			const struct sp_ann_line *in = &f->lines[j];
			put_row(out, v, in->samples, in->inl_line);
			fputs("    inlined ", out);
			fputs(in->inl_func, out);
			if (in->inl_file && (!l->file || strcmp(in->inl_file, l->file))) {
				fputs(" (", out);
				sp_fputs_printable(in->inl_file, out);
				fputc(')', out);
			}
			fputs(": ", out);
			t = text_of(v, in->inl_file, in->inl_line, out, &said);
			if (t)
				put_source(out, t);
			fputc('\n', out);
		}
		i = j;
	}
}

static void write_insns(const struct sp_ann_view *v, FILE *out)
{
	const struct sp_ann_listing *l = v->listing;
	const char *said = NULL, *last_file = NULL;
	uint32_t last_line = 0;
	fprintf(out, "Disassembly (%s, 0x%" PRIx64 "-0x%" PRIx64 ", %" PRIu64 " bytes; '*' marks "
		"instructions with %.0f%% or more of the function's samples):\n",
		"samples where the program counter was", v->code->start, v->code->end,
		v->code->end - v->code->start, SP_ANN_HOT_PCT);
	fputs("   Percent  Samples  Address  Instruction\n", out);
	for (size_t i = 0; i < l->n; i++) {
		const struct sp_ann_insn *in = &l->insns[i];
		const char *file = v->insn_file[i];
		uint32_t line = v->insn_line[i];
		if (line && file && (line != last_line || !last_file || strcmp(file, last_file))) {
			const char *base = strrchr(file, '/');
			fputs("                          : ", out);
			sp_fputs_printable(base ? base + 1 : file, out);
			fprintf(out, ":%" PRIu32 "  ", line);
			const char *t = text_of(v, file, line, out, &said);
			if (t)
				put_source(out, t);
			fputc('\n', out);
		}
		last_file = file;
		last_line = line;
		uint64_t n = v->insn_samples[i];
		double pct = sp_ann_pct(n, v->func->samples);
		if (n)
			fprintf(out, "%c %7.2f %8" PRIu64 " ", pct >= SP_ANN_HOT_PCT ? '*' : ' ', pct, n);
		else
			fputs("                   ", out);
		fprintf(out, "%8" PRIx64 ":  %s", in->addr, l->text + in->text);
		if (v->insn_target[i]) {
			fputc(' ', out);
			fputs(v->insn_target[i], out);
		}
		fputc('\n', out);
	}
}

int sp_ann_write_text(const struct sp_ann_view *v, FILE *out)
{
	const struct sp_ann_func *f = v->func;
	fputs("== ", out);
	fputs(f->name, out);
	fprintf(out, " (%s): %" PRIu64 " self samples, %.2f%% of %" PRIu64 " ==\n",
		f->module && *f->module ? f->module : "?", f->samples,
		sp_ann_pct(f->samples, v->profile_samples), v->profile_samples);
	write_lines(v, out);
	fputc('\n', out);
	if (v->unreadable) {
		fputs("No disassembly: cannot read module file '", out);
		sp_fputs_printable(v->module_path ? v->module_path : "?", out);
		fprintf(out, "': %s\n", v->unreadable);
	} else {
		write_insns(v, out);
		if (v->unplaced)
			fprintf(out, "(%" PRIu64 " samples at addresses outside this code: another "
				"build or copy of the function)\n", v->unplaced);
	}
	fputc('\n', out);
	return ferror(out) ? -EIO : 0;
}
