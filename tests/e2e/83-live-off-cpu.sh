# SPDX-License-Identifier: MIT
# Off-CPU and wall time live (docs/DESIGN.md, decision 12): top --off-cpu --batch and
# report --follow --metric=off-cpu|wall on wall_split, whose main thread sleeps 40 ms in
# sleep_nano every 80 ms.  The tables count seconds and say so; their totals are the
# spool's, as report --metric counts it afterwards.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload wall_split

# last_table FILE HEADER-ERE: the last table of FILE (from its last header line on).
last_table() {
	awk -v re="$2" '$0 ~ re { buf = "" } { buf = buf $0 "\n" } END { printf "%s", buf }' "$1"
}
# total_s TABLE FUNC: the function's total seconds since the start (the 4th column).
total_s() {
	awk -v f="$2" '$5 == f { print $4; exit }' "$1"
}
# report_ms SPOOL METRIC: the off-CPU (or wall) total of report --metric in ms, from the
# folded values (microseconds).
report_ms() {
	"$SP" report --metric="$2" --format=folded "$1" 2>/dev/null |
		awk '{ t += $NF } END { printf "%.1f\n", t / 1000 }'
}
# within_pct A B PCT: "1" when A is within PCT percent of B.
within_pct() {
	awk -v a="$1" -v b="$2" -v p="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; print (b > 0 && d <= b * p / 100) ? 1 : 0 }'
}

# --- top --off-cpu --batch ----------------------------------------------------------------
with_timeout 60 "$SP" top --off-cpu --batch -d 1 --sort total --rows 40 -o t.spool -- "$WL" -t 3 \
	>top.out 2>top.err
rc=$?
[ "$rc" = 0 ] && ok "top --off-cpu --batch exits 0 when the command does" ||
	fail "top --off-cpu exited $rc: $(head -c 300 top.err)"
n=$(grep -c '^--- stackpulse top: off-CPU time in seconds' top.out)
[ "$n" -ge 2 ] && ok "every table's header says it counts off-CPU time in seconds ($n tables)" ||
	fail "top --off-cpu headers: $(grep '^---' top.out | head -n 3 | tr '\n' '|')"
grep -q '^  Self s Total s  Self s Total s  Function' top.out &&
	ok "the columns are seconds (Self s, Total s)" || fail "no 'Self s Total s' columns: $(sed -n 3p top.out)"
last_table top.out '^--- stackpulse top' >top.last
head -n 1 top.last | grep -q 'recording over' && ok "the last table is the finished recording's" ||
	fail "no final table: $(head -n 1 top.last)"
sleep_s=$(total_s top.last sleep_nano)
live_s=$(head -n 1 top.last | sed -n 's/.* \([0-9.]*\) s off CPU.*/\1/p')
info "top --off-cpu's last header: $(head -n 1 top.last); sleep_nano ${sleep_s:-absent} s"
# 40 ms of every 80 ms for about 3 s: 1.5 s (0.5 s leaves room for a slow start under ASan)
[ "$(num_ge "${sleep_s:-0}" 0.5)" = 1 ] &&
	ok "the sleeping function sleep_nano holds ${sleep_s} s of off-CPU time" ||
	fail "sleep_nano in top --off-cpu: ${sleep_s:-absent} s: $(sed -n 1,8p top.last | tr '\n' '|')"
spool_ms=$(report_ms t.spool off-cpu)
[ "$(within_pct "$(awk -v s="${live_s:-0}" 'BEGIN { print s * 1000 }')" "$spool_ms" 1)" = 1 ] &&
	ok "top's off-CPU total (${live_s} s) is the spool's (${spool_ms} ms in report --metric=off-cpu)" ||
	fail "top's off-CPU total ${live_s:-?} s vs the spool's ${spool_ms} ms"
# burn_cpu only leaves the CPU when preempted: its time is within the preempted total.
burn=$(awk '$5 == "burn_cpu" { print $3; exit }' top.last)
pre_s=$(head -n 1 top.last | sed -n 's/.*(\([0-9.]*\) s preempted.*/\1/p')
[ "$(awk -v b="${burn:-0}" -v p="${pre_s:-0}" 'BEGIN { print (b <= p + 0.05) ? 1 : 0 }')" = 1 ] &&
	ok "burn_cpu's off-CPU time (${burn:-0} s) is within the preempted time (${pre_s} s)" ||
	fail "burn_cpu holds ${burn} s of off-CPU time, more than the ${pre_s} s preempted"

# --- report --follow --metric=off-cpu and wall on a spool being written ---------------------
"$SP" record -q --off-cpu -o f.spool -- "$WL" -t 3 >/dev/null 2>rec.err & rec=$!; track_pid $rec
sleep 0.5
with_timeout 60 "$SP" report --follow=0.5 --metric=off-cpu --sort total --rows 40 f.spool \
	>follow.out 2>follow.err
rc=$?
wait $rec
n=$(grep -c '^--- f.spool: off-CPU time' follow.out)
last_table follow.out '^--- f.spool' >follow.last
info "report --follow --metric=off-cpu: exit $rc, $n tables; last: $(head -n 1 follow.last)"
[ "$rc" = 0 ] && [ "$n" -ge 3 ] && head -n 1 follow.last | grep -q 'recording over' &&
	ok "report --follow --metric=off-cpu prints off-CPU tables until the recording is over ($n)" ||
	fail "report --follow --metric=off-cpu: exit $rc, $n tables: $(head -c 300 follow.err)"
grep -q 'Self s Total s' follow.out && ok "--follow's off-CPU columns are seconds" ||
	fail "no seconds columns in --follow --metric=off-cpu"
fsleep=$(total_s follow.last sleep_nano)
[ "$(num_ge "${fsleep:-0}" 0.5)" = 1 ] && ok "--follow shows sleep_nano sleeping ${fsleep} s" ||
	fail "sleep_nano in --follow --metric=off-cpu: ${fsleep:-absent}"
ftotal=$(head -n 1 follow.last | sed -n 's/.*off-CPU time \([0-9.]*\) s.*/\1/p')
spool_ms=$(report_ms f.spool off-cpu)
[ "$(within_pct "$(awk -v s="${ftotal:-0}" 'BEGIN { print s * 1000 }')" "$spool_ms" 1)" = 1 ] &&
	ok "--follow's off-CPU total (${ftotal} s) is report --metric=off-cpu's (${spool_ms} ms)" ||
	fail "--follow's off-CPU total ${ftotal:-?} s vs the report's ${spool_ms} ms"

# Wall time of the finished spool: both threads live the whole run, so about twice its length.
with_timeout 60 "$SP" report --follow --metric=wall --rows 5 f.spool >wall.out 2>wall.err
wtotal=$(sed -n 's/^--- f.spool: wall time \([0-9.]*\) s.*/\1/p' wall.out | tail -n 1)
wall_ms=$(report_ms f.spool wall)
info "report --follow --metric=wall: $(grep '^---' wall.out | tail -n 1); report --metric=wall: $wall_ms ms"
[ "$(within_pct "$(awk -v s="${wtotal:-0}" 'BEGIN { print s * 1000 }')" "$wall_ms" 1)" = 1 ] &&
	ok "--follow --metric=wall counts the wall time report --metric=wall does (${wtotal} s)" ||
	fail "--follow --metric=wall: ${wtotal:-?} s vs the report's ${wall_ms} ms: $(head -c 300 wall.err)"

# A spool without intervals: a clear error, before any table.
"$SP" record -q -o cpu.spool -- "$WL" -t 0.3 >/dev/null 2>&1
"$SP" report --follow --metric=off-cpu cpu.spool >nooff.out 2>nooff.err
st=$?
[ $st -ne 0 ] && grep -q -- '--off-cpu' nooff.err && [ ! -s nooff.out ] &&
	ok "--follow --metric=off-cpu on a spool without intervals says to record with --off-cpu" ||
	fail "--follow --metric=off-cpu without intervals: exit $st, $(head -c 200 nooff.err)"
finish
