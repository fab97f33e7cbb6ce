/* SPDX-License-Identifier: MIT */
/*
 * Names from a native symbolizer plug-in (struct sp_native_backend), in
 * place of ELF/DWARF: a source with a context of its own (struct native_names).
 */
#include "symbols/symbolizer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Which of modules [first, nmodules) the plug-in names: the file-backed ones.  NULL: no memory. */
static bool *eligible_modules(const struct native_names *nn, size_t first, size_t nmodules)
{
	size_t n = nmodules - first;
	bool *eligible = calloc(n ? n : 1, sizeof(*eligible));
	for (size_t i = 0; eligible && i < n; i++) {
		const struct sp_module *m = sp_spool_module(nn->spool, (uint32_t)(first + i));
		eligible[i] = m && sp_sym_has_file(m);
	}
	return eligible;
}

/* Groups for the plug-in of opts.native, which they copy. */
int sp_sym_setup_native(struct native_names *nn, const struct sp_spool *s,
			struct sp_symbolizer_opts *o, struct sp_arena *strings,
			struct sp_symbolizer_stats *stats, struct inline_chains *chains,
			size_t nmodules)
{
	*nn = (struct native_names){
		.spool = s,
		.strings = strings,
		.stats = stats,
		.chains = chains,
		.no_inline = o->no_inline,
	};
	if (!o->native)
		return 0;
	bool *eligible = eligible_modules(nn, 0, nmodules);
	if (!eligible)
		return -ENOMEM;
	int err = sp_native_groups_new(s, o->native, eligible, &nn->groups);
	free(eligible);
	o->native = NULL; /* the groups keep their own copy */
	return err;
}

int sp_sym_native_take_modules(struct native_names *nn, size_t first, size_t nmodules)
{
	if (!nn->groups || first >= nmodules)
		return 0;
	bool *eligible = eligible_modules(nn, first, nmodules);
	if (!eligible)
		return -ENOMEM;
	int err = sp_native_groups_add(nn->groups, nmodules, eligible);
	free(eligible);
	return err;
}

static const char *arena_copy(struct native_names *nn, const char *s)
{
	return s ? sp_arena_strndup(nn->strings, s, strlen(s)) : NULL;
}

/*
 * Name a frame of a file-backed module through the plug-in (its
 * symbolize callback): its functions, innermost first, become
 * the frame and its inline chain as the ELF/DWARF backend would make them,
 * with SP_ORIGIN_ELF.  rf is untouched when the plug-in knows nothing.
 */
int sp_sym_resolve_native(struct native_names *nn, uint32_t frame_id,
			  const struct sp_frame *fr, struct sp_resolved_frame *rf)
{
	const struct sp_native_symbol *ns;
	size_t n;
	int err = sp_native_groups_symbolize(nn->groups, fr->module_id, fr->abs_ip, &ns, &n);
	if (err == SP_NATIVE_FAILED)
		nn->stats->native_backend_errors++;
	if (err || !n)
		return err == SP_NATIVE_FAILED ? 0 : err;
	const struct sp_native_symbol *outer = &ns[n - 1];
	if (!(rf->name = arena_copy(nn, outer->name)) ||
	    (outer->file && !(rf->file = arena_copy(nn, outer->file))))
		return -ENOMEM;
	rf->line = outer->line;
	rf->symbol_offset = outer->symbol_offset;
	rf->origin = SP_ORIGIN_ELF;
	if (rf->file && rf->line)
		nn->stats->frames_with_lines++;
	if (n == 1 || nn->no_inline)
		return 0;
	struct sp_resolved_frame *c = sp_sym_chain_alloc(nn->chains, n);
	if (!c)
		return -ENOMEM;
	for (size_t i = 0; i + 1 < n; i++) {
		c[i] = *rf;
		c[i].name = arena_copy(nn, ns[i].name);
		c[i].file = arena_copy(nn, ns[i].file);
		if (!c[i].name || (ns[i].file && !c[i].file))
			return -ENOMEM;
		c[i].line = ns[i].line;
		c[i].flags |= SP_RFRAME_INLINE;
		c[i].symbol_offset = 0;
	}
	c[n - 1] = *rf;
	sp_sym_chain_set(nn->chains, frame_id, c, n);
	return 0;
}
