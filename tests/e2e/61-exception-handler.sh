# SPDX-License-Identifier: MIT
# While libgcc hands an exception to its handler, it copies the handler
# frame's registers into _Unwind_RaiseException's save slots, its return address slot
# included: an unwind from there reaches the handler's function (catcher) as if it had
# called _Unwind_RaiseException, skipping __cxa_throw and thrower (and relay), then
# fails or, through relay, even reaches its root.  Such stacks must end honestly at
# _Unwind_RaiseException with the truncation marker, never show another caller than
# __cxa_throw.  Beside: perf record --call-graph dwarf on the same program.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events

CXX=${CXX:-g++}
command -v "$CXX" >/dev/null 2>&1 || skip_all "no C++ compiler ($CXX) to build throw_loop"
"$CXX" -O2 -g -o throw_loop "$REPO/tests/workloads/throw_loop.cc" 2>gxx.err ||
	{ fail "$CXX cannot build throw_loop.cc: $(head -c 300 gxx.err)"; finish; }

sp_record t.spool -F 999 -- ./throw_loop -t 3 >/dev/null || { fail "record of throw_loop exited $?: $(head -c 300 record.err)"; finish; }
with_timeout 60 "$SP" report --format=folded t.spool >t.folded 2>/dev/null
# A stack through _Unwind_RaiseException must have __cxa_throw as its caller, or end there.
# A sample in its PLT stub (libstdc++'s _Unwind_RaiseException@plt) is under __cxa_throw too.
set -- $(folded_share t.folded '_Unwind_RaiseException')
through=$1 total=$2
right_re='(^|;)(__cxa_throw;_Unwind_RaiseException(@plt)?|^\[truncated\];_Unwind_RaiseException)(;|$)'
set -- $(folded_share t.folded "$right_re")
right=$1
wrong=$((through - right))
set -- $(folded_share t.folded '^\[truncated\];_Unwind_RaiseException(;|$)')
ended=$1
ref=
if with_timeout 120 perf record -q --call-graph dwarf -F 999 -o p.data -- ./throw_loop -t 3 >/dev/null 2>&1; then
	ref=$(perf script -i p.data -F ip,sym 2>/dev/null | awk '
		BEGIN { RS = ""; FS = "\n" }
		{
			s = ""
			for (i = 1; i <= NF; i++) { f = $i; sub(/^[ \t]*[0-9a-f]+ /, "", f); s = s == "" ? f : f ";" s }
			t++
			if (s ~ /_Unwind_RaiseException/ && s !~ /__cxa_throw;_Unwind_RaiseException/) w++
		}
		END { printf "%d of %d samples show another caller of _Unwind_RaiseException than __cxa_throw", w, t }')
fi
info "throw_loop: $through of $total samples pass through _Unwind_RaiseException; $ended end there with [truncated], $wrong show another caller than __cxa_throw${ref:+; perf --call-graph dwarf: $ref}"
[ "$through" -gt 0 ] || fail "no sample passed through _Unwind_RaiseException: $(folded_top t.folded 3 | tr '\n' ' ')"
[ "$wrong" -eq 0 ] && ok "no stack shows another caller of _Unwind_RaiseException than __cxa_throw ($through samples through it)" ||
	fail "$wrong samples show another caller of _Unwind_RaiseException: $(RIGHT_RE=$right_re awk '{ s = $0; sub(/[ \t]+[0-9]+[ \t]*$/, "", s) } s ~ /_Unwind_RaiseException/ && s !~ ENVIRON["RIGHT_RE"]' t.folded | head -n 3 | tr '\n' ' ')"
set -- $(folded_share t.folded '^_start;__libc_start_main;__libc_start_call_main;main;catcher\(int\);(relay\(int\);)?thrower\(int\)[^;]*;__cxa_throw;_Unwind_RaiseException')
info "throw_loop: $1 of $through samples through _Unwind_RaiseException carry the whole chain from _start"
share_at_least 90 "$1" "$through" "the stacks through libgcc's unwinder (_Unwind_RaiseException) are whole"
finish
