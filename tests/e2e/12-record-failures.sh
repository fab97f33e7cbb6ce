# SPDX-License-Identifier: MIT
# record's edges: a failed start keeps the previous spool, -d ends the command with
# exit 0, a signal to record alone finishes the spool and ends the command.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload chain4

sp_record keep.spool -q -F 999 -- "$WL" -t 1 >/dev/null || fail "first recording failed: $(cat record.err)"
before=$(cksum <keep.spool)
sp_record keep.spool -q -- ./no-such-command-here
rc=$?
[ "$rc" -eq 127 ] && ok "a missing command exits 127" || fail "a missing command exited $rc"
grep -q "cannot run './no-such-command-here'" record.err &&
	ok "the error names the command" || fail "unexpected error: $(cat record.err)"
[ "$(cksum <keep.spool)" = "$before" ] && ok "the previous spool is left alone" ||
	fail "a failed start changed the previous spool"

sp_record nodir/x.spool -q -- "$WL" -t 1 >/dev/null
rc=$?
[ "$rc" -eq 1 ] && grep -q "cannot create spool 'nodir/x.spool'" record.err &&
	ok "an unwritable -o path is refused before the command starts" ||
	fail "-o into a missing directory: exit $rc, $(cat record.err)"

# -d ends a longer command with SIGTERM; that is the asked-for end: exit 0.
sp_record d.spool -q -d 1 -- "$WL" -t 60 >/dev/null
rc=$?
[ "$rc" -eq 0 ] && ok "-d 1 on a 60 s command exits 0" || fail "-d 1 exited $rc"
"$SP" report d.spool >d.txt 2>&1 && grep -q level4 d.txt && ok "the -d spool reports level4" ||
	fail "the -d spool does not report: $(head -c 300 d.txt)"

# SIGINT to record alone (not the process group): spool finished, command ended.
"$SP" record -o int.spool -- "$WL" -t 60 >/dev/null 2>int.err &
rec=$!
track_pid "$rec"
sleep 1.5
kill -INT "$rec"
t0=$(date +%s)
wait "$rec"
rc=$?
t1=$(date +%s)
info "record after SIGINT: exit $rc in $((t1 - t0)) s"
[ $((t1 - t0)) -le 5 ] && ok "SIGINT to record alone ends the recording promptly" ||
	fail "record took $((t1 - t0)) s to end after SIGINT"
pgrep -f "$WL -t 60" >/dev/null && fail "the launched command still runs" ||
	ok "the launched command was ended too"
"$SP" dump int.spool >int.dump 2>&1
grep -q '^summary ' int.dump && ok "the interrupted spool has its summary trailer" ||
	fail "no summary trailer after SIGINT"
# Every sample record counted before the signal is in the spool (how many there are
# depends on the CPU the command got in 1.5 s: ~1,500 on an idle machine).
n=$(grep -c '^sample ' int.dump)
written=$(summary_number int.err written)
[ "$n" -gt 100 ] && [ "$n" = "$written" ] && ok "the interrupted spool holds the $n samples record wrote" ||
	fail "$n samples in the interrupted spool, record says ${written:-?} written: $(head -c 300 int.err)"
# A directory given as the command fails like a missing one, before the spool is touched.
mkdir -p adir
printf 'old spool\n' >keep.spool
with_timeout 30 "$SP" record -o keep.spool -- ./adir >/dev/null 2>dir.err
rc=$?
[ $rc = 126 ] && [ "$(cat keep.spool)" = "old spool" ] && grep -q "cannot run './adir'" dir.err &&
	ok "a directory as the command: exit 126, the existing spool untouched" ||
	fail "a directory as the command: exit $rc, $(head -c 200 dir.err)"
with_timeout 30 "$SP" record -o adir -- true >/dev/null 2>isdir.err
rc=$?
[ $rc = 1 ] && grep -q "cannot create spool 'adir': Is a directory" isdir.err &&
	ok "a directory as the spool: 'cannot create spool', exit 1" ||
	fail "a directory as the spool: exit $rc, $(head -c 200 isdir.err)"
finish
