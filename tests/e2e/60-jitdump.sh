# SPDX-License-Identifier: MIT
# JIT unwinding information from jitdumps:
# (a) jit_dump, a JIT whose generated code keeps no frame pointer and is described only
#     by its jitdump (an .eh_frame in a JIT_CODE_UNWINDING_INFO record): the recorder
#     reads it while the program runs and unwinds through the code exactly; the report
#     names the code from the jitdump; a jitdump others can write names nothing, and a
#     removed one leaves the stacks complete (they were unwound at record time);
# (b) node --perf-prof --perf-prof-unwinding-info, no perf map: JS frames named from the
#     jitdump, the leaf's whole chain down to _start;
# (c) CPython 3.13 -X perf_jit, no perf map: Python frames named from the jitdump, the
#     whole Python chain.
# Beside (a): perf record -g on the same program.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload jit_dump

DUMPS=
trap 'for d in $DUMPS; do rm -f "$d"; done; cleanup' EXIT

# pids_of SPOOL: the processes a spool recorded.
pids_of() {
	with_timeout 60 "$SP" dump "$1" 2>/dev/null | awk '$1 == "thread" {
		for (i = 2; i <= NF; i++) if ($i ~ /^pid=/) print substr($i, 5) }' | sort -u
}

# --- (a) jit_dump ------------------------------------------------------------------
WHOLE='^_start;__libc_start_main;__libc_start_call_main;main;run_jit;call_jit;jit_work$'
sp_record jd.spool -F 999 -- "$WL" -t 2 >/dev/null || { fail "record of jit_dump exited $?: $(head -c 300 record.err)"; finish; }
JD=$(ls jit-*.dump 2>/dev/null | head -n 1)
[ -n "$JD" ] || { fail "jit_dump wrote no jitdump in the working directory"; finish; }
with_timeout 60 "$SP" report --format=folded jd.spool >jd.folded 2>jd.err
counts=$(leaf_share jd.folded '(^|;)jit_work$' "$WHOLE")
share=$(pct $counts)
# perf names no frame of the code (no perf map): all its samples, those under call_jit.
ref=$(perf_g_share jitg '.' '(^|;)main;run_jit;call_jit;' "$WL" -t 2)
set -- $ref
info "jit_dump: jit_work samples with main > run_jit > call_jit down to _start: stackpulse $share%${1:+; perf -g, samples under call_jit: $1 / $2 = $(pct "$1" "$2")%}"
share_at_least jit_dump: 95 $counts "jit_work's samples carry the whole chain" ||
	info "jit_dump: top stacks: $(folded_top jd.folded 3 | tr '\n' ' ')"
grep -q 'unwound with the unwinding information its runtime wrote into a jitdump' record.err &&
	ok "record's summary counts the frames unwound with the jitdump's information" ||
	fail "record's summary does not mention the jitdump: $(tail -n 4 record.err | tr '\n' ' ')"
with_timeout 60 "$SP" report jd.spool >jd.txt 2>&1
grep -q "jit_work  *$JD" jd.txt && ok "the report names jit_work from $JD" ||
	fail "the report does not name jit_work from $JD: $(grep -m 3 -e jit_work -e anon jd.txt | tr '\n' ' ')"

with_timeout 60 "$SP" symbolize -o jd-sym.spool jd.spool >/dev/null 2>&1 ||
	fail "symbolize of the jit_dump spool exited $?"

# A jitdump others can write is not believed (docs/DESIGN.md, decision 9, as perf maps).
chmod 0666 "$JD"
with_timeout 60 "$SP" report --format=folded jd.spool >jd-open.folded 2>/dev/null
if grep -q 'jit_work' jd-open.folded; then
	fail "a jitdump writable by others still names code: $(folded_top jd-open.folded 1)"
else
	ok "a jitdump writable by others names nothing"
fi
# Gone after the recording: no names, but the stacks were unwound while it was there.
rm -f "$JD"
with_timeout 60 "$SP" report --format=folded jd.spool >jd-gone.folded 2>/dev/null
set -- $(folded_share jd-gone.folded '^_start;__libc_start_main;__libc_start_call_main;main;run_jit;call_jit;\[anon\]\+0x[0-9a-f]+$')
share_at_least "with the jitdump removed:" 90 "$1" "$2" "the stacks stay whole, ending in call_jit;[anon] (the JIT frame an address)" ||
	info "with the jitdump removed, top stacks: $(folded_top jd-gone.folded 2 | tr '\n' ' ')"

# Names symbolize stored while the jitdump was there outlive it.
with_timeout 60 "$SP" report --format=folded jd-sym.spool >jd-sym.folded 2>/dev/null
set -- $(leaf_share jd-sym.folded '.' "$WHOLE")
share_at_least "after symbolize and the jitdump's removal:" 95 "$1" "$2" "the stacks name jit_work (names symbolize stored stay)" ||
	info "after symbolize, top stacks: $(folded_top jd-sym.folded 2 | tr '\n' ' ')"

# --- (b) Node ----------------------------------------------------------------------
if command -v node >/dev/null 2>&1; then
	cp "$WORKLOADS/js_chain.js" hot.js
	sp_record node.spool -F 999 -- node --perf-prof --perf-prof-unwinding-info \
		--interpreted-frames-native-stack hot.js >/dev/null ||
		fail "node: record exited $?: $(head -c 300 record.err)"
	for p in $(pids_of node.spool); do
		[ -e "/tmp/perf-$p.map" ] && fail "node wrote a perf map (/tmp/perf-$p.map): the names would not prove the jitdump"
		DUMPS="$DUMPS /tmp/perf-$p.map"
	done
	with_timeout 60 "$SP" report --format=folded node.spool >node.folded 2>/dev/null
	LEAF='(^|;)JS:[^;]*leafJs[^;]*(;|$)'
	set -- $(leaf_share node.folded "$LEAF" '^_start;.*;JS:[^;]*topJs[^;]*;(.*;)?JS:[^;]*leafJs')
	share_at_least "node --perf-prof:" 95 "$1" "$2" "leafJs's samples named from the jitdump keep their callers (topJs above them, down to _start)" ||
		info "node --perf-prof: top stacks: $(folded_top node.folded 2 | cut -c1-300 | tr '\n' ' ')"
	with_timeout 60 "$SP" report node.spool >node.txt 2>&1
	grep -q 'leafJs.* jit-[0-9]*\.dump *$' node.txt && ok "node's JS functions are shown in module jit-PID.dump" ||
		fail "node's leafJs is not shown from the jitdump: $(grep -m 2 leafJs node.txt | tr '\n' ' ')"
else
	skip "node: not found in PATH (the jitdump case needs node --perf-prof)"
fi

# --- (c) CPython 3.13 -X perf_jit --------------------------------------------------
PY=$(find_python 3.13)
if [ -n "$PY" ]; then
	cp "$WORKLOADS/py_chain.py" nest.py
	sp_record py.spool -F 999 -- "$PY" -X perf_jit nest.py >/dev/null ||
		fail "python3.13 -X perf_jit: record exited $?: $(head -c 300 record.err)"
	for p in $(pids_of py.spool); do
		[ -e "/tmp/perf-$p.map" ] && fail "python3.13 -X perf_jit wrote a perf map (/tmp/perf-$p.map)"
		DUMPS="$DUMPS /tmp/jit-$p.dump /tmp/perf-$p.map"
	done
	with_timeout 60 "$SP" report --format=folded py.spool >py.folded 2>/dev/null
	set -- $(leaf_share py.folded '(^|;)jit_py_leaf(;|$)' '(^|;)<module>;jit_py_f1;jit_py_f2;jit_py_f3;jit_py_f4;jit_py_leaf(;|$)')
	share_at_least "python3.13 -X perf_jit:" 95 "$1" "$2" "jit_py_leaf's samples carry the Python chain named from the jitdump" ||
		info "python3.13 -X perf_jit: top stacks: $(folded_top py.folded 2 | cut -c1-300 | tr '\n' ' ')"
else
	skip "python3.13 with -X perf_jit support not found (PATH or pyenv)"
fi
finish
