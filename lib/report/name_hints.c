/* SPDX-License-Identifier: MIT */
/* What to do where frames have no names: a Python without perf maps, JIT code without a map. */
#include "report/views.h"

#include <string.h>

/* Whether a module file of the spool has this basename ("libjvm.so", "node"). */
static bool has_module(const struct sp_spool *s, const char *base)
{
	size_t n = sp_spool_module_count(s), bl = strlen(base);
	for (size_t i = 0; i < n; i++) {
		const struct sp_module *m = sp_spool_module(s, (uint32_t)i);
		const char *p = m && m->path ? m->path : "";
		size_t pl = strlen(p);
		if (pl >= bl && !strcmp(p + pl - bl, base) && (pl == bl || p[pl - bl - 1] == '/'))
			return true;
	}
	return false;
}

uint32_t sp_agg_name_hints(const struct sp_agg *a)
{
	bool eval = false, anon = false;
	for (size_t i = 0; i < a->nframes && !eval; i++)
		eval = a->frame_eval[i];
	for (size_t i = 0; i < a->nfuncs; i++) {
		const char *name = a->funcs[i].name;
		eval = eval || !strncmp(name, "_PyEval_EvalFrame", 17);
		/* an address in anonymous code: "[anon]+0x..." or, one row for all, "[unknown] in [anon]" */
		anon = anon || !strncmp(name, "[anon]", 6) ||
		       (!strncmp(name, "[unknown]", 9) && !strncmp(a->funcs[i].module, "[anon", 5));
	}
	uint32_t hints = 0;
	/* Python frames stand in for the eval loop only where a perf map named them */
	if (eval && !a->any_stand_in)
		hints |= SP_HINT_PYTHON;
	if (anon && has_module(a->spool, "libjvm.so"))
		hints |= SP_HINT_JVM;
	if (anon && has_module(a->spool, "node"))
		hints |= SP_HINT_NODE;
	return hints;
}

/* What each hint says, by enum sp_name_hint; lines break at '\n'. */
static const char *const hint_text[SP_NAME_HINT_COUNT_] = {
	[SP_NAME_HINT_PYTHON] = "Python functions have no names (no perf map): run Python 3.12+\n"
				"with -X perf, or 3.13+ with -X perf_jit",
	[SP_NAME_HINT_JVM] = "Java's JIT code has no names (no perf map): run java with\n"
			     "-XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit (JDK 17+)\n"
			     "or a perf-map agent",
	[SP_NAME_HINT_NODE] = "Node's JIT code has no names (no perf map): run node with\n"
			      "--perf-basic-prof",
};

void sp_name_hint_write(unsigned kind, const char *first, const char *cont, const char *tail,
			FILE *out)
{
	if (kind >= SP_NAME_HINT_COUNT_)
		return;
	const char *line = hint_text[kind];
	for (const char *prefix = first;; prefix = cont) {
		size_t n = strcspn(line, "\n");
		fprintf(out, "%s%.*s", prefix, (int)n, line);
		if (!line[n])
			break;
		fputc('\n', out);
		line += n + 1;
	}
	fprintf(out, "%s\n", tail ? tail : "");
}

void sp_text_name_hints(const struct sp_agg *a, FILE *out)
{
	uint32_t h = sp_agg_name_hints(a);
	for (unsigned k = 0; k < SP_NAME_HINT_COUNT_; k++)
		if (h & (1u << k))
			sp_name_hint_write(k, "Hint:       ", "            ", NULL, out);
}
