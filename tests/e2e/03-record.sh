# SPDX-License-Identifier: MIT
# record: exit status of the command, -o, -d on a long command, -q, the summary.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload chain4

# The command's exit status becomes record's.
sp_record exit7.spool -- sh -c 'exit 7'
st=$?
[ $st -eq 7 ] && ok "record -- sh -c 'exit 7' exits 7" || fail "record -- sh -c 'exit 7' exited $st: $(head -c 300 record.err)"

sp_record exit0.spool -F 999 -- "$WL" -t 1 >/dev/null
st=$?
[ $st -eq 0 ] && ok "record of a successful workload exits 0" || fail "record of chain4 exited $st: $(head -c 300 record.err)"
cp record.err summary.err

# The summary (stderr) names samples written, lost, empty and truncated stacks.
for word in samples lost empty truncated; do
	grep -qi "$word" summary.err && ok "summary mentions '$word'" || fail "summary does not mention '$word'"
done
sed 's/^/# summary: /' summary.err
n=$(summary_number summary.err samples)
if [ -n "$n" ] && [ "$n" -ge 100 ]; then
	ok "summary counts $n samples for 1 s at 999 Hz"
else
	fail "summary sample count '$n' (expected >= 100 for 1 s of CPU at 999 Hz)"
fi

# -o writes where asked, and nothing at the default place.
mkdir sub
sp_record sub/elsewhere.spool -F 999 -- "$WL" -t 1 >/dev/null
[ -s sub/elsewhere.spool ] && ok "-o sub/elsewhere.spool writes there" || fail "-o sub/elsewhere.spool wrote nothing"
[ ! -e profile.spool ] && ok "-o leaves no profile.spool behind" || fail "profile.spool written although -o was given"

# -o into a directory that does not exist: a clear error, status 1.
sp_record no/such/dir/x.spool -- true
st=$?
[ $st -eq 1 ] && ok "-o into a missing directory exits 1" || fail "-o into a missing directory exited $st"
grep -q 'no/such/dir/x.spool' record.err && ok "the error names the spool path" ||
	fail "error does not name the spool: $(head -c 300 record.err)"

# -q: no summary.
sp_record quiet.spool -q -F 999 -- "$WL" -t 1 >/dev/null
st=$?
[ $st -eq 0 ] && ok "record -q exits 0" || fail "record -q exited $st"
if grep -qi 'sample' record.err; then
	fail "-q still printed a summary: $(head -c 300 record.err)"
else
	ok "-q prints no summary (stderr: $(wc -c <record.err) bytes)"
fi
[ -s quiet.spool ] && ok "-q still writes the spool" || fail "-q wrote no spool"

# -d stops a long command.  A private copy of the workload makes its process easy to
# find (by executable path) afterwards, whether record killed it or left it running.
cp "$WL" ./longrun
start=$(date +%s)
sp_record long.spool -d 2 -F 999 -- ./longrun -t 60 >/dev/null
st=$?
elapsed=$(($(date +%s) - start))
if [ "$elapsed" -le 15 ]; then
	ok "-d 2 stops recording a 60 s command after ${elapsed}s (record exit $st)"
else
	fail "-d 2 took ${elapsed}s to stop recording a 60 s command"
fi
[ -s long.spool ] && ok "-d writes a spool" || fail "-d wrote no spool"
if "$SP" report --format=folded long.spool >long.folded 2>/dev/null; then
	n=$(folded_total long.folded)
	[ "$n" -ge 200 ] && [ "$n" -le 4000 ] && ok "-d 2 spool holds $n samples (at most 2 s of CPU at 999 Hz)" ||
		fail "-d 2 spool holds $n samples (expected 200..4000)"
else
	fail "report cannot read the -d spool"
fi
left=
for p in /proc/[0-9]*; do
	[ "$(readlink "$p/exe" 2>/dev/null)" = "$TMP/longrun" ] && left="$left ${p#/proc/}"
done
if [ -n "$left" ]; then
	info "after -d the command was still running (pid$left); killing it"
	for p in $left; do kill -KILL "$p" 2>/dev/null; done
else
	info "after -d the command was no longer running"
fi

# --stack-size: a copy too small to reach the C library's start frames gives stacks
# that end early, counted in the summary and marked [truncated] in folded output.
sp_record small.spool --stack-size 256 -F 999 -- "$WL" -t 1 >/dev/null
st=$?
[ $st -eq 0 ] && ok "record --stack-size 256 exits 0" || fail "record --stack-size 256 exited $st: $(head -c 300 record.err)"
sed 's/^/# --stack-size 256: /' record.err
tr=$(summary_number record.err truncated)
[ -n "$tr" ] && [ "$tr" -gt 0 ] && ok "summary counts $tr truncated stacks with a 256-byte copy" ||
	fail "summary counts '$tr' truncated stacks with a 256-byte copy"
grep -q "stacks deeper than the copied 256 bytes were cut: raise --stack-size" record.err &&
	ok "the 256-byte copy's summary says to raise --stack-size" ||
	fail "no --stack-size hint for a 256-byte copy: $(grep -i stack record.err | head -n 2)"
# A copy the kernel ends short, at the top of a just-exec'd stack, is no reason to raise it.
sp_record exec.spool -F 4999 -- sh -c 'for i in 1 2 3 4 5 6 7 8 9 10; do for j in 1 2 3 4 5 6 7 8 9 10; do /bin/true; done; done' >/dev/null
ex=$(sed -n 's/^ *stack-exhausted *\([0-9]*\).*/\1/p' record.err)
info "an exec loop: ${ex:-0} stacks ended at the copy's end"
grep -q "raise --stack-size" record.err &&
	fail "an exec loop's summary says to raise --stack-size: $(grep 'stack-size' record.err)" ||
	ok "an exec loop's summary gives no --stack-size hint (${ex:-0} copies ended at the stack's top)"
"$SP" report --format=folded small.spool >small.folded 2>/dev/null
# A sample or two at start-up or exit may stop elsewhere; the hot loop's must all be cut.
set -- $(folded_share small.folded '^\[truncated\];(.*;)?level4$')
info "top stack: $(folded_top small.folded 1)"
share_at_least 99 "$1" "$2" "the folded stacks start with [truncated] and end in level4"
# The hot loop's stacks are whole with the default copy.  A sample or two taken while
# the program starts (its execve, ld.so before the mappings are known) may be cut:
# shown, not failed (e2e 58 covers samples during execve).
others=$(grep '^\[truncated\]' long.folded 2>/dev/null | grep -v 'level4 [0-9]*$' | head -n 3 | tr '\n' ' ')
[ -n "$others" ] && info "truncated outside the hot loop: $others"
if grep -q '^\[truncated\].*level4 [0-9]*$' long.folded 2>/dev/null; then
	fail "the default stack size gave [truncated] stacks on chain4's hot loop: $(grep -m 2 '^\[truncated\]' long.folded)"
else
	ok "the default stack size gives no [truncated] stacks on chain4's hot loop"
fi
# The documented minimum either works or is a usage error, never a failure after launch.
sp_record tiny.spool --stack-size 8 -- true
st=$?
[ $st -eq 0 ] || [ $st -eq 2 ] && ok "--stack-size 8 exits $st (works, or usage error)" ||
	fail "--stack-size 8 (documented minimum) exits $st: $(head -n 1 record.err)"
for bad in 0 7 abc 1000000; do
	sp_record bad.spool --stack-size $bad -- true
	st=$?
	[ $st -eq 2 ] && ok "--stack-size $bad is a usage error (exit 2)" || fail "--stack-size $bad exited $st"
done

# A command that cannot be executed: an error and a non-zero status, no spool crash.
sp_record nocmd.spool -- ./no-such-program
st=$?
if [ $st -ne 0 ] && [ $st -lt 128 ]; then
	ok "record of a missing program fails with status $st"
else
	fail "record of a missing program exited $st"
fi
grep -q 'no-such-program' record.err && ok "the error names the missing program" ||
	fail "error does not name the missing program: $(head -c 300 record.err)"

finish
