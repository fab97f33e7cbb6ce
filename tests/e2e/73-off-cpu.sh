# SPDX-License-Identifier: MIT
# record --off-cpu and report --metric (docs/DESIGN.md, decision 12).  wall_split's main
# thread loops: 20 ms burning CPU in burn_cpu, 40 ms in nanosleep (sleep_nano), 20 ms
# blocked on a pipe (wait_pipe): its wall time is 25/50/25, and it adds up to its life.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload wall_split

# share FOLDED ERE: the ERE's share of the folded total, in percent.
share() {
	set -- $(folded_share "$1" "$2")
	pct "$1" "$2"
}
# within A B POINTS: "1" when |A - B| <= POINTS.
within() {
	awk -v a="$1" -v b="$2" -v d="$3" 'BEGIN { x = a - b; if (x < 0) x = -x; print (x <= d) ? 1 : 0 }'
}

sp_record ws.spool --off-cpu -- "$WL" -t 2 >/dev/null || fail "record --off-cpu exited $?: $(head -c 300 record.err)"
main=$("$SP" dump ws.spool 2>/dev/null | awk '/^thread / { split($3, p, "="); split($4, t, "="); if (p[2] == t[2]) { print p[2]; exit } }')
[ -n "$main" ] || { fail "no main thread in the spool"; finish; }
n=$("$SP" dump ws.spool 2>/dev/null | grep -c '^off-cpu ')
[ "$n" -gt 50 ] && ok "the spool holds $n off-CPU intervals" || fail "only $n off-CPU intervals recorded"
said=$(awk '/ off-CPU intervals? written, [0-9]+ incomplete/ { print $1 }' record.err)
[ "$said" = "$n" ] && grep -q 'sample events; the others context switches' record.err &&
	ok "record's summary gives the $n intervals written and what the other sample events were" ||
	fail "record's summary: '$said' intervals for $n: $(grep -E 'written' record.err | tr '\n' ' ')"
bytes=$(wc -c <ws.spool)
info "spool: $bytes bytes for $n intervals and $("$SP" dump ws.spool | grep -c '^sample ') samples"

"$SP" report --metric=wall --format=folded --tid="$main" ws.spool >wall.folded 2>wall.err ||
	fail "report --metric=wall failed: $(head -c 300 wall.err)"
b=$(share wall.folded ';burn_cpu(;|$)') s=$(share wall.folded ';sleep_nano(;|$)') p=$(share wall.folded ';wait_pipe(;|$)')
info "main thread's wall time: burn_cpu $b%, sleep_nano $s%, wait_pipe $p% (expected 25/50/25)"
[ "$(within "$b" 25 3)" = 1 ] && ok "wall: burn_cpu $b% (25 +- 3)" || fail "wall: burn_cpu $b%, not 25 +- 3"
[ "$(within "$s" 50 3)" = 1 ] && ok "wall: sleep_nano $s% (50 +- 3)" || fail "wall: sleep_nano $s%, not 50 +- 3"
[ "$(within "$p" 25 3)" = 1 ] && ok "wall: wait_pipe $p% (25 +- 3)" || fail "wall: wait_pipe $p%, not 25 +- 3"

# The main thread's wall time adds up to its life (the report's span of it), within 3%.
set -- $(folded_share wall.folded '.')
total_us=$2
"$SP" report --metric=wall --tid="$main" ws.spool >wall.txt 2>/dev/null
dur_s=$(awk '/^Duration:/ { print $2; exit }' wall.txt)
ratio=$(awk -v t="$total_us" -v d="$dur_s" 'BEGIN { if (d + 0 == 0) print 0; else printf "%.3f\n", t / 1e6 / d }')
info "main thread: $total_us us of wall time over a span of $dur_s s (ratio $ratio)"
[ "$(within "$ratio" 1 0.03)" = 1 ] && ok "the main thread's wall time is its span within 3% ($ratio)" ||
	fail "the main thread's wall time is $ratio of its span"
grep -q '^  Self%  Total%   Time ms' wall.txt && ok "the text table counts time in ms" || fail "no 'Time ms' column: $(sed -n '/Self%/p' wall.txt)"

# Off-CPU time: burn_cpu only loses the CPU when preempted (the header says how much).
"$SP" report --metric=off-cpu --format=folded --tid="$main" ws.spool >off.folded 2>/dev/null
"$SP" report --metric=off-cpu --tid="$main" ws.spool >off.txt 2>/dev/null
ob=$(share off.folded ';burn_cpu(;|$)')
pre=$(awk -v m="$main" 'index($0, "  " m "/" m " ") == 1 {
	for (i = 1; i <= NF; i++) if ($i == "preempted") { v = $(i + 1); sub(/\),?$/, "", v); print v; exit } }' off.txt)
off=$(awk -v m="$main" 'index($0, "  " m "/" m " ") == 1 { for (i = 1; i <= NF; i++) if ($i == "off-CPU") { print $(i + 1); exit } }' off.txt)
pre_pct=$(pct "${pre:-0}" "${off:-0}")
info "off-CPU: burn_cpu $ob% of the main thread's off-CPU time; preempted $pre of $off ms ($pre_pct%)"
[ "$(awk -v b="$ob" -v p="$pre_pct" 'BEGIN { print (b < 2 || b <= p + 2) ? 1 : 0 }')" = 1 ] &&
	ok "--metric=off-cpu: burn_cpu $ob% (under 2%, or within what preemption explains: $pre_pct%)" ||
	fail "--metric=off-cpu: burn_cpu has $ob% of off-CPU time, more than preemption's $pre_pct% + 2"
grep -q '^Off-CPU: .* intervals' off.txt && ok "the header gives off-CPU totals" || fail "no Off-CPU header line"
grep -q '^Metric:     off-CPU time (ms): [0-9.]* ms in [0-9]* intervals' off.txt &&
	grep -q '^Metric:     wall time (ms): [0-9.]* ms in [0-9]* CPU samples and [0-9]* off-CPU intervals' wall.txt &&
	grep -q '^Empty:      .* of the time had no stack ([0-9.]* ms)' off.txt &&
	ok "the header names the metric and its unit, with its intervals" ||
	fail "header: $(grep -E '^(Metric|Empty):' off.txt wall.txt | tr '\n' ' ')"
# Blocked or sleeping time is apart from preempted time: a [blocked] or [preempted] leaf.
bb=$(share off.folded ';burn_cpu;.*\[blocked\]$')
[ "$(awk -v b="$bb" 'BEGIN { print (b < 2) ? 1 : 0 }')" = 1 ] &&
	ok "--metric=off-cpu: burn_cpu blocked or sleeping $bb% (under 2%)" ||
	fail "--metric=off-cpu: burn_cpu blocked or sleeping $bb% of off-CPU time"
sn=$(share off.folded ';sleep_nano;.*\[blocked\]$')
[ "$(num_ge "$sn" 40)" = 1 ] && ok "sleep_nano's time is under a [blocked] frame ($sn%)" ||
	fail "sleep_nano's time under [blocked]: $sn%"

# Two such programs on one CPU: one waits while the other burns, preempted.
if command -v taskset >/dev/null 2>&1; then
	sp_record two.spool --off-cpu -- taskset -c 0 sh -c "\"$WL\" -t 1 & \"$WL\" -t 1; wait" >/dev/null ||
		fail "record --off-cpu of two programs on CPU 0 exited $?: $(head -c 300 record.err)"
	"$SP" report --metric=off-cpu two.spool >two.txt 2>/dev/null
	pre2=$(awk '/^Off-CPU:/ { for (i = 1; i <= NF; i++) if ($i == "preempted;") { print $(i - 2); exit } }' two.txt)
	info "two programs on CPU 0: $(grep '^Off-CPU:' two.txt)"
	[ "$(num_ge "${pre2:-0}" 1)" = 1 ] && ok "preempted time appears when two programs share a CPU ($pre2 ms)" ||
		fail "no preempted time with two programs on CPU 0: $(grep '^Off-CPU:' two.txt)"
	"$SP" report --metric=off-cpu --format=folded two.spool >two.folded 2>/dev/null
	set -- $(folded_share two.folded '\[preempted\]$')
	[ "${1:-0}" -gt 0 ] && ok "[preempted] frames hold $1 us in the folded stacks" ||
		fail "no [preempted] frame in the folded stacks of two programs on CPU 0"
else
	skip "taskset not found: the shared-CPU check needs it"
fi

# --metric on a spool without intervals: a clear error.
sp_record cpu.spool -- "$WL" -t 0.2 >/dev/null
"$SP" report --metric=off-cpu cpu.spool >/dev/null 2>err.txt
st=$?
[ $st -ne 0 ] && grep -q -- '--off-cpu' err.txt && ok "--metric=off-cpu on a spool without intervals says to record with --off-cpu" ||
	fail "--metric=off-cpu without intervals: exit $st, $(head -c 200 err.txt)"

# Unprivileged, at perf_event_paranoid 2: intervals, their times and causes (the kernel's
# switch sample is denied; the stacks read from the threads instead are e2e 84's).
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1 && id nobody >/dev/null 2>&1 &&
	[ "$(cat /proc/sys/kernel/perf_event_paranoid)" -le 2 ]; then
	mkdir -p nob && chmod 777 nob
	if setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups "$SP" --version >/dev/null 2>&1 &&
		setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups test -x "$WL"; then
		(cd nob && setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups \
			"$SP" record --off-cpu -o u.spool -- "$WL" -t 1 >/dev/null 2>u.err)
		un=$("$SP" dump nob/u.spool 2>/dev/null | grep -c '^off-cpu ')
		info "unprivileged (paranoid $(cat /proc/sys/kernel/perf_event_paranoid)): $un intervals; $(grep '^Off-CPU:' -A1 <<EOT
$("$SP" report --metric=wall nob/u.spool 2>/dev/null)
EOT
)"
		[ "$un" -gt 20 ] && ok "unprivileged record --off-cpu records $un intervals" ||
			fail "unprivileged record --off-cpu: $un intervals; $(head -c 300 nob/u.err)"
	else
		skip "user nobody cannot run $SP or the workload (a directory on the path is private)"
	fi
else
	skip "not root, no setpriv or no user nobody: the unprivileged check needs them"
fi
finish
