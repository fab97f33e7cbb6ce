# SPDX-License-Identifier: MIT
# report's views and filters on real recordings: --tree, --inverted, --group-by, the
# sample filters (every format), --diff, --format=json, and usage errors.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload chain4
CHAIN4=$WL
need_workload forker
FORKER=$WL
need_workload threads
THREADS=$WL

sp_record c.spool -F 999 -- "$CHAIN4" -t 2 >/dev/null || { fail "record chain4 failed: $(head -c 300 record.err)"; finish; }
sp_record f.spool -F 999 -- "$FORKER" -n 2 -m 400 -p 400 >/dev/null || { fail "record forker failed: $(head -c 300 record.err)"; finish; }
sp_record t.spool -F 999 -- "$THREADS" -n 3 -t 1 >/dev/null || { fail "record threads failed: $(head -c 300 record.err)"; finish; }

report() { with_timeout 120 "$SP" report "$@" 2>report.err; }

# --- the top-down tree: chain4's chain, each callee one level deeper than its caller ----
report --tree c.spool >tree.txt || fail "report --tree failed: $(head -c 300 report.err)"
# "Total% Self% <indent>name (module)": the indent of each of level1..level4.
indents=$(awk '/^Call tree/ { t = 1; next } t && /^$/ { t = 0 }
	t && $3 ~ /^level[1-4]$/ { i = index($0, $3) - 17; printf "%s:%d ", $3, i }' tree.txt)
info "tree indents: $indents"
if echo "$indents" | awk '{ for (i = 1; i <= 4; i++) { split($i, p, ":"); if (p[1] != "level" i) exit 1; d[i] = p[2] }
		for (i = 2; i <= 4; i++) if (d[i] != d[i - 1] + 2) exit 1 }'; then
	ok "--tree: level1 > level2 > level3 > level4, each indented under its caller"
else
	fail "--tree: chain not nested: $indents; $(sed -n '/^Call tree/,/^$/p' tree.txt | head -n 14)"
fi
leaf=$(awk '/^Call tree/ { t = 1; next } t && $3 == "level4" { print $1, $2; exit }' tree.txt)
case $leaf in
"9"[0-9].*%" 9"[0-9].*%|"100.0%"*) ok "--tree: level4's total and self share both over 90% ($leaf)" ;;
*) fail "--tree: level4's shares are '$leaf'" ;;
esac
long=$(awk 'length($0) > 80' tree.txt | wc -l)
[ "$long" -eq 0 ] && ok "--tree output fits in 80 columns" || fail "--tree: $long lines over 80 columns"
report --tree c.spool >tree2.txt
cmp -s tree.txt tree2.txt && ok "--tree: the same spool gives the same bytes" || fail "--tree output differs between runs"

# --- the inverted tree: level4 first, its callers under it ------------------------------
report --inverted c.spool >inv.txt || fail "report --inverted failed: $(head -c 300 report.err)"
first=$(awk '/^Callers/ { t = 1; getline; next } t { print $2; exit }' inv.txt)
second=$(awk '/^Callers/ { t = 1; getline; next } t { n++ } t && n == 2 { print $2; exit }' inv.txt)
[ "$first" = level4 ] && [ "$second" = level3 ] && ok "--inverted: level4 first, then its caller level3" ||
	fail "--inverted starts with '$first', '$second': $(sed -n '/^Callers/,/^$/p' inv.txt | head -n 6)"

# --- --group-by: a section per process of forker, per thread of threads -----------------
with_timeout 60 "$SP" dump f.spool >f.dump 2>/dev/null
pid_samples f.dump | sort -n >pids.txt
npids=$(wc -l <pids.txt)
report --group-by=process f.spool >gp.txt || fail "--group-by=process failed: $(head -c 300 report.err)"
nsec=$(grep -c '^== Process ' gp.txt)
[ "$nsec" -eq "$npids" ] && [ "$npids" -ge 3 ] && ok "--group-by=process: one section for each of the $npids processes" ||
	fail "--group-by=process: $nsec sections for $npids processes with samples"
report --group-by=thread t.spool >gt.txt || fail "--group-by=thread failed: $(head -c 300 report.err)"
workers=$(grep -c '^== Thread [0-9]*/[0-9]* (worker-[0-9])' gt.txt)
[ "$workers" -eq 3 ] && ok "--group-by=thread: a section for each of the 3 worker threads" ||
	fail "--group-by=thread: $workers worker sections: $(grep '^==' gt.txt)"

# --- filters: --pid keeps exactly that process's samples, in every format -------------
child=$(awk 'NR == 2 { print $1 }' pids.txt) # not necessarily a child: any one process
want=$(awk -v p="$child" '$1 == p { print $2 }' pids.txt)
report --format=folded --pid "$child" f.spool >pid.folded
got=$(folded_total pid.folded)
[ "$got" -eq "$want" ] && ok "--pid $child: folded stacks count its $want samples" || fail "--pid $child: folded counts $got, dump $want"
report --format=perf-script --pid "$child" f.spool >pid.perf
others=$(awk -v p="$child" '/ cpu-clock:$/ { split($2, x, "/"); if (x[1] != p) n++; t++ } END { print n + 0, t + 0 }' pid.perf)
[ "$others" = "0 $want" ] && ok "--pid: perf-script has only that process's $want samples" || fail "--pid: perf-script (others, total) = $others"
report --pid "$child" f.spool >pid.txt
grep -q "^Filters:    pid $child\$" pid.txt && grep -q "^Kept:       $want of " pid.txt &&
	ok "--pid: the header names the filter and the samples it kept" || fail "--pid header: $(sed -n '/^Filters/,/^Kept/p' pid.txt)"
if command -v go >/dev/null 2>&1 && go tool pprof -h >/dev/null 2>&1; then
	report --format=pprof --pid "$child" -o pid.pprof f.spool
	n=$(with_timeout 120 go tool pprof -raw pid.pprof 2>/dev/null | awk '/^Samples:/ { s = 1; next } /^Locations/ { s = 0 }
		s && $2 ~ /^[0-9]+:$/ { n += $1 } END { print n + 0 }')
	[ "$n" -eq "$want" ] && ok "--pid: pprof counts the $want samples" || fail "--pid: pprof counts $n, want $want"
else
	skip "'go tool pprof' not found: the filtered pprof is not read back"
fi

# --focus / --exclude partition forker's samples by child_work.
total=$(report --format=folded f.spool | folded_total /dev/stdin)
report --format=folded --focus child_work f.spool >focus.folded
report --format=folded --exclude child_work f.spool >excl.folded
nf=$(folded_total focus.folded)
ne=$(folded_total excl.folded)
bad=$(grep -vc 'child_work' focus.folded)
[ "$bad" -eq 0 ] && [ "$nf" -gt 0 ] && ok "--focus child_work: every one of its $nf samples goes through child_work" ||
	fail "--focus: $bad stacks without child_work, $nf samples"
[ $((nf + ne)) -eq "$total" ] && ! grep -q child_work excl.folded &&
	ok "--exclude child_work keeps the other $ne samples: focus + exclude = $total" ||
	fail "--focus $nf + --exclude $ne != $total"
report --format=folded --focus 'parent_*' f.spool >pat.folded
grep -q parent_leaf pat.folded && ! grep -q child_leaf pat.folded && ok "--focus takes a shell pattern" ||
	fail "--focus 'parent_*': $(head -n 3 pat.folded)"

# --time halves chain4's 2 s: the halves add up, each holds a fair part.
dur=$(awk '/^Duration:/ { print $2 }' tree.txt)
mid=$(awk -v d="$dur" 'BEGIN { printf "%.3f", d / 2 }')
all=$(report --format=folded c.spool | folded_total /dev/stdin)
h1=$(report --format=folded --time ",$mid" c.spool | folded_total /dev/stdin)
h2=$(report --format=folded --time "$mid," c.spool | folded_total /dev/stdin)
info "--time: $h1 + $h2 of $all samples (split at $mid s)"
[ $((h1 + h2)) -eq "$all" ] && ok "--time ,$mid and $mid, split the samples in two parts ($h1 + $h2 of $all)" ||
	fail "--time halves: $h1 + $h2 of $all"
share_at_least "--time ,$mid:" 15 "$h1" "$all" "the samples are in the first part"
share_at_least "--time $mid,:" 15 "$h2" "$all" "the samples are in the second part"
# Every sample kept has a frame in libc: perf-script names each frame's module (folded
# stacks do not, and a stack cut short need not reach __libc_start_main).
report --format=perf-script --module libc.so.6 f.spool >libc.script
nolibc=$(awk 'BEGIN { RS = "" } !/libc\.so\.6\)/ { n++ } END { print n + 0 }' libc.script)
if [ ! -s libc.script ] || [ "$nolibc" != 0 ]; then
	fail "--module libc.so.6 kept nothing or $nolibc samples without a libc frame: $(awk 'BEGIN { RS = "" } !/libc\.so\.6\)/' libc.script | head -n 6)"
else
	ok "--module libc.so.6: every stack kept has a libc frame"
fi
report --format=folded --module no-such.so f.spool >none.folded
[ ! -s none.folded ] && ok "--module of a module never sampled keeps nothing" || fail "--module no-such.so kept $(folded_total none.folded)"

# --- json: parsed by a real JSON parser --------------------------------------------------
PY=$(command -v python3 || true)
if [ -n "$PY" ]; then
	report --format=json --rows 3 --stacks 2 c.spool >c.json || fail "--format=json failed: $(head -c 300 report.err)"
	if "$PY" - c.json "$all" <<'PYEOF'; then
import json, sys
d = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
assert d["functions"][0]["name"] == "level4", d["functions"][0]
assert d["samples"] == n and d["counters"]["samples"] == n, (d["samples"], n)
assert len(d["functions"]) == 3 and len(d["stacks"]) <= 2
assert d["functions"][0]["self"] <= n and d["functions"][0]["self_percent"] > 90
assert d["stacks"][0]["frames"][0]["name"] == "level4"
assert d["filters"]["pid"] == [] and d["filters"]["kept"] == n
assert d["spool"]["event"] in ("cpu-clock", "cycles") and d["spool"]["frequency_hz"] == 999
PYEOF
		ok "--format=json parses; level4 tops the functions and the heaviest stack"
	else
		fail "--format=json: $(head -c 600 c.json)"
	fi
	report --format=json --pid "$child" f.spool >f.json
	"$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["filters"]["pid"] == [int(sys.argv[2])] and d["samples"] == int(sys.argv[3]), d["filters"]' \
		f.json "$child" "$want" && ok "--format=json with --pid: the filter and its $want samples" || fail "json with --pid: $(head -c 400 f.json)"
else
	skip "python3 not found: json output not parsed"
fi

# --- --diff: a spool against itself changes nothing; chain4 against threads swaps tops ---
report --diff c.spool c.spool >same.txt || fail "--diff failed: $(head -c 300 report.err)"
# rows: base, new, ratio (1.00x, or '-' when both are 0), points, the total's ratio, function
moved=$(awk '/Function \(module\)/ { t = 1; next } /^Ratio:/ { t = 0 } t && /^ *[0-9]/ && ($4 != "+0.0" || ($3 != "1.00x" && $3 != "-")) { n++ } END { print n + 0 }' same.txt)
[ "$moved" -eq 0 ] && ok "--diff of a spool with itself: no change" || fail "--diff with itself: $moved changed rows"
report --diff c.spool t.spool >diff.txt
top2=$(awk '/Function \(module\)/ { t = 1; next } t && /^ *[0-9]/ { print $6; n++ } n == 2 { exit }' diff.txt | sort | tr '\n' ' ')
[ "$top2" = "level4 worker_leaf " ] && ok "--diff chain4 -> threads: level4 and worker_leaf changed most" ||
	fail "--diff tops: '$top2': $(head -n 12 diff.txt)"
l4=$(awk '$6 == "level4" { print $2, $3, $4 }' diff.txt)
case $l4 in "0.0 gone* -9"*|"0.0 gone* -100.0") ok "--diff: level4 from $l4" ;; *) fail "--diff: level4 row '$l4'" ;; esac

# --- usage errors: status 2, naming the value and what is expected ------------------
usage() {
	want_text=$1
	shift
	with_timeout 30 "$SP" report "$@" c.spool >/dev/null 2>err.txt
	st=$?
	[ $st -eq 2 ] && grep -q -- "$want_text" err.txt && ok "report $*: status 2, '$want_text'" ||
		fail "report $*: status $st, $(head -c 200 err.txt)"
}
usage "unknown sort key 'size': expected self, total or name" --sort=size
usage "invalid pid list '12,x'" --pid 12,x
usage "invalid time window '3,1': END must be after START" --time 3,1
usage "invalid time window '5'" --time 5
usage "invalid percent limit '101'" --percent-limit 101
usage "unknown grouping 'cpu'" --group-by=cpu
usage "invalid width '40'" --width 40
usage "text views" --tree --format=folded
with_timeout 30 "$SP" report --diff missing.spool c.spool >/dev/null 2>err.txt
st=$?
[ $st -eq 1 ] && grep -q "cannot open spool 'missing.spool'" err.txt && ok "--diff with a missing base: status 1, names it" ||
	fail "--diff missing base: status $st, $(head -c 200 err.txt)"
finish
