/* SPDX-License-Identifier: MIT */
/* sp_report_write: aggregate a spool once, then hand it to the chosen view. */
#include "report_internal.h"

#include <errno.h>

int sp_report_write(const struct sp_spool *s, struct sp_symbolizer *sym,
		    const struct sp_report_opts *opts, FILE *out)
{
	if (!s || !opts || !out)
		return -SP_E_BAD_ARG;
	if (opts->format != SP_REPORT_TEXT && opts->format != SP_REPORT_FOLDED)
		return -SP_E_BAD_ARG;
	/* A caller without a symbolizer gets a default one for this report. */
	struct sp_symbolizer *own = NULL;
	int err;
	if (!sym) {
		err = sp_symbolizer_new(s, NULL, &own);
		if (err)
			return err;
		sym = own;
	}
	struct sp_agg agg;
	err = sp_agg_build(&agg, s, sym);
	if (!err)
		err = opts->format == SP_REPORT_TEXT ? sp_report_text(&agg, opts, out)
						     : sp_report_folded(&agg, out);
	sp_agg_release(&agg);
	sp_symbolizer_free(own);
	if (!err && fflush(out))
		err = errno ? -errno : -EIO;
	else if (!err && ferror(out))
		err = -EIO; /* an earlier write failed; its errno is gone */
	return err;
}
