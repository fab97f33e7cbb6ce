/* SPDX-License-Identifier: MIT */
/* sp_report_write: aggregate a spool once, then hand it to the chosen view or exporter. */
#include "report/report.h"

#include "report/annotate.h"

#include <errno.h>

int sp_report_write(const struct sp_spool *s, struct sp_symbolizer *sym,
		    const struct sp_report_opts *opts, FILE *out)
{
	if (!s || !opts || !out)
		return -SP_E_BAD_ARG;
	if (opts->format > SP_REPORT_JSON)
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
	/* The table by source line is made of the functions told apart by line. */
	struct sp_report_opts by_line;
	if (opts->by_line && opts->format == SP_REPORT_TEXT) {
		by_line = *opts;
		by_line.lines = true;
		opts = &by_line;
	}
	err = sp_agg_build(&agg, s, sym, opts);
	if (!err) {
		switch (opts->format) {
		case SP_REPORT_TEXT:
			err = opts->by_line ? sp_report_lines(&agg, opts, out)
					    : sp_report_text(&agg, opts, out);
			break;
		case SP_REPORT_FOLDED:
			err = sp_report_folded(&agg, opts, out);
			break;
		case SP_REPORT_PPROF:
			err = sp_export_pprof(&agg, opts, out);
			break;
		case SP_REPORT_SPEEDSCOPE:
			err = sp_export_speedscope(&agg, opts, out);
			break;
		case SP_REPORT_PERF_SCRIPT:
			err = sp_export_perf_script(&agg, out);
			break;
		case SP_REPORT_FLAMEGRAPH:
			err = sp_export_flamegraph(&agg, opts, out);
			break;
		case SP_REPORT_JSON:
			err = sp_report_json(&agg, opts, out);
			break;
		default:
			err = -SP_E_BAD_ARG;
			break;
		}
	}
	sp_agg_release(&agg);
	sp_symbolizer_free(own);
	if (!err && fflush(out))
		err = errno ? -errno : -EIO;
	else if (!err && ferror(out))
		err = -EIO; /* an earlier write failed; its errno is gone */
	return err;
}
