# SPDX-License-Identifier: MIT
# record -p: attach to a running multi-threaded process for 3 s; samples from every
# worker thread; the process keeps running afterwards.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload threads

NTHREADS=3
: >threads.out
"$WL" -n $NTHREADS -f -P >threads.out 2>&1 &
pid=$!
track_pid $pid
# Wait until every worker runs (the workload prints its pid once they are created).
i=0
while ! grep -q '^pid ' threads.out && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
grep -q "^pid $pid\$" threads.out || { fail "threads workload did not start (pid $pid): $(cat threads.out)"; finish; }
nt=$(ls /proc/$pid/task | wc -l)
info "threads workload pid $pid runs $nt threads"

start=$(date +%s)
with_timeout 60 "$SP" record -p $pid -F 999 -o att.spool -d 3 >record.out 2>record.err
st=$?
elapsed=$(($(date +%s) - start))
[ $st -eq 0 ] && ok "record -p $pid -d 3 exits 0 after ${elapsed}s" || fail "record -p exited $st: $(head -c 300 record.err)"
[ "$elapsed" -le 10 ] && ok "-d 3 ends the attach within 10 s" || fail "record -p -d 3 took ${elapsed}s"
sed 's/^/# record -p: /' record.err

if kill -0 $pid 2>/dev/null; then
	ok "the process is still running after record -p detached"
else
	fail "the process died while or after being recorded"
fi
sleep 0.5
kill -0 $pid 2>/dev/null && [ "$(ls /proc/$pid/task | wc -l)" -eq "$nt" ] &&
	ok "all $nt threads still run half a second later" || fail "the process lost threads or died after detach"

with_timeout 60 "$SP" dump att.spool >dump.txt 2>dump.err || { fail "dump failed: $(head -c 300 dump.err)"; finish; }
# Distinct tids that have samples (sample thread= is a thread index).
tids=$(awk '
	function val(k,   i) { for (i = 2; i <= NF; i++) if (index($i, k "=") == 1) return substr($i, length(k) + 2); return "" }
	$1 == "thread" { tid[val("index")] = val("tid"); pidof[val("index")] = val("pid") }
	$1 == "sample" { seen[val("thread")]++ }
	END { for (t in seen) printf "%s:%s:%d\n", pidof[t], tid[t], seen[t] }' dump.txt)
info "sampled threads (pid:tid:samples): $(echo $tids)"
nsampled=$(echo "$tids" | grep -c ":")
[ "$nsampled" -ge $NTHREADS ] && ok "$nsampled threads have samples (>= $NTHREADS workers)" ||
	fail "only $nsampled threads have samples (expected >= $NTHREADS)"
wrong=$(echo "$tids" | awk -F: -v p=$pid 'NF == 3 && $1 != p' | wc -l)
[ "$wrong" -eq 0 ] && ok "every sampled thread belongs to pid $pid" || fail "$wrong sampled threads are not in pid $pid"
for t in /proc/$pid/task/*; do
	tid=${t##*/}
	[ "$tid" = "$pid" ] && continue
	echo "$tids" | grep -q "^$pid:$tid:" || fail "worker tid $tid has no samples"
done
nsamples=$(awk '$1 == "sample"' dump.txt | wc -l)
# 3 busy workers on the available CPUs for 3 s at the default rate: well over 1000.
[ "$nsamples" -ge 1000 ] && ok "$nsamples samples in 3 s of attach" || fail "only $nsamples samples in 3 s of attach"

with_timeout 60 "$SP" report --format=folded att.spool >att.folded 2>/dev/null
set -- $(folded_share att.folded '^(__GI_)?_*clone3?;start_thread;worker;worker_step;worker_leaf$')
share_at_least "record -p:" 99 "$1" "$2" "the attached samples are complete worker stacks"

# Attaching to a pid that does not exist: status 1 and a message naming it.
with_timeout 30 "$SP" record -p 999999999 -o none.spool -d 1 >/dev/null 2>err.txt
st=$?
[ $st -eq 1 ] && grep -q 999999999 err.txt && ok "record -p on a missing pid exits 1: $(head -n 1 err.txt)" ||
	fail "record -p on a missing pid exited $st: $(head -n 1 err.txt)"

# Ctrl-C (SIGINT) ends an attach cleanly: status 0, a complete spool, target alive.
# A non-interactive shell starts background jobs with SIGINT ignored; env resets it
# where coreutils can, so the recorder sees the signal as it would from a terminal.
defsig=
env --default-signal=INT true 2>/dev/null && defsig="env --default-signal=INT"
$defsig "$SP" record -p $pid -F 999 -o int.spool >/dev/null 2>int.err &
rec=$!
track_pid $rec
sleep 2
kill -INT $rec
i=0
while kill -0 $rec 2>/dev/null && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
if kill -0 $rec 2>/dev/null; then
	fail "record -p did not stop within 10 s of SIGINT"
else
	wait $rec
	st=$?
	[ $st -eq 0 ] && ok "SIGINT ends record -p with status 0" || fail "record -p exited $st after SIGINT: $(head -c 300 int.err)"
	with_timeout 60 "$SP" report --format=folded int.spool >int.folded 2>int.rerr
	st=$?
	n=$(folded_total int.folded)
	[ $st -eq 0 ] && [ "$n" -gt 0 ] && ok "the spool after SIGINT reports $n samples" ||
		fail "the spool after SIGINT: report exited $st with $n samples: $(head -c 300 int.rerr)"
	grep -qi truncat int.rerr && fail "the spool after SIGINT is truncated: $(head -n 1 int.rerr)" ||
		ok "the spool after SIGINT is complete (no truncation warning)"
	kill -0 $pid 2>/dev/null && ok "the process survives a Ctrl-C of the recorder" ||
		fail "the process died when the recorder got SIGINT"
fi
kill -KILL $pid 2>/dev/null

# Without -d, an attach ends when the process exits (threads -t 2: 2 s of CPU).
"$WL" -n 2 -t 2 -P >short.out 2>&1 &
spid=$!
track_pid $spid
i=0
while ! grep -q '^pid ' short.out && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
start=$(date +%s)
with_timeout 60 "$SP" record -p $spid -F 999 -o exit.spool >/dev/null 2>exit.err
st=$?
elapsed=$(($(date +%s) - start))
[ $st -eq 0 ] && [ "$elapsed" -le 20 ] && ok "record -p ends ${elapsed}s after the process exits (status $st)" ||
	fail "record -p on an exiting process: status $st after ${elapsed}s: $(head -c 300 exit.err)"
n=$(summary_number exit.err samples)
[ -n "$n" ] && [ "$n" -gt 0 ] && ok "record -p until exit wrote $n samples" || fail "record -p until exit wrote '$n' samples"

finish
