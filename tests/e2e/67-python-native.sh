# SPDX-License-Identifier: MIT
# The Python view: by default only the interpreter's machinery around
# Python frames is hidden (the eval loop, call dispatch between Python frames, start-up
# above the first one); native code a Python function calls shows.  A regex-heavy
# program's top self function is the regex engine's sre_ucs1_match (perf's answer), not
# the Python function that called it; its stacks keep the Python chain above the native
# frames; and every stack has one root, _start, as the interpreter's start-up stacks do.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
PY=$(find_python 3.12)
[ -n "$PY" ] || PY=$(find_python 3.13)
[ -n "$PY" ] || skip_all "no python3.12 or python3.13 with -X perf (pyenv install 3.12)"
info "$PY ($("$PY" --version 2>&1)) -X perf"

sp_record rx.spool -F 999 -- "$PY" -X perf "$WORKLOADS/regex_loop.py" 1.5 >/dev/null ||
	{ fail "record exited $?: $(head -c 300 record.err)"; finish; }
pid=$(with_timeout 60 "$SP" dump rx.spool 2>/dev/null | awk '$1 == "owner" { sub(/pid=/, "", $2); print $2; exit }')
[ -n "$pid" ] && track_map=/tmp/perf-$pid.map
with_timeout 60 "$SP" report --format=folded rx.spool >rx.folded 2>/dev/null ||
	fail "report exited $?"
set -- $(folded_self rx.folded | awk 'NR == 1 { print $2, $3 }')
top_share=${1:-0} top=${2:-}
ref=
if with_timeout 120 perf record -q -F 999 -g -o p.data -- "$PY" -X perf "$WORKLOADS/regex_loop.py" 1.5 >/dev/null 2>&1; then
	ref=$(perf report -i p.data --stdio --no-children --sort sym -g none 2>/dev/null |
		awk '$1 ~ /%$/ { print $1, $3; exit }')
	# perf's run of python leaves its map too
	ppid=$(perf script -i p.data -F pid 2>/dev/null | awk 'NR == 1 { print $1 }')
	[ -n "$ppid" ] && rm -f "/tmp/perf-$ppid.map"
fi
info "top self: $top ($top_share%)${ref:+; perf's top self: $ref}"
[ "$top" = sre_ucs1_match ] && ok "the top self function is the regex engine's sre_ucs1_match ($top_share%)" ||
	fail "the top self function is $top ($top_share%), not sre_ucs1_match"
set -- $(leaf_share rx.folded ';sre_ucs1_match(;|$)' '^_start;.*;<module>;work;scan;.*sre_ucs1_match(;|$)')
info "$1 of $2 samples in sre_ucs1_match carry _start;..;<module>;work;scan above it"
share_at_least 95 "$1" "$2" "sre_ucs1_match's samples keep the Python chain above the native frames" ||
	info "top stack: $(folded_top rx.folded 1 | cut -c1-300)"
# Start-up stacks without a Python frame keep the interpreter's frames: only the others count.
bad=$(grep '<module>' rx.folded | grep -c '_PyEval_EvalFrameDefault')
[ "$bad" = 0 ] && ok "the eval loop is hidden in every stack holding a Python frame" ||
	fail "_PyEval_EvalFrameDefault shows in $bad stacks with Python frames: $(grep '<module>' rx.folded | grep '_PyEval_EvalFrameDefault' | head -n 1 | cut -c1-300)"
with_timeout 60 "$SP" report --tree rx.spool >rx.tree 2>/dev/null
roots=$(awk '/^Call tree/ { t = 1; next } t && /^ *[0-9.]+% +[0-9.]+%  [^ ]/ { print $3 }' rx.tree | sort -u | tr '\n' ' ')
[ "$roots" = "_start " ] && ok "--tree has one root: _start" || fail "--tree roots: $roots"
[ -n "${track_map:-}" ] && rm -f "$track_map"
finish
