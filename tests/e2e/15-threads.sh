# SPDX-License-Identifier: MIT
# Threads: the main thread calling pthread_exit does not end the recording while
# workers run (launched, and attached with -p); 200 short-lived threads started during
# the recording are all followed, their samples rooted at the thread start frames.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload leader_exit
LEADER=$WL
need_workload thread_churn
CHURN=$WL

ROOT='^_start;__libc_start_main[^;]*;__libc_start_call_main;main'
THREAD_ROOT='^(__GI_)?_*clone3?'
MIN=99

# thread_samples DUMP: "pid tid samples first_ns last_ns" for every thread with samples.
thread_samples() {
	awk '
		function val(k,   i) { for (i = 2; i <= NF; i++) if (index($i, k "=") == 1) return substr($i, length(k) + 2); return "" }
		$1 == "thread" { pid[val("index")] = val("pid"); tid[val("index")] = val("tid") }
		$1 == "sample" {
			t = val("thread"); ns = val("time_ns") + 0
			n[t]++
			if (!(t in first) || ns < first[t]) first[t] = ns
			if (ns > last[t]) last[t] = ns
		}
		END { for (t in n) printf "%s %s %d %.0f %.0f\n", pid[t], tid[t], n[t], first[t], last[t] }' "$1"
}

# after_leader DUMP PID: "after total": samples of PID's other threads later than the
# main thread's last sample, and all of theirs.
after_leader() {
	awk -v p="$2" '
		function val(k,   i) { for (i = 2; i <= NF; i++) if (index($i, k "=") == 1) return substr($i, length(k) + 2); return "" }
		$1 == "thread" { pid[val("index")] = val("pid"); tid[val("index")] = val("tid") }
		$1 == "sample" {
			t = val("thread"); ns = val("time_ns") + 0
			if (pid[t] != p) next
			if (tid[t] == p) { if (ns > lead) lead = ns; next }
			n++; when[n] = ns
		}
		END { for (i = 1; i <= n; i++) if (when[i] > lead) a++; printf "%d %d\n", a, n }' "$1"
}

# check_leader NAME SPOOL PID: worker samples go on after the main thread's exit.
check_leader() {
	with_timeout 60 "$SP" dump "$2" >"$1.dump" 2>/dev/null || { fail "$1: dump failed"; return; }
	thread_samples "$1.dump" | sed "s/^/# $1 thread (pid tid samples first_ns last_ns): /"
	set -- "$1" "$2" "$3" $(after_leader "$1.dump" "$3")
	# The leader spins 200 CPU-ms beside 2 workers of 800: about 3/4 of the workers'
	# time comes after it left.
	if [ "$5" -eq 0 ]; then
		fail "$1: no worker samples at all"
	else
		share_at_least "$1:" 50 "$4" "$5" "the worker samples come after pthread_exit in main" ||
			info "$1: did the recording end with the leader?"
	fi
	with_timeout 60 "$SP" report --format=folded "$2" >"$1.folded" 2>/dev/null
	# Complete: unwound from the sampled function through worker_main to the thread's
	# start.  Most samples are in worker_leaf; the rest are in the workload's own waits
	# and clock reads (nap_ms, thread_cpu_ms's syscall: 0.5-1.2% of them), as complete.
	set -- "$1" $(folded_share "$1.folded" "$THREAD_ROOT;start_thread;worker_main(;|\$)") "$5"
	share_at_least "$1:" $MIN "$2" "$4" "the worker samples are complete worker stacks"
	set -- "$1" $(folded_share "$1.folded" "$ROOT;leader_work;leader_leaf\$")
	info "$1: main thread's stacks main;leader_work;leader_leaf: $2 samples"
}

# Launched: the process ends (status 0) when the last worker returns.
sp_record lead.spool -F 999 -- "$LEADER" -n 2 -l 200 -m 800 -P >lead.out
rc=$?
sed 's/^/# record: /' record.err
pid=$(awk '$1 == "pid" { print $2 }' lead.out)
[ $rc -eq 0 ] && ok "launched: record exits 0 (the workload's status)" || fail "launched: record exited $rc: $(head -c 300 record.err)"
[ -n "$pid" ] && check_leader launched lead.spool "$pid"

# Attached: the workers exist before the attach and start spinning once the gate file
# appears; record -p must run until the last of them has exited.
"$LEADER" -n 2 -l 200 -m 800 -g gate -P >att.out 2>&1 &
apid=$!
track_pid $apid
i=0
while ! grep -q '^pid ' att.out && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
with_timeout 60 "$SP" record -p $apid -F 999 -o att.spool >/dev/null 2>att.err &
rec=$!
track_pid $rec
sleep 1
touch gate
t0=$(date +%s)
wait $rec
rc=$?
t1=$(date +%s)
sed 's/^/# record -p: /' att.err
[ $rc -eq 0 ] && ok "attached: record -p exits 0 after $((t1 - t0)) s" || fail "attached: record -p exited $rc: $(head -c 300 att.err)"
kill -0 $apid 2>/dev/null && fail "attached: record -p ended while the workload still ran"
wait $apid 2>/dev/null
check_leader attached att.spool "$apid"

# 200 threads started during the recording, 2 at a time, 10 CPU-ms each.
NT=200
sp_record churn.spool -F 999 -- "$CHURN" -n $NT -j 2 -m 10 >/dev/null
rc=$?
sed 's/^/# record churn: /' record.err
[ $rc -eq 0 ] && ok "record of $NT short-lived threads exits 0" || { fail "record of thread_churn exited $rc: $(head -c 300 record.err)"; finish; }
with_timeout 60 "$SP" dump churn.spool >churn.dump 2>/dev/null
thread_samples churn.dump >threads.txt
main_pid=$(awk '$1 == "exec" { sub(/^pid=/, "", $2); print $2; exit }' churn.dump)
ntids=$(awk -v p="$main_pid" '$2 != p' threads.txt | wc -l)
wsamples=$(awk -v p="$main_pid" '$2 != p { n += $3 } END { print n + 0 }' threads.txt)
info "churn: $ntids threads besides main have samples ($wsamples samples); main thread: $(awk -v p="$main_pid" '$2 == p { n = $3 } END { print n + 0 }' threads.txt) samples"
[ "$ntids" -ge 150 ] && ok "$ntids of $NT short-lived threads have samples (>= 150)" ||
	fail "only $ntids of $NT short-lived threads have samples"
with_timeout 60 "$SP" report --format=folded churn.spool >churn.folded 2>/dev/null
folded_top churn.folded 4 | sed 's/^/# churn top: /'
set -- $(folded_share churn.folded "$THREAD_ROOT(;|\$)")
rooted=$1
if [ "$wsamples" -eq 0 ]; then
	fail "churn: no samples from the short-lived threads"
elif ! share_at_least churn: $MIN "$rooted" "$wsamples" "the threads' samples are rooted at start_thread/clone3"; then
	info "churn: other stacks:"
	folded_top churn.folded 100 | grep -Ev "^[0-9]+ $THREAD_ROOT(;|\$)" | grep -v ';main;' | head -n 5 | sed 's/^/#   /'
fi
set -- $(folded_share churn.folded "$THREAD_ROOT;start_thread;churn_thread;churn_step;churn_leaf\$")
info "churn: complete stacks (start_thread;churn_thread;churn_step;churn_leaf) $1 / $wsamples = $(pct "$1" "$wsamples")%"

# The same under record -p: attach to a shell that, a second later, execs thread_churn.
sh -c "sleep 1; exec '$CHURN' -n $NT -j 2 -m 10 >/dev/null" &
spid=$!
track_pid $spid
with_timeout 60 "$SP" record -p $spid -F 999 -o pchurn.spool >/dev/null 2>pchurn.err
rc=$?
sed 's/^/# record -p churn: /' pchurn.err
if [ $rc -ne 0 ]; then
	fail "record -p of thread_churn exited $rc: $(head -c 300 pchurn.err)"
else
	with_timeout 60 "$SP" dump pchurn.spool >pchurn.dump 2>/dev/null
	thread_samples pchurn.dump >pthreads.txt
	ntids=$(awk -v p="$spid" '$2 != p' pthreads.txt | wc -l)
	info "record -p churn: $ntids threads besides main have samples"
	[ "$ntids" -ge 150 ] && ok "record -p: $ntids of $NT threads started while attached have samples (>= 150)" ||
		fail "record -p: only $ntids of $NT threads started while attached have samples"
fi
finish
