# SPDX-License-Identifier: MIT
# The exports of off-CPU and wall time (docs/DESIGN.md, decision 12): speedscope weighs
# each interval (and with wall time each sample) by its nanoseconds, a profile per thread
# in time order; perf-script prints each interval as perf's own off-CPU sample
# ("offcpu-time", its period the nanoseconds off CPU) under a [blocked] or [preempted]
# frame.  wall_split's main thread spends 25/50/25 of its time in burn_cpu, sleep_nano and
# wait_pipe.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload wall_split

sp_record ws.spool --off-cpu -- "$WL" -t 2 >/dev/null || { fail "record --off-cpu exited $?: $(head -c 300 record.err)"; finish; }
main=$("$SP" dump ws.spool 2>/dev/null | awk '/^thread / { split($3, p, "="); split($4, t, "="); if (p[2] == t[2]) { print p[2]; exit } }')
[ -n "$main" ] || { fail "no main thread in the spool"; finish; }
# the report's totals: folded values are microseconds
folded_us() {
	"$SP" report --metric="$1" --format=folded ${2:+"$2"} ws.spool 2>/dev/null | awk '{ t += $NF } END { print t + 0 }'
}
off_us=$(folded_us off-cpu "")
main_wall_us=$(folded_us wall "--tid=$main")
dur_s=$("$SP" report --metric=wall --tid="$main" ws.spool 2>/dev/null | awk '/^Duration:/ { print $2; exit }')
nint=$("$SP" dump ws.spool 2>/dev/null | awk '/^off-cpu / { for (i = 1; i <= NF; i++) if ($i ~ /^duration_ns=/ && $i != "duration_ns=0") n++ } END { print n + 0 }')
info "spool: $nint intervals with time, $off_us us off CPU; main thread $main_wall_us us of wall time over $dur_s s"

# --- speedscope -----------------------------------------------------------------------
"$SP" report --metric=wall --format=speedscope -o wall.json ws.spool 2>ss.err || fail "speedscope --metric=wall: $(head -c 300 ss.err)"
"$SP" report --metric=off-cpu --format=speedscope -o off.json ws.spool 2>>ss.err || fail "speedscope --metric=off-cpu: $(head -c 300 ss.err)"
if command -v python3 >/dev/null 2>&1; then
	python3 - wall.json off.json "$main" >ss.check 2>&1 <<'PY'
import json, sys
wall, off, main = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
frames = [f["name"] for f in wall["shared"]["frames"]]
def profile(doc, tid):
    return [p for p in doc["profiles"] if p["name"].endswith("tid %s)" % tid)][0]
p = profile(wall, main)
assert p["unit"] == "nanoseconds", p["unit"]
total = sum(p["weights"])
assert p["endValue"] - p["startValue"] == total
share = {}
for s, w in zip(p["samples"], p["weights"]):
    for f in set(s):
        share[frames[f]] = share.get(frames[f], 0) + w
causes = sum(1 for s in p["samples"] if s and frames[s[-1]] in ("[blocked]", "[preempted]"))
print("main_ns", total)
for f in ("burn_cpu", "sleep_nano", "wait_pipe"):
    print(f, "%.1f" % (100.0 * share.get(f, 0) / total))
print("cause_leaves", causes)
offp = off["profiles"]
print("off_units", ",".join(sorted(set(q["unit"] for q in offp))))
print("off_ns", sum(sum(q["weights"]) for q in offp))
ofr = [f["name"] for f in off["shared"]["frames"]]
print("off_leaves_not_cause", sum(1 for q in offp for s in q["samples"] if not s or ofr[s[-1]] not in ("[blocked]", "[preempted]")))
PY
	val() { awk -v k="$1" '$1 == k { print $2 }' ss.check; }
	info "speedscope: $(tr '\n' ' ' <ss.check | cut -c1-300)"
	if [ -n "$(val main_ns)" ]; then
		ratio=$(awk -v n="$(val main_ns)" -v u="$main_wall_us" 'BEGIN { printf "%.4f", n / 1000 / u }')
		[ "$(awk -v r="$ratio" 'BEGIN { print (r > 0.999 && r < 1.001) ? 1 : 0 }')" = 1 ] &&
			ok "speedscope's main thread weighs its wall time in ns, as report --metric=wall ($ratio)" ||
			fail "speedscope's main thread: $(val main_ns) ns vs $main_wall_us us"
		r2=$(awk -v n="$(val main_ns)" -v d="$dur_s" 'BEGIN { printf "%.3f", n / 1e9 / d }')
		[ "$(awk -v r="$r2" 'BEGIN { print (r > 0.97 && r < 1.03) ? 1 : 0 }')" = 1 ] &&
			ok "the main thread's speedscope profile spans its life within 3% ($r2)" ||
			fail "the main thread's profile is $r2 of its span"
		for f in burn_cpu:25 sleep_nano:50 wait_pipe:25; do
			name=${f%:*} want=${f#*:} got=$(val "${f%:*}")
			[ "$(awk -v a="$got" -v b="$want" 'BEGIN { d = a - b; if (d < 0) d = -d; print (d <= 4) ? 1 : 0 }')" = 1 ] &&
				ok "speedscope wall: $name $got% of the main thread ($want +- 4)" ||
				fail "speedscope wall: $name $got%, not $want +- 4"
		done
		[ "$(val cause_leaves)" -gt 20 ] && ok "intervals end in a [blocked] or [preempted] frame ($(val cause_leaves))" ||
			fail "only $(val cause_leaves) samples end in a cause frame"
		[ "$(val off_units)" = nanoseconds ] && [ "$(val off_leaves_not_cause)" = 0 ] &&
			ok "speedscope --metric=off-cpu: nanoseconds, every sample an interval under its cause" ||
			fail "speedscope --metric=off-cpu: units '$(val off_units)', $(val off_leaves_not_cause) samples without a cause"
		[ "$(awk -v n="$(val off_ns)" -v u="$off_us" 'BEGIN { d = n / 1000 - u; if (d < 0) d = -d; print (u > 0 && d <= u * 0.001 + 100) ? 1 : 0 }')" = 1 ] &&
			ok "speedscope's off-CPU time is report --metric=off-cpu's ($(val off_ns) ns)" ||
			fail "speedscope's off-CPU time $(val off_ns) ns vs $off_us us"
	else
		fail "speedscope did not parse: $(head -c 400 ss.check)"
	fi
else
	skip "python3 not found in PATH (needed to parse the speedscope file)"
fi

# --- perf-script ------------------------------------------------------------------------
"$SP" report --metric=off-cpu --format=perf-script ws.spool >off.script 2>ps.err || fail "perf-script --metric=off-cpu: $(head -c 300 ps.err)"
n=$(grep -c ' offcpu-time:$' off.script)
ns=$(awk '/ offcpu-time:$/ { t += $(NF - 1) } END { printf "%.0f\n", t }' off.script)
other=$(grep -v '^	' off.script | grep -v '^$' | grep -vc ' offcpu-time:$')
causes=$(awk '/ offcpu-time:$/ { getline; if ($2 == "[blocked]" || $2 == "[preempted]") n++ } END { print n + 0 }' off.script)
info "perf-script --metric=off-cpu: $n offcpu-time samples, $ns ns, $causes under a cause frame"
[ "$n" = "$nint" ] && [ "$other" = 0 ] && ok "perf-script prints each of the $nint intervals as an offcpu-time sample" ||
	fail "perf-script: $n offcpu-time samples and $other other headers for $nint intervals"
[ "$causes" = "$n" ] && ok "each interval's first frame is [blocked] or [preempted]" || fail "$causes of $n intervals start with a cause frame"
[ "$(awk -v n="$ns" -v u="$off_us" 'BEGIN { d = n / 1000 - u; if (d < 0) d = -d; print (u > 0 && d <= u * 0.001 + 100) ? 1 : 0 }')" = 1 ] &&
	ok "the intervals' periods add up to the off-CPU time in ns ($ns)" || fail "periods $ns ns vs $off_us us"
awk '/ offcpu-time:$/ { iv = 1; next } /^$/ { iv = 0 } iv && / sleep_nano\+0x/ { n++ } END { exit !n }' off.script && ok "sleep_nano's sleeps are in perf-script's intervals" ||
	fail "no sleep_nano frame under an offcpu-time sample"
"$SP" report --metric=wall --format=perf-script ws.spool >wall.script 2>/dev/null
awk '/^[^\t].* [0-9]+\.[0-9]+: / { t = $0; sub(/:[^:]*:$/, "", t); n = split(t, f, " "); print f[n] }' wall.script >times
sorted=$(sort -c -n times 2>&1 && echo yes)
[ "$(grep -c ' cpu-clock:$' wall.script)" -gt 100 ] && [ "$(grep -c ' offcpu-time:$' wall.script)" = "$nint" ] && [ "$sorted" = yes ] &&
	ok "perf-script --metric=wall holds the samples and the intervals, in time order" ||
	fail "perf-script --metric=wall: $(grep -c ' cpu-clock:$' wall.script) samples, $(grep -c ' offcpu-time:$' wall.script) intervals, time order: $sorted"

# --- flame graph: every amount in the time metric's unit ----------------------------------
"$SP" report --metric=wall --format=flamegraph -o wall.svg ws.spool 2>/dev/null
head=$(grep -o 'y="62">[^<]*' wall.svg)
echo "$head" | grep -q 'Wall time: [0-9.]* ms ([0-9]* off-CPU intervals' && ! echo "$head" | grep -q 'Samples:' &&
	grep -q "function plural(n) { return (n / 1000).toFixed(1) + ' ms'; }" wall.svg && ! grep -q "' samples'" wall.svg &&
	ok "flame graph --metric=wall: the header and the frames' texts say ms, not samples" ||
	fail "flame graph --metric=wall: header '${head#*>}', plural: $(grep -o 'function plural[^}]*' wall.svg)"

# --- pprof: intervals under their cause frame, in nanoseconds of the metric ----------------
if command -v go >/dev/null 2>&1 && go tool pprof -h >/dev/null 2>&1; then
	"$SP" report --metric=off-cpu --format=pprof -o off.pb.gz ws.spool 2>/dev/null
	"$SP" report --metric=wall --format=pprof -o wall.pb.gz ws.spool 2>/dev/null
	leaves() { go tool pprof -traces "$1" 2>/dev/null | awk '/^ +[0-9.]+[a-zµ]*s +/ { n++; if ($2 == "[blocked]" || $2 == "[preempted]") c++ } END { print n + 0, c + 0 }'; }
	set -- $(leaves off.pb.gz) $(leaves wall.pb.gz)
	types=$(go tool pprof -raw off.pb.gz 2>/dev/null | grep -m1 '^samples/count')
	info "pprof: off-cpu $2 of $1 traces under a cause frame, wall $4 of $3; sample types: $types"
	[ "$1" -gt 0 ] && [ "$1" = "$2" ] && [ "${types%\[dflt\]}" = "samples/count off-cpu/nanoseconds" ] &&
		ok "pprof --metric=off-cpu: off-cpu/nanoseconds, every trace's leaf [blocked] or [preempted]" ||
		fail "pprof --metric=off-cpu: $2 of $1 traces under a cause frame, types '$types'"
	[ "$4" -gt 0 ] && [ "$4" -lt "$3" ] && ok "pprof --metric=wall: intervals under a cause frame, CPU samples apart ($4 of $3)" ||
		fail "pprof --metric=wall: $4 of $3 traces under a cause frame"
	# The period is one ns of the metric, not the CPU sampling period.
	for m in off wall; do
		per=$(go tool pprof -raw $m.pb.gz 2>/dev/null | awk '/^PeriodType:/ { t = $2 "/" $3 } /^Period:/ { p = $2 } END { print t, p }')
		want=$([ $m = off ] && echo off-cpu || echo wall)
		[ "$per" = "$want/nanoseconds 1" ] && ok "pprof --metric=$want: period type $want/nanoseconds, period 1" ||
			fail "pprof --metric=$want: period type and period '$per'"
	done
else
	skip "go not found in PATH (go tool pprof reads the pprof files)"
fi

# --- unprivileged, at perf_event_paranoid 2: blocked threads' stacks read while they sleep --
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null 2>&1 || ! id nobody >/dev/null 2>&1; then
	skip "not root, no setpriv or no user nobody: the unprivileged recording needs them"
	finish
fi
old=$(cat /proc/sys/kernel/perf_event_paranoid)
if [ "$old" != 2 ] && ! echo 2 2>/dev/null >/proc/sys/kernel/perf_event_paranoid; then
	skip "cannot set kernel.perf_event_paranoid to 2 (it is $old) for the unprivileged recording"
	finish
fi
mkdir -p nob && chmod 777 nob
as_nobody() { setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups "$@"; }
if as_nobody "$SP" --version >/dev/null 2>&1 && as_nobody test -x "$WL"; then
	(cd nob && as_nobody "$SP" record --off-cpu -o u.spool -- "$WL" -t 2 >/dev/null 2>u.err)
	rc=$?
else
	rc=skip
fi
[ "$old" = 2 ] || echo "$old" >/proc/sys/kernel/perf_event_paranoid
if [ "$rc" = skip ]; then
	skip "user nobody cannot run $SP or the workload (a directory on the path is private)"
	finish
fi
[ "$rc" = 0 ] || fail "record --off-cpu as nobody exited $rc: $(head -c 300 nob/u.err)"
# blocked (not preempted) time, and the part of it whose stack was read from the thread (flag 32)
set -- $("$SP" dump nob/u.spool 2>/dev/null | awk '/^off-cpu / {
	for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
	if (v["flags"] % 2 == 0) { b += v["duration_ns"]; if (int(v["flags"] / 32) % 2) s += v["duration_ns"] }
	else { p += v["duration_ns"]; if (int(v["flags"] / 64) % 2) ps += v["duration_ns"] }
} END { printf "%.0f %.0f %.0f %.0f\n", b / 1e6, s / 1e6, p / 1e6, ps / 1e6 }')
blocked_ms=${1:-0} read_ms=${2:-0} pre_ms=${3:-0} pre_sampled_ms=${4:-0}
share=$(pct "$read_ms" "$blocked_ms")
info "as nobody at paranoid 2: ${read_ms} of ${blocked_ms} ms blocked or sleeping with a stack read from the thread ($share%); ${pre_sampled_ms} of ${pre_ms} ms preempted with the last CPU sample's stack"
[ "$(num_ge "$share" 80)" = 1 ] && ok "unprivileged: $share% of the blocked time has its stack (read while blocked)" ||
	fail "unprivileged: only $share% of the blocked time has a stack: $(head -c 300 nob/u.err)"
"$SP" report --metric=off-cpu nob/u.spool 2>/dev/null | grep -q 'kernel sampling denied: stacks read while blocked' &&
	ok "the report's header says the stacks were read from the blocked threads" ||
	fail "no header line for stacks read while blocked"
umain=$("$SP" dump nob/u.spool 2>/dev/null | awk '/^thread / { split($3, p, "="); split($4, t, "="); if (p[2] == t[2]) { print p[2]; exit } }')
"$SP" report --metric=off-cpu --format=folded --tid="$umain" nob/u.spool >u.folded 2>/dev/null
set -- $(folded_share u.folded '^_start;.*;main;sleep_nano;.*\[blocked\]$')
sl=$1
set -- $(folded_share u.folded '^_start;.*;main;wait_pipe;.*\[blocked\]$')
wp=$1
ssh=$(pct "$sl" $((sl + wp)))
info "unprivileged main thread: sleep_nano $sl us, wait_pipe $wp us under complete stacks ($ssh% sleep_nano; 66.7 expected)"
[ "$(awk -v s="$ssh" 'BEGIN { print (s >= 58 && s <= 75) ? 1 : 0 }')" = 1 ] && [ "$sl" -gt 0 ] &&
	ok "unprivileged: complete stacks split the blocked time 2:1 between sleep_nano and wait_pipe ($ssh%)" ||
	fail "unprivileged: sleep_nano $sl us, wait_pipe $wp us ($ssh%)"
# Preempted intervals take the stack of the thread's last CPU sample on that stretch (flag 64):
# with them the unprivileged wall profile splits as root's does.
"$SP" report --metric=wall --format=folded --tid="$umain" nob/u.spool >uw.folded 2>/dev/null
for f in burn_cpu:25 sleep_nano:50 wait_pipe:25; do
	name=${f%:*} want=${f#*:}
	set -- $(folded_share uw.folded "^_start;.*;main;$name(;|\$)")
	got=$(pct "$1" "$2")
	[ "$(awk -v a="$got" -v b="$want" 'BEGIN { d = a - b; if (d < 0) d = -d; print (d <= 4) ? 1 : 0 }')" = 1 ] &&
		ok "unprivileged wall: $name $got% of the main thread under complete stacks ($want +- 4)" ||
		fail "unprivileged wall: $name $got%, not $want +- 4"
done
finish
