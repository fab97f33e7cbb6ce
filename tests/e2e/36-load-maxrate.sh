# SPDX-License-Identifier: MIT
# Load: 8 processes with 4 busy threads each, sampled at the kernel's maximum rate
# (kernel.perf_event_max_sample_rate).  Samples will be lost (each reserves ~33 KiB
# of ring); recording must not crash, must count and report the lost samples
# honestly (record's summary = the spool's lost records = its trailer), and report
# must read the result.  Prints samples, lost, the recorder's CPU and peak memory.
# With --realtime (root) the recorder keeps up: under 5% lost.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload threads
THREADS=$WL
need_workload forker
FORKER=$WL
MAX=$(cat /proc/sys/kernel/perf_event_max_sample_rate 2>/dev/null)
[ -n "$MAX" ] || skip_all "kernel.perf_event_max_sample_rate is not readable"

start=$(date +%s)
with_timeout 90 "$SP" record -F "$MAX" -o max.spool -- "$FORKER" -n 8 -j 8 -x "$THREADS" -n 4 -t 1 \
	>max.out 2>max.err
rc=$?
secs=$(($(date +%s) - start))
sed 's/^/# /' max.err | head -n 12
[ $rc -eq 0 ] && ok "record at -F $MAX of 8 x 4 threads exits 0 (in $secs s)" ||
	fail "record at -F $MAX exited $rc after $secs s"
[ $secs -le 90 ] && ok "recording took $secs s (bound 90 s)" || fail "recording took $secs s"
grep -q '8 children, 0 failed' max.out && ok "the workload ran its 8 processes" ||
	fail "the workload did not run its 8 processes: $(tail -n 1 max.out)"
honest_counts "max rate" max.spool max.err
written=$(summary_number max.err written)
lost=$(sed -n 's/.*sample events), \([0-9][0-9]*\) lost.*/\1/p' max.err | head -n 1)
info "-F $MAX: ${written:-?} samples written, ${lost:-?} lost ($(pct "${lost:-0}" $((${written:-0} + ${lost:-0})))% of all), peak memory $(record_peak_mib max.err) MiB"
if [ "${lost:-0}" -gt 0 ]; then
	grep -q 'samples were lost: lower -F' max.err && ok "record says samples were lost and what to do" ||
		fail "record does not explain the lost samples"
fi
with_timeout 60 "$SP" dump max.spool >max.dump 2>/dev/null
info "$(pid_samples max.dump | wc -l) pids with samples"
with_timeout 120 "$SP" report max.spool >max.txt 2>max.rerr
rc=$?
[ $rc -eq 0 ] && [ "$(report_top_function max.txt)" = worker_leaf ] && ok "report works: worker_leaf on top" ||
	fail "report exit $rc, top function '$(report_top_function max.txt)': $(head -c 200 max.rerr)"
grep -q "lost $lost\|$lost lost" max.txt && ok "report shows the $lost lost samples" ||
	fail "report does not show the $lost lost samples: $(grep -i lost max.txt | head -n 2)"

if [ "$(id -u)" != 0 ]; then
	skip "--realtime: needs root"
else
	with_timeout 90 "$SP" record --realtime 10 -F "$MAX" -o rt.spool -- "$FORKER" -n 8 -j 8 -x "$THREADS" -n 4 -t 1 \
		>/dev/null 2>rt.err
	rc=$?
	written=$(summary_number rt.err written)
	lost=$(sed -n 's/.*sample events), \([0-9][0-9]*\) lost.*/\1/p' rt.err | head -n 1)
	info "--realtime 10 -F $MAX: ${written:-?} written, ${lost:-?} lost ($(pct "${lost:-0}" $((${written:-0} + ${lost:-0})))%), $(grep -o 'recorder CPU.*' rt.err)"
	[ $rc -eq 0 ] && [ -n "$lost" ] && [ $((lost * 20)) -lt $((written + lost)) ] &&
		ok "--realtime: under 5% of the samples lost at -F $MAX" ||
		fail "--realtime: exit $rc, ${lost:-?} of $((${written:-0} + ${lost:-0})) samples lost"
	honest_counts "realtime" rt.spool rt.err
fi
finish
