# SPDX-License-Identifier: MIT
# Ending a recording from outside: SIGINT or SIGTERM to record -p finishes the spool
# (summary trailer), exits 0 and leaves the target running; to record -- COMMAND it
# finishes the spool and exits with the command's status; SIGKILL leaves a spool
# whose intact prefix (>= 80% of the samples expected) report and dump read, saying
# it was cut short.  A frequency above
# kernel.perf_event_max_sample_rate is refused, naming the limit and the sysctl.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload threads
THREADS=$WL
need_workload chain4
CHAIN4=$WL

# A non-interactive shell starts background jobs with SIGINT ignored; env resets it
# where coreutils can, so the recorder sees SIGINT as it would from a terminal.
DEFSIG=
env --default-signal=INT true 2>/dev/null && DEFSIG="env --default-signal=INT"

# now_s: seconds since the epoch with fractions where date(1) has %N.
now_s() {
	t=$(date +%s.%N 2>/dev/null)
	case $t in *N*|'') date +%s ;; *) echo "$t" ;; esac
}

# wait_gone PID SECONDS: wait until PID has exited; 1 when it is still there.
wait_gone() {
	i=0
	while kill -0 "$1" 2>/dev/null && [ $i -lt $(($2 * 10)) ]; do
		sleep 0.1
		i=$((i + 1))
	done
	! kill -0 "$1" 2>/dev/null
}

# complete_spool NAME SPOOL: the spool has its summary trailer and is not truncated.
complete_spool() {
	with_timeout 60 "$SP" dump "$2" >"$1.dump" 2>"$1.derr"
	n=$(grep -c '^sample ' "$1.dump")
	if grep -q '^summary ' "$1.dump" && ! grep -q '^# truncated' "$1.dump"; then
		ok "$1: the spool is complete (summary trailer, $n samples)"
	else
		fail "$1: the spool is not complete ($n samples, $(tail -n 1 "$1.dump" | cut -c1-80))"
	fi
}

# --- record -p: SIGINT and SIGTERM ---------------------------------------------------
"$THREADS" -n 1 -f -P >target.out 2>&1 &
target=$!
track_pid $target
i=0
while ! grep -q '^pid ' target.out && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
for sig in INT TERM; do
	$DEFSIG "$SP" record -p $target -F 999 -o "p$sig.spool" >/dev/null 2>"p$sig.err" &
	rec=$!
	track_pid $rec
	sleep 1.5
	kill -$sig $rec
	if ! wait_gone $rec 10; then
		fail "record -p: still running 10 s after SIG$sig"
		continue
	fi
	wait $rec
	rc=$?
	[ $rc -eq 0 ] && ok "record -p: SIG$sig ends it with status 0" || fail "record -p: exit $rc after SIG$sig: $(head -c 300 "p$sig.err")"
	grep -q 'samples written' "p$sig.err" && ok "record -p: the summary is printed after SIG$sig" ||
		fail "record -p: no summary on stderr after SIG$sig"
	complete_spool "record -p SIG$sig" "p$sig.spool"
	kill -0 $target 2>/dev/null && ok "record -p: the target still runs after SIG$sig to the recorder" ||
		fail "record -p: the target died when the recorder got SIG$sig"
done

# --- record -- COMMAND --------------------------------------------------------------
# Ctrl-C on a terminal reaches the whole process group: the command dies of SIGINT
# (130) and record exits with that status.
$DEFSIG "$SP" record -F 999 -o cint.spool -- "$CHAIN4" -t 60 >/dev/null 2>cint.err &
rec=$!
track_pid $rec
sleep 1.5
cmd=$(pgrep -P $rec 2>/dev/null | head -n 1)
if [ -n "$cmd" ]; then
	kill -INT $rec $cmd
	if wait_gone $rec 10; then
		wait $rec
		rc=$?
		info "record -- chain4: Ctrl-C (SIGINT to record and the command): exit $rc"
		[ $rc -eq 130 ] && ok "record -- COMMAND: Ctrl-C exits 130, the command's status" ||
			fail "record -- COMMAND: Ctrl-C exit $rc (the command died of SIGINT: expected 130)"
		grep -q 'samples written' cint.err && ok "record -- COMMAND: the summary is printed after Ctrl-C" ||
			fail "record -- COMMAND: no summary on stderr after Ctrl-C"
		complete_spool "record -- COMMAND SIGINT" cint.spool
	else
		fail "record -- COMMAND: still running 10 s after Ctrl-C"
	fi
else
	skip "record -- COMMAND Ctrl-C: pgrep cannot find the command under the recorder"
	kill -INT $rec
	wait_gone $rec 10
fi

# SIGTERM to record alone: it finishes the spool and ends the command with SIGTERM.
"$SP" record -F 999 -o cterm.spool -- "$CHAIN4" -t 60 >/dev/null 2>cterm.err &
rec=$!
track_pid $rec
sleep 1.5
cmd=$(pgrep -P $rec 2>/dev/null | head -n 1)
kill -TERM $rec
if wait_gone $rec 10; then
	wait $rec
	rc=$?
	info "record -- chain4: SIGTERM to record: exit $rc"
	[ $rc -eq 143 ] && ok "record -- COMMAND: SIGTERM exits 143 (the command ended by SIGTERM)" ||
		fail "record -- COMMAND: SIGTERM exit $rc (expected the command's status, 143)"
	grep -q 'samples written' cterm.err && ok "record -- COMMAND: the summary is printed after SIGTERM" ||
		fail "record -- COMMAND: no summary on stderr after SIGTERM"
	complete_spool "record -- COMMAND SIGTERM" cterm.spool
	[ -n "$cmd" ] && kill -0 "$cmd" 2>/dev/null && fail "record -- COMMAND: the command $cmd still runs" ||
		ok "record -- COMMAND: the command was ended"
else
	fail "record -- COMMAND: still running 10 s after SIGTERM"
fi

# --- SIGKILL mid-run: the intact prefix is readable -----------------------------------
# The target has one busy thread: about FREQ samples per second of the CPU time it
# gets while recorded (read from /proc, so a loaded machine does not skew the bound).
FREQ=999
TCK=$(getconf CLK_TCK 2>/dev/null || echo 100)
# cpu_s PID: user + system CPU seconds of a process (fields 14 and 15 of its stat).
cpu_s() {
	sed 's/.*) //' "/proc/$1/stat" | awk -v t="$TCK" '{ printf "%.2f", ($12 + $13) / t }'
}
"$SP" record -p $target -F $FREQ -o killed.spool >/dev/null 2>killed.err &
rec=$!
track_pid $rec
t0=$(now_s)
c0=$(cpu_s $target)
sleep 3
kill -KILL $rec
c1=$(cpu_s $target)
t1=$(now_s)
wait $rec 2>/dev/null
with_timeout 60 "$SP" report killed.spool >killed.txt 2>killed.rerr
rc=$?
[ $rc -eq 0 ] && ok "report reads the spool of a killed recorder (exit 0)" ||
	fail "report of the killed recorder's spool exited $rc: $(head -c 300 killed.rerr)"
grep -i 'cut short' killed.txt killed.rerr | head -n 2 | sed 's/^/# /'
grep -qi 'cut short' killed.txt killed.rerr && ok "report says the recording was cut short" ||
	fail "report does not say the recording was cut short"
with_timeout 60 "$SP" dump killed.spool >killed.dump 2>/dev/null
n=$(grep -c '^sample ' killed.dump)
expected=$(awk -v a="$c0" -v b="$c1" -v f=$FREQ 'BEGIN { printf "%d", (b - a) * f }')
info "killed after $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s ($(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.2f", b - a }') s of the target's CPU): $n samples recovered of about $expected expected ($(pct "$n" "$expected")%)"
info "killed spool: $(wc -c <killed.spool) bytes; last dump line: $(tail -n 1 killed.dump | cut -c1-80)"
# The writer flushes at least every 200 ms: a kill costs that and what the rings held.
share_at_least 80 "$n" "$expected" "the expected samples are kept in the killed recorder's spool"
# It ends mid-record ("# truncated") or at a record boundary without a summary ("# cut short").
grep -Eqi '^# (truncated|cut short)' killed.dump && ok "dump says the killed recorder's spool is cut short" ||
	fail "dump does not say the killed recorder's spool is truncated: $(tail -n 1 killed.dump | cut -c1-80)"
with_timeout 60 "$SP" report --format=folded killed.spool >killed.folded 2>/dev/null
[ "$(folded_total killed.folded)" = "$n" ] &&
	ok "report --format=folded counts every recovered sample ($n)" ||
	fail "report --format=folded counts $(folded_total killed.folded) samples, dump $n"
grep -q '^summary ' killed.dump && fail "the killed recorder's spool has a summary trailer" ||
	ok "the killed recorder's spool has no summary trailer"
kill -0 $target 2>/dev/null && ok "the target survives its recorder's SIGKILL" || fail "the target died with its recorder"
kill -KILL $target 2>/dev/null

# --- frequency above the kernel's limit -----------------------------------------------
max=$(cat /proc/sys/kernel/perf_event_max_sample_rate 2>/dev/null)
if [ -z "$max" ]; then
	skip "frequency limit: /proc/sys/kernel/perf_event_max_sample_rate is not readable"
else
	over=$((max + 1))
	sp_record over.spool -F $over -- "$CHAIN4" -t 1 >/dev/null
	rc=$?
	info "-F $over (limit $max): exit $rc: $(head -n 1 record.err)"
	[ $rc -eq 1 ] && ok "-F above the limit exits 1" || fail "-F $over exited $rc"
	grep -q 'perf_event_max_sample_rate' record.err && grep -q 'sysctl' record.err &&
		ok "the error names perf_event_max_sample_rate and sysctl" ||
		fail "the error does not name perf_event_max_sample_rate and sysctl: $(head -c 300 record.err)"
	[ ! -e over.spool ] && ok "no spool is created when the frequency is refused" ||
		info "a spool was created although the frequency was refused"
fi
finish
