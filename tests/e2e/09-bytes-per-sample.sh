# SPDX-License-Identifier: MIT
# Bytes per sample: chain4 for 10 s at 999 Hz, spool size / samples beside
# perf.data size / samples under perf record --call-graph dwarf -F 999.  A figure,
# not a timing test: only spool bytes per sample < 100 is asserted.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload chain4

SECONDS_RUN=${E2E_BPS_SECONDS:-10}
if ! sp_record c.spool -F 999 -- "$WL" -t "$SECONDS_RUN" >/dev/null; then
	fail "record failed: $(head -c 300 record.err)"
	finish
fi
with_timeout 60 "$SP" report --format=folded c.spool >c.folded 2>/dev/null
n=$(folded_total c.folded)
bytes=$(wc -c <c.spool)
if [ "$n" -eq 0 ]; then
	fail "no samples in the spool"
	finish
fi
bps=$(awk -v b="$bytes" -v n="$n" 'BEGIN { printf "%.1f", b / n }')
info "stackpulse: $bytes bytes / $n samples = $bps bytes per sample"
[ "$(num_ge 100 "$bps")" = 1 ] && [ "$bps" != 100.0 ] && ok "spool uses $bps bytes per sample (< 100)" ||
	fail "spool uses $bps bytes per sample (>= 100)"

if ! command -v perf >/dev/null 2>&1; then
	skip "perf not found in PATH: no side-by-side figure"
	finish
fi
if with_timeout 120 perf record -q -o perf.data --call-graph dwarf -F 999 -- "$WL" -t "$SECONDS_RUN" >/dev/null 2>perf.err; then
	# perf report rounds ("# Samples: 9K"): count samples exactly, one line each.
	pn=$(perf script -i perf.data -G -F tid 2>/dev/null | grep -c .)
	pbytes=$(wc -c <perf.data)
	pbps=$(awk -v b="$pbytes" -v n="$pn" 'BEGIN { if (n > 0) printf "%.1f", b / n; else print "n/a" }')
	info "perf --call-graph dwarf: $pbytes bytes / $pn samples = $pbps bytes per sample"
	info "ratio perf/stackpulse: $(awk -v a="$pbps" -v b="$bps" 'BEGIN { if (b > 0) printf "%.0fx", a / b }')"
else
	skip "perf record failed, no side-by-side figure: $(head -n 1 perf.err)"
fi
finish
