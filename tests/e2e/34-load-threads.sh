# SPDX-License-Identifier: MIT
# Load: 1,000 threads alive together (many_threads: each spins 10 ms of CPU while all
# exist).  Recording must not crash and must keep its counters honest (written and
# lost samples as the spool holds them).  Prints the distinct tids sampled, lost
# samples and the recorder's peak memory.  With --realtime (root) the recorder
# drains the rings in time: under 1% lost, and most threads sampled.
# e2e: alone (a load test: it counts lost samples)
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload many_threads
N=1000

start=$(date +%s)
with_timeout 90 "$SP" record -F 999 -o many.spool -- "$WL" -n $N -m 10 >many.out 2>many.err
rc=$?
secs=$(($(date +%s) - start))
sed 's/^/# /' many.err | head -n 12
[ $rc -eq 0 ] && ok "record of $N threads exits 0 (in $secs s)" || fail "record of $N threads exited $rc after $secs s"
[ $secs -le 90 ] && ok "recording $N threads took $secs s (bound 90 s)" || fail "recording $N threads took $secs s"
grep -q "$N threads joined" many.out && ok "the workload ran all $N threads" || fail "the workload did not run $N threads: $(head -c 200 many.out)"
# distinct_tids DUMP: how many threads have samples in a spool's dump.
distinct_tids() {
	awk '
	function val(k,   i) { for (i = 2; i <= NF; i++) if (index($i, k "=") == 1) return substr($i, length(k) + 2); return "" }
	$1 == "thread" { tid[val("index")] = val("tid") }
	$1 == "sample" { seen[tid[val("thread")]] = 1 }
	END { n = 0; for (t in seen) n++; print n }' "$1"
}
with_timeout 60 "$SP" dump many.spool >many.dump 2>/dev/null
tids=$(distinct_tids many.dump)
# How many threads the fair scheduler leaves sampled depends on how long it keeps
# the recorder waiting (samples lost): the share is checked with --realtime below.
info "$tids distinct tids sampled of $N worker threads (+ main); peak memory $(record_peak_mib many.err) MiB"
[ "$tids" -gt 0 ] && ok "samples from $tids distinct threads" || fail "no thread has samples"
honest_counts "$N threads" many.spool many.err
with_timeout 60 "$SP" report many.spool >many.txt 2>many.rerr && [ "$(report_top_function many.txt)" = many_leaf ] &&
	ok "report works: many_leaf on top" ||
	fail "report: top function '$(report_top_function many.txt)': $(head -c 200 many.rerr)"

# The fair scheduler lets 1,000 busy threads keep the recorder waiting (samples are
# lost above); SCHED_FIFO lets it drain at once.
if [ "$(id -u)" != 0 ]; then
	skip "--realtime: needs root"
else
	with_timeout 90 "$SP" record --realtime 10 -F 999 -o rt.spool -- "$WL" -n $N -m 10 >/dev/null 2>rt.err
	rc=$?
	written=$(summary_number rt.err written)
	lost=$(sed -n 's/.*sample events), \([0-9][0-9]*\) lost.*/\1/p' rt.err | head -n 1)
	info "--realtime 10: ${written:-?} written, ${lost:-?} lost ($(pct "${lost:-0}" $((${written:-0} + ${lost:-0})))%), peak memory $(record_peak_mib rt.err) MiB"
	[ $rc -eq 0 ] && [ -n "$lost" ] && [ $((lost * 100)) -lt $((written + lost)) ] &&
		ok "--realtime: under 1% of the samples lost with $N busy threads" ||
		fail "--realtime: exit $rc, ${lost:-?} of $((${written:-0} + ${lost:-0})) samples lost"
	with_timeout 60 "$SP" dump rt.spool >rt.dump 2>/dev/null
	tids=$(distinct_tids rt.dump)
	[ "$tids" -ge $((N * 8 / 10)) ] && ok "--realtime: samples from most threads: $tids distinct tids (>= 80% of $N)" ||
		fail "--realtime: samples from only $tids distinct tids of $N threads"
	honest_counts "realtime" rt.spool rt.err
fi
finish
