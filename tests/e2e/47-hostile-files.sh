# SPDX-License-Identifier: MIT
# Hostile files where stackpulse looks for module files and separate debug files.
# A copy of chain4 without a build-id, stripped, with a .gnu_debuglink: the debug file
# search then opens candidates beside it and proves them by reading them whole (CRC).
# A symlink planted there (to a 0600 file of secret text) must not be opened or read;
# a candidate of another owner, one others may write, or one reached through a
# symlinked .debug directory is refused; a 1 TB sparse candidate must not hang report,
# nor record's end, which names a deleted module from the image it holds.  Last, a
# FIFO where a deleted module's path was (and at the path maps gives it,
# "PATH (deleted)") must not hang record -p or leave the target stopped.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload chain4
need_cmd objcopy "making a module without a build-id"
need_cmd strip "making a module without a build-id"
need_cmd readelf "checking the build-id is gone"
need_cmd strace "seeing which files report opens and reads"
need_cmd truncate "making a sparse file"
need_cmd mkfifo "planting a FIFO"
[ "$(id -u)" = 0 ] ||
	skip_all "needs root: the candidates are other users' files and a symlink read by root"

CHAIN=';main;level1;level2;level3;level4$'

# prog: chain4 without a build-id, stripped, its debug link naming prog.debug (kept as
# good.debug, the real debug file, for the check that it still works).
cp "$WL" prog && objcopy --remove-section .note.gnu.build-id prog &&
	objcopy --only-keep-debug prog prog.debug 2>objcopy.err && strip -s prog &&
	objcopy --add-gnu-debuglink=prog.debug prog && mv prog.debug good.debug || {
	fail "cannot make prog (chain4 without a build-id, stripped, with a debug link)"
	finish
}
if readelf -n prog 2>/dev/null | grep -q 'Build ID'; then
	fail "prog still has a build-id: the debug link would not be the proof"
	finish
fi
sp_record prog.spool -F 499 -- ./prog -t 1 >/dev/null || {
	fail "record of prog exited $?: $(head -c 300 record.err)"
	finish
}

# report_folded OUT: report prog.spool as folded stacks, stderr in OUT.err, status kept.
report_folded() {
	with_timeout 20 "$SP" report --format=folded prog.spool >"$1" 2>"$1.err"
}

# The real debug file beside prog, root's: the debug link's CRC proves it.
cp good.debug prog.debug
report_folded good.folded
set -- $(folded_share good.folded "$CHAIN")
share_at_least "the real debug file beside prog:" 90 "$1" "$2" "the samples are named main;...;level4" ||
	info "top stack: $(folded_top good.folded 1)"

# refused NAME OUT: the candidate gave no names, and report counted and named it.
refused() {
	if grep -q level4 "$2"; then
		fail "$1: its names were used: $(folded_top "$2" 1)"
	elif grep -q "refused.*prog\.debug" "$2.err"; then
		ok "$1: refused, and the warning names it"
	else
		fail "$1: no warning names prog.debug: $(head -c 300 "$2.err")"
	fi
}

# The same file owned by another user, then writable by others.
chown 65534 prog.debug
report_folded other.folded
refused "the real debug file owned by another user (uid 65534)" other.folded
chown 0 prog.debug
chmod 0666 prog.debug
report_folded writable.folded
refused "the real debug file writable by others (mode 0666)" writable.folded

# The real debug file in .debug/, a symlink to a directory elsewhere.
rm -f prog.debug && mkdir elsewhere && cp good.debug elsewhere/prog.debug &&
	ln -s "$TMP/elsewhere" .debug
report_folded linkdir.folded
refused "the real debug file through .debug, a symlink to another directory" linkdir.folded
rm -rf .debug elsewhere

# A symlink to a secret: not opened, not read (strace sees every open and read).
secret="stackpulse-secret-$$-do-not-read"
echo "$secret" >secret.txt && chmod 0600 secret.txt
rm -f prog.debug && ln -s "$TMP/secret.txt" prog.debug
traced with_timeout 60 strace -f -s 256 -e trace=open,openat,read,pread64 -o trace.txt \
	"$SP" report --format=folded prog.spool >link.folded 2>link.folded.err
rc=$?
opened=$(grep -E '(prog\.debug|secret\.txt)", [^)]*\) = [0-9]+' trace.txt | head -n 1)
if [ $rc != 0 ]; then
	fail "report with a symlinked candidate exited $rc: $(head -c 300 link.folded.err)"
elif [ -n "$opened" ]; then
	fail "the symlink's target was opened: $opened"
elif grep -q "$secret" trace.txt; then
	fail "the secret was read: $(grep -m 1 "$secret" trace.txt | head -c 200)"
else
	ok "a symlink planted as the candidate is not followed: its target never opened or read"
fi
refused "a symlink as the candidate" link.folded

# A sparse candidate of 1 TB: refused unread, not read for its CRC.
rm -f prog.debug && truncate -s 1T prog.debug
start=$(date +%s)
report_folded sparse.folded
rc=$?
took=$(($(date +%s) - start))
info "report with a 1 TB sparse candidate: exit $rc in $took s"
[ $rc = 0 ] && [ $took -lt 20 ] && ok "a 1 TB sparse candidate does not hang report ($took s)" ||
	fail "report with a 1 TB sparse candidate: exit $rc after $took s (124: timed out)"
refused "a 1 TB sparse candidate" sparse.folded

# The same at record's end: a running copy whose file is deleted has its frames named
# from the image record holds, and the search beside it meets the sparse candidate.
mkdir run && cp prog run/prog && truncate -s 1T run/prog.debug
./run/prog -t 60 >/dev/null 2>&1 &
pid=$!
track_pid $pid
sleep 0.3
rm run/prog
start=$(date +%s)
with_timeout 30 "$SP" record -p $pid -d 2 -o end.spool 2>end.err
rc=$?
took=$(($(date +%s) - start))
info "record -p of a deleted module with a 1 TB sparse candidate: exit $rc in $took s"
[ $rc = 0 ] && [ $took -lt 30 ] &&
	ok "record's end does not read a 1 TB sparse candidate ($took s)" ||
	fail "record -p, a 1 TB sparse candidate beside the deleted module: exit $rc after $took s"
kill -KILL $pid 2>/dev/null
wait $pid 2>/dev/null

# A FIFO where a deleted module's path was, and at "PATH (deleted)", the path maps gives.
need_workload threads
mkdir fifo && cp "$WL" fifo/tw
./fifo/tw -n 1 -f >/dev/null 2>&1 &
pid=$!
track_pid $pid
sleep 0.5
rm fifo/tw && mkfifo fifo/tw "fifo/tw (deleted)"
start=$(date +%s)
with_timeout 30 "$SP" record -p $pid -d 2 -o fifo.spool 2>fifo.err
rc=$?
took=$(($(date +%s) - start))
state=$(sed 's/.*) //' /proc/$pid/stat 2>/dev/null | cut -d ' ' -f 1)
info "record -p with FIFOs at the module's path: exit $rc in $took s, target state ${state:-gone}"
[ $rc = 0 ] && [ $took -lt 30 ] &&
	ok "FIFOs at a deleted module's path do not hang record -p ($took s)" ||
	fail "record -p, FIFOs at the path: exit $rc after $took s: $(head -c 300 fifo.err)"
case $state in
'') fail "the target is gone after record -p" ;;
T | t) fail "the target was left stopped (state $state)" ;;
*) ok "the target still runs, not stopped (state $state)" ;;
esac
with_timeout 60 "$SP" report --format=folded fifo.spool >fifo.folded 2>/dev/null
grep -q 'worker;worker_step;worker_leaf' fifo.folded &&
	ok "the deleted module is named from the mapped image, not the FIFO" ||
	fail "the deleted module is not named: $(folded_top fifo.folded 1)"
finish
