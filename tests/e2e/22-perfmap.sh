# SPDX-License-Identifier: MIT
# Perf maps: generated code in an anonymous mapping is named from /tmp/perf-PID.map
# (the jit_perfmap workload writes one); --perf-maps=none, --perf-map-dir with a copy,
# a stale copy; then CPython 3.12's -X perf trampolines (py::FUNC:FILE) when a
# python3.12 is installed, and its runtime frames hidden unless --show-runtime.
# Callers of JIT code (unwound through code without CFI) are checked by 28-jit-unwind.sh.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload jit_perfmap

# The perf maps the recorded programs leave in /tmp go when the test ends.
MAPS=
trap 'for m in $MAPS; do rm -f "$m"; done; cleanup' EXIT

sp_record jit.spool -F 999 -- "$WL" -t 1 >jit.out || {
	fail "record of jit_perfmap exited $?: $(head -c 300 record.err)"
	finish
}
MAP=$(sed -n 's/^jit_perfmap: perf map //p' jit.out)
MAPS="$MAPS $MAP"
[ -f "$MAP" ] && ok "jit_perfmap wrote its perf map $MAP" || { fail "no perf map '$MAP'"; finish; }
pid=${MAP#/tmp/perf-}
pid=${pid%.map}

with_timeout 60 "$SP" report --format=folded jit.spool >jit.folded 2>jit.err
folded_self jit.folded | head -n 3 | sed 's/^/# leaf: /'
set -- $(folded_share jit.folded ';jit_hot_loop$|^jit_hot_loop$')
share_at_least 90 "$1" "$2" "the samples have jit_hot_loop as their leaf"
[ ! -s jit.err ] && ok "no warning about the perf map" || fail "report warned: $(head -c 300 jit.err)"
with_timeout 60 "$SP" report jit.spool >jit.txt 2>/dev/null
grep -E "jit_hot_loop +perf-$pid\.map" jit.txt >/dev/null &&
	ok "the text report shows jit_hot_loop in module perf-$pid.map" ||
	fail "the text report has no 'jit_hot_loop perf-$pid.map' row"

with_timeout 60 "$SP" report --format=folded --perf-maps=none jit.spool >none.folded 2>/dev/null
if grep -q jit_hot_loop none.folded; then
	fail "--perf-maps=none still names jit_hot_loop"
else
	ok "--perf-maps=none leaves the generated code unnamed ($(folded_self none.folded | head -n 1 | cut -d' ' -f3))"
fi
# The recorder saw no Python runtime in this process.
with_timeout 60 "$SP" report --format=folded --perf-maps=python jit.spool >py.folded 2>/dev/null
grep -q jit_hot_loop py.folded && fail "--perf-maps=python names a process that is not Python" ||
	ok "--perf-maps=python leaves a non-Python process's code unnamed"

# A copy of the map, read from another directory after the original is gone.
mkdir maps && cp -p "$MAP" maps/ && rm -f "$MAP"
with_timeout 60 "$SP" report --format=folded jit.spool >gone.folded 2>/dev/null
grep -q jit_hot_loop gone.folded && fail "jit_hot_loop named with no perf map in /tmp" ||
	ok "without /tmp/perf-$pid.map the code stays unnamed"
with_timeout 60 "$SP" report --format=folded --perf-map-dir maps jit.spool >copy.folded 2>/dev/null
mkdir nomaps
with_timeout 60 "$SP" report --format=folded --perf-map-dir nomaps jit.spool >nomap.folded 2>nomap.err
grep -q "in anonymous memory (JIT or Python code) shown as addresses: no perf-PID.map in 'nomaps'" nomap.err &&
	ok "a directory without the perf map: one warning says why JIT frames are addresses" ||
	fail "no warning for the missing perf map: $(head -c 200 nomap.err)"
cmp -s copy.folded jit.folded && ok "--perf-map-dir maps reads the copy: the same folded stacks" ||
	fail "--perf-map-dir copy differs: $(diff copy.folded jit.folded | head -n 4)"

# A map written before the process started belongs to an earlier process with its pid.
touch -d '@1000000000' "maps/perf-$pid.map"
with_timeout 60 "$SP" report --format=folded --perf-map-dir maps jit.spool >stale.folded 2>stale.err
if grep -q jit_hot_loop stale.folded; then
	fail "a perf map older than its process was used"
elif grep -q 'older than' stale.err; then
	ok "a perf map older than its process is ignored: $(head -n 1 stale.err)"
else
	fail "a stale perf map was ignored without a warning"
fi
# Writable by others: anyone could have planted the names.
touch "maps/perf-$pid.map" && chmod 666 "maps/perf-$pid.map"
with_timeout 60 "$SP" report --format=folded --perf-map-dir maps jit.spool >w.folded 2>w.err
! grep -q jit_hot_loop w.folded && grep -q 'writable by group or others' w.err &&
	ok "a perf map others can write is ignored, with a warning" ||
	fail "a world-writable perf map was used or not warned about: '$(head -c 200 w.err)'"

# --- CPython 3.12 -X perf: py::FUNC:FILE entries ------------------------------------
# An ELF python3.12 (pyenv's shims are scripts), from PATH or pyenv's versions.
PY=
for cand in $(command -v python3.12 2>/dev/null) "$HOME"/.pyenv/versions/*/bin/python3.12; do
	[ -x "$cand" ] || continue
	[ "$(head -c 4 "$cand" | od -An -c | tr -d ' ')" = '177ELF' ] || continue
	# The probe writes a perf map too: its pid (the shell's, kept by exec) says which.
	probe=$(sh -c 'echo $$; exec "$@" 2>/dev/null' sh "$cand" -X perf -c \
		'import sys; print("active" if sys.is_stack_trampoline_active() else "off")')
	set -- $probe
	[ -n "${1:-}" ] && MAPS="$MAPS /tmp/perf-$1.map"
	[ "${2:-}" = active ] || continue
	PY=$cand
	break
done
if [ -z "$PY" ]; then
	skip "Python perf maps: no python3.12 with -X perf support (ELF) in PATH or \$HOME/.pyenv/versions/*/bin"
	finish
fi
info "python: $PY"
cat >hot.py <<'EOF'
import time

def sp_python_leaf(n):
    t = 0
    for i in range(n):
        t += i * i
    return t

def sp_python_caller():
    end = time.process_time() + 1.0
    while time.process_time() < end:
        sp_python_leaf(10000)

sp_python_caller()
EOF
sp_record py.spool -F 999 -- "$PY" -X perf hot.py >/dev/null
st=$?
with_timeout 60 "$SP" dump py.spool >py.dump 2>/dev/null
for p in $(dump_field thread pid py.dump | sort -u); do
	MAPS="$MAPS /tmp/perf-$p.map"
done
info "perf maps removed at the end:$MAPS"
[ $st -eq 0 ] && ok "record of python3.12 -X perf exits 0" || { fail "record of python3.12 exited $st: $(head -c 300 record.err)"; finish; }
with_timeout 60 "$SP" report --format=folded py.spool >pyall.folded 2>pyall.err
if [ ! -s pyall.folded ]; then
	# Seen once in a sanitizer CI run, never by hand: say what report said, and try again.
	info "report of the python3.12 spool gave nothing: $(head -c 300 pyall.err | tr '\n' ' '); record: $(grep -E 'samples written' record.err | head -n 1)"
	with_timeout 60 "$SP" report --format=folded py.spool >pyall.folded 2>pyall.err
fi
folded_top pyall.folded 2 | sed 's/^/# top: /'
set -- $(folded_share pyall.folded '(^|;)sp_python_(leaf|caller)(;|$)')
if ! share_at_least 50 "$1" "$2" "the python3.12 samples hold a py:: frame named from the perf map"; then
	# Seen in fresh-clone CI runs, never by hand: say what the spool and the maps were.
	info "report said: $(head -c 400 pyall.err | tr '\n' ' ')"
	info "spool: $(grep -E '^(exec|owner|thread) ' py.dump | head -n 8 | tr '\n' ' ')"
	for m in $MAPS; do info "map $m: $(ls -ln --time-style=+%s.%N "$m" 2>&1 | cut -c1-120) $(head -n 1 "$m" 2>/dev/null | cut -c1-80)"; done
	info "record: $(grep -Ev '^ +[a-z-]+ +[0-9]+ ' record.err | head -n 6 | tr '\n' ' ')"
fi
grep -q 'py::' pyall.folded && fail "raw py:: names leak into the report" || ok "Python frames are shown by function name, without py::"
with_timeout 60 "$SP" report --format=folded --perf-maps=python py.spool >pyonly.folded 2>/dev/null
cmp -s pyonly.folded pyall.folded && ok "--perf-maps=python names the recorded Python runtime the same way" ||
	fail "--perf-maps=python differs for a Python runtime"

# The interpreter's own native frames (python3.12's _PyEval_EvalFrameDefault, ...) are
# flagged as the Python runtime's: by default its machinery around Python frames is
# hidden (native code the Python function calls shows); --show-runtime shows it all.
EVAL='(^|;)_PyEval_EvalFrameDefault(;|$)'
with_timeout 60 "$SP" report --format=folded --show-runtime py.spool >pyrt.folded 2>/dev/null
set -- $(folded_share pyall.folded "$EVAL")
hidden=$(pct "$1" "$2")
hidden_n=$1
shown_counts=$(folded_share pyrt.folded "$EVAL")
shown=$(pct $shown_counts)
info "samples with _PyEval_EvalFrameDefault: $hidden% by default, $shown% with --show-runtime"
# Stacks whose unwinding stopped before any Python frame keep the runtime's frames.
[ "$(num_ge 5 "$hidden")" = 1 ] && ok "the interpreter's eval loop is hidden by default (left in $hidden_n samples whose stacks hold no Python frame)" ||
	fail "_PyEval_EvalFrameDefault still in $hidden% of the default stacks (want <= 5%)"
share_at_least --show-runtime: 50 $shown_counts "the stacks show _PyEval_EvalFrameDefault"
[ "$(folded_total pyrt.folded)" = "$(folded_total pyall.folded)" ] &&
	ok "hiding frames loses no sample ($(folded_total pyall.folded) both ways)" ||
	fail "sample totals differ: $(folded_total pyall.folded) hidden, $(folded_total pyrt.folded) shown"
leaf_self() { folded_self "$1" | awk '$3 == "sp_python_leaf" { print $2; exit }'; }
self_hidden=$(leaf_self pyall.folded)
self_shown=$(leaf_self pyrt.folded)
# With --show-runtime, the samples whose leaf is the eval loop running sp_python_leaf:
# by default they are the Python function's own time (the native code it calls keeps its own).
eval_self=$(folded_self pyrt.folded | awk '$3 == "_PyEval_EvalFrameDefault" { print $2; exit }')
info "sp_python_leaf self: ${self_hidden:-0}% by default, ${self_shown:-0}% with --show-runtime (where the eval loop has ${eval_self:-0}% self)"
want=$(awk -v a="${self_shown:-0}" -v b="${eval_self:-0}" 'BEGIN { printf "%.2f", (a + b) * 0.8 }')
[ "$(num_ge "${self_hidden:-0}" "$want")" = 1 ] && [ "$(num_ge "${self_hidden:-0}" 1)" = 1 ] &&
	ok "the Python function takes its eval loop's self time: ${self_hidden}% (>= ${want}%)" ||
	fail "sp_python_leaf self ${self_hidden:-0}% by default (want >= ${want}%: its own and its eval loop's, with --show-runtime)"
# One root: stacks with Python frames start at _start as the interpreter's start-up stacks do.
roots=$(awk '{ r = $0; sub(/;.*/, "", r); sub(/[ \t]+[0-9]+[ \t]*$/, "", r); c[r] += $NF; t += $NF }
	END { for (r in c) if (c[r] * 100 >= t) printf "%s(%d) ", r, c[r] }' pyall.folded)
[ "$roots" = "_start($(folded_total pyall.folded)) " ] || [ "$(echo "$roots" | wc -w)" = 1 ] &&
	ok "one root holds every stack of 1% or more: $roots" ||
	fail "stacks with Python frames and without have different roots: $roots"
# Exports follow the same rule: perf script's frame lines, one per frame of each sample.
with_timeout 60 "$SP" report --format=perf-script -o py.perfscript py.spool 2>/dev/null
with_timeout 60 "$SP" report --format=perf-script --show-runtime -o pyrt.perfscript py.spool 2>/dev/null
h=$(grep -c _PyEval_EvalFrameDefault py.perfscript)
s=$(grep -c _PyEval_EvalFrameDefault pyrt.perfscript)
[ "$s" -gt 0 ] && [ $((h * 20)) -le "$s" ] &&
	ok "--format=perf-script: $h eval-loop frame lines by default, $s with --show-runtime" ||
	fail "--format=perf-script: $h eval-loop frame lines by default, $s with --show-runtime (want <= 5%)"
finish
