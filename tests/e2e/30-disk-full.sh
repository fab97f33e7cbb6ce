# SPDX-License-Identifier: MIT
# A full disk under the spool: record stops with an error naming the spool, the
# errno text ("No space left on device") and what to do; it exits 1, ends a
# launched command, leaves a -p target running (not stopped), and the spool's
# prefix is readable by report and dump, which say it was cut short.  The disk is
# a tiny tmpfs mounted in the test's temp dir (skipped where mount is not allowed).
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload threads
THREADS=$WL

FULL=$TMP/full
mkdir -p "$FULL"
# 32 KiB: a few thousand samples of two busy threads fill it in about a second.
mount -t tmpfs -o size=32k,mode=0777 stackpulse-e2e "$FULL" 2>mount.err ||
	skip_all "cannot mount a small tmpfs for the full disk ($(head -n 1 mount.err)); run as root"
trap 'umount "$FULL" 2>/dev/null; cleanup' EXIT

# state PID: the one-letter process state from /proc (R, S, T, ...), empty when gone.
state() {
	sed -n 's/.*) \([A-Za-z]\) .*/\1/p' "/proc/$1/stat" 2>/dev/null
}

# check_prefix NAME SPOOL: report and dump read the prefix and say it was cut short.
check_prefix() {
	with_timeout 60 "$SP" dump "$2" >"$1.dump" 2>"$1.derr"
	rc=$?
	n=$(grep -c '^sample ' "$1.dump")
	info "$1: dump exit $rc, $n samples in $(wc -c <"$2") bytes; $(tail -n 1 "$1.dump" | cut -c1-90)"
	[ $rc -eq 0 ] && [ "$n" -gt 0 ] && ok "$1: dump reads the prefix ($n samples)" ||
		fail "$1: dump exit $rc with $n samples: $(head -c 300 "$1.derr")"
	grep -Eqi '^# (truncated|cut short)' "$1.dump" && ok "$1: dump says the spool was cut short" ||
		fail "$1: dump does not say the spool was cut short"
	with_timeout 60 "$SP" report --format=folded "$2" >"$1.folded" 2>"$1.rerr"
	rc=$?
	[ $rc -eq 0 ] && [ "$(folded_total "$1.folded")" = "$n" ] &&
		ok "$1: report reads the same $n samples" ||
		fail "$1: report exit $rc, $(folded_total "$1.folded") samples (dump: $n): $(head -c 300 "$1.rerr")"
	grep -qi 'cut short\|truncated' "$1.rerr" && ok "$1: report warns that the spool was cut short" ||
		fail "$1: report does not warn that the spool was cut short"
}

# --- record -- COMMAND --------------------------------------------------------------
t0=$(date +%s)
with_timeout 60 "$SP" record -F 5000 -o "$FULL/cmd.spool" -- "$THREADS" -n 2 -t 60 -P \
	>cmd.out 2>cmd.err
rc=$?
t1=$(date +%s)
info "record -- threads into a 32 KiB tmpfs: exit $rc after $((t1 - t0)) s"
sed 's/^/# /' cmd.err
[ $rc -eq 1 ] && ok "record exits 1 when the disk is full" || fail "record exited $rc on a full disk (expected 1)"
[ $((t1 - t0)) -lt 30 ] && ok "record stops at once on a full disk" || fail "record ran $((t1 - t0)) s on a full disk"
grep -q "cmd.spool'" cmd.err && grep -q 'No space left on device' cmd.err &&
	ok "the error names the spool and 'No space left on device'" ||
	fail "the error does not name the spool and ENOSPC: $(head -c 300 cmd.err)"
grep -q 'free space\|another file system' cmd.err && ok "the error says what to do" ||
	fail "the error does not say what to do"
cmd=$(sed -n 's/^pid \([0-9]*\).*/\1/p' cmd.out | head -n 1)
if [ -z "$cmd" ]; then
	fail "the workload did not print its pid"
else
	kill -0 "$cmd" 2>/dev/null && { fail "the launched command $cmd still runs"; kill -KILL "$cmd"; } ||
		ok "the launched command was ended"
fi
grep -q "was ended\|killed by signal" cmd.err && ok "record says the command was ended" ||
	fail "record does not say what happened to the command"
check_prefix "record -- COMMAND" "$FULL/cmd.spool"
rm -f "$FULL/cmd.spool"

# --- record -p PID --------------------------------------------------------------------
"$THREADS" -n 2 -f -P >target.out 2>&1 &
target=$!
track_pid $target
i=0
while ! grep -q '^pid ' target.out && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
with_timeout 60 "$SP" record -p $target -F 5000 -o "$FULL/pid.spool" >/dev/null 2>pid.err
rc=$?
info "record -p into a 32 KiB tmpfs: exit $rc"
sed 's/^/# /' pid.err
[ $rc -eq 1 ] && ok "record -p exits 1 when the disk is full" || fail "record -p exited $rc on a full disk"
grep -q 'No space left on device' pid.err && grep -q 'keep running' pid.err &&
	ok "record -p names ENOSPC and says the processes keep running" ||
	fail "record -p's error: $(head -c 300 pid.err)"
sleep 0.3
st=$(state $target)
case $st in
R | S) ok "the -p target still runs (state $st)" ;;
*) fail "the -p target is in state '${st:-gone}' after the recorder failed" ;;
esac
check_prefix "record -p" "$FULL/pid.spool"
kill -KILL $target 2>/dev/null

# --- a disk full before recording starts ---------------------------------------------
dd if=/dev/zero of="$FULL/filler" bs=4096 count=64 2>/dev/null
with_timeout 60 "$SP" record -F 999 -o "$FULL/none.spool" -- "$THREADS" -n 1 -t 60 -P >none.out 2>none.err
rc=$?
info "record into a full tmpfs: exit $rc: $(head -n 1 none.err)"
[ $rc -eq 1 ] && grep -q "none.spool'" none.err && grep -q 'No space left on device' none.err &&
	grep -q 'free space' none.err && ok "a disk full from the start: exit 1, the spool, ENOSPC and what to do named" ||
	fail "a disk full from the start: exit $rc: $(head -c 300 none.err)"
cmd=$(sed -n 's/^pid \([0-9]*\).*/\1/p' none.out | head -n 1)
[ -n "$cmd" ] && kill -0 "$cmd" 2>/dev/null && { fail "the command $cmd runs on although recording failed"; kill -KILL "$cmd"; } ||
	ok "no command is left running"
rm -f "$FULL/filler"
finish
