# SPDX-License-Identifier: MIT
# A command that crashes: the crash workload spins in crash_work > crash_hot, then
# writes through a NULL pointer.  The spool holds its samples up to the crash (the
# hot function among them), record names the command's fate (signal 11) and exits
# with the shell's status for it, 128 + 11 = 139.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload crash
CRASH=$WL

sp_record crash.spool -F 999 -- "$CRASH" 500 >/dev/null
rc=$?
sed 's/^/# /' record.err
[ $rc -eq 139 ] && ok "record exits 139 (128 + SIGSEGV) when the command crashes" ||
	fail "record exited $rc when the command died of SIGSEGV (expected 139)"
grep -q "killed by signal 11 (Segmentation fault)" record.err &&
	ok "record names the command's fate: killed by signal 11 (Segmentation fault)" ||
	fail "record does not name the command's fate: $(tail -n 2 record.err)"
written=$(summary_number record.err written)
with_timeout 60 "$SP" dump crash.spool >crash.dump 2>crash.derr
n=$(grep -c '^sample ' crash.dump)
grep -q '^summary ' crash.dump && ok "the spool is complete (summary trailer)" ||
	fail "the spool has no summary trailer: $(tail -n 1 crash.dump)"
[ "$n" = "$written" ] && ok "dump holds the $n samples the summary wrote" ||
	fail "dump holds $n samples, the summary says ${written:-?} written"
with_timeout 60 "$SP" report --format=folded crash.spool >crash.folded 2>crash.rerr
set -- $(folded_share crash.folded 'crash_work;crash_hot')
[ "${2:-0}" -ge 300 ] && ok "the samples up to the crash are recorded: $2 for 500 ms of CPU at 999 Hz (>= 300)" ||
	fail "only ${2:-0} samples recorded up to the crash (expected >= 300 for 500 ms of CPU at 999 Hz)"
share_at_least 80 "$1" "$2" "the samples up to the crash are crash_hot under crash_work"

# The same with -q: no summary, but the exit status still tells.
sp_record crashq.spool -q -F 999 -- "$CRASH" 50 >/dev/null
rc=$?
[ $rc -eq 139 ] && ok "record -q also exits 139" || fail "record -q exited $rc (expected 139)"
finish
