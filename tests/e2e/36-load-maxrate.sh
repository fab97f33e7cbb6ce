# SPDX-License-Identifier: MIT
# Load: 8 processes with 4 busy threads each, sampled at the kernel's maximum rate
# (kernel.perf_event_max_sample_rate).  Samples will be lost (each reserves ~33 KiB
# of ring); recording must not crash, must count and report the lost samples
# honestly (record's summary = the spool's lost records = its trailer), and report
# must read the result.  Prints samples, lost, the recorder's CPU and peak memory.
# With --realtime (root) the recorder runs at SCHED_FIFO and the command does not.
# e2e: alone (a load test at the highest sampling rate)
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload threads
THREADS=$WL
need_workload forker
FORKER=$WL
MAX=$(cat /proc/sys/kernel/perf_event_max_sample_rate 2>/dev/null)
[ -n "$MAX" ] || skip_all "kernel.perf_event_max_sample_rate is not readable"

start=$(date +%s)
# The bound is a hang check: the kernel's sampling work at this rate, charged to the
# workload, took the run from 30 to 48 s on the same VM.
with_timeout 180 "$SP" record -F "$MAX" -o max.spool -- "$FORKER" -n 8 -j 8 -x "$THREADS" -n 4 -t 1 \
	>max.out 2>max.err
rc=$?
secs=$(($(date +%s) - start))
sed 's/^/# /' max.err | head -n 12
[ $rc -eq 0 ] && ok "record at -F $MAX of 8 x 4 threads exits 0 (in $secs s)" ||
	fail "record at -F $MAX exited $rc after $secs s"
[ $secs -le 180 ] && ok "recording took $secs s (bound 180 s)" || fail "recording took $secs s"
grep -q '8 children, 0 failed' max.out && ok "the workload ran its 8 processes" ||
	fail "the workload did not run its 8 processes: $(tail -n 1 max.out)"
honest_counts "max rate" max.spool max.err
written=$(summary_number max.err written)
lost=$(sed -n 's/.*sample events), \([0-9][0-9]*\) lost.*/\1/p' max.err | head -n 1)
info "-F $MAX: ${written:-?} samples written, ${lost:-?} lost ($(pct "${lost:-0}" $((${written:-0} + ${lost:-0})))% of all), peak memory $(record_peak_mib max.err) MiB"
if [ "${lost:-0}" -gt 0 ]; then
	grep -q 'samples were lost: lower -F' max.err && ok "record says samples were lost and what to do" ||
		fail "record does not explain the lost samples"
fi
with_timeout 60 "$SP" dump max.spool >max.dump 2>/dev/null
info "$(pid_samples max.dump | wc -l) pids with samples"
with_timeout 120 "$SP" report max.spool >max.txt 2>max.rerr
rc=$?
# Which function tops the table at this rate is the machine's doing (the kernel's
# sampling work stretches every process's start-up: ld.so's do_lookup_x has led
# worker_leaf on the same VM): report must read every sample and name the workers.
shown=$(awk '/^Samples:/ { print $2; exit }' max.txt)
[ $rc -eq 0 ] && [ "$shown" = "$written" ] && grep -q ' worker_leaf  ' max.txt &&
	ok "report works: all $shown samples, worker_leaf among the functions (top: $(report_top_function max.txt))" ||
	fail "report exit $rc, $shown samples of $written, top function '$(report_top_function max.txt)': $(head -c 200 max.rerr)"
grep -q "lost $lost\|$lost lost" max.txt && ok "report shows the $lost lost samples" ||
	fail "report does not show the $lost lost samples: $(grep -i lost max.txt | head -n 2)"

# sched_of PID: "policy priority" from /proc/PID/stat (fields 41 and 40, counted after
# the command name, which may hold spaces); empty when PID is gone.
sched_of() {
	sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | awk '{ print $39, $38 }'
}

if [ "$(id -u)" != 0 ]; then
	skip "--realtime: needs root"
else
	# Half the load above: at this rate the kernel's sampling work, charged to the
	# workload as system time, varies several-fold from run to run on a shared VM.
	"$SP" record --realtime 10 -F "$MAX" -o rt.spool -- "$FORKER" -n 4 -j 4 -P -x "$THREADS" -n 4 -t 1 \
		>rt.out 2>rt.err &
	rpid=$!
	track_pid $rpid
	# Read the policies while the workload runs: the recorder's and the launched
	# command's (forker prints its pid and each child's as it starts them).
	i=0
	while [ $i -lt 600 ] && ! grep -q '^child ' rt.out && kill -0 $rpid 2>/dev/null; do
		sleep 0.1
		i=$((i + 1))
	done
	info "--realtime: the workload's first child showed up after $((i / 10)) s"
	fpid=$(awk '$1 == "pid" { print $2; exit }' rt.out)
	cpid=$(awk '$1 == "child" { print $2; exit }' rt.out)
	rsched=$(sched_of $rpid)
	fsched=$(sched_of "${fpid:-0}")
	csched=$(sched_of "${cpid:-0}")
	info "--realtime 10: recorder policy/priority '$rsched', command '$fsched', a child '$csched' (1 = SCHED_FIFO, 0 = SCHED_OTHER)"
	[ "$rsched" = "1 10" ] && ok "--realtime 10: the recorder runs at SCHED_FIFO priority 10" ||
		fail "--realtime 10: the recorder's policy and priority are '$rsched', not '1 10'"
	if [ -n "$cpid" ] && [ -z "$csched" ] && [ ! -d "/proc/$cpid" ]; then
		skip "--realtime: the child $cpid ended before its policy could be read"
	elif [ -z "$fpid" ] || [ -z "$cpid" ]; then
		# At the kernel's maximum rate a SCHED_FIFO recorder can keep a loaded 2-CPU
		# machine busy enough that the workload has not said its pids within 60 s.
		skip "--realtime: the workload had not reported its pids after 60 s (machine too loaded to check the policies)"
	else
		[ "$fsched" = "0 0" ] && [ "$csched" = "0 0" ] &&
			ok "--realtime: the launched command and its children keep SCHED_OTHER" ||
			fail "--realtime: the command's policy is '$fsched', a child's '$csched' (want '0 0'; pids '$fpid' '$cpid')"
	fi
	# A recording still going after 90 s is stopped as Ctrl-C would stop it: the spool
	# must then be as honest as a finished one.
	(sleep 90 && kill -INT $rpid && echo stopped >rt.stopped) 2>/dev/null &
	watchdog=$!
	wait $rpid
	rc=$?
	kill $watchdog 2>/dev/null
	if [ -e rt.stopped ]; then
		info "--realtime: stopped with SIGINT after 90 s (exit $rc)"
		[ $rc -ne 0 ] && grep -q 'samples written' rt.err && rc=0
	fi
	written=$(summary_number rt.err written)
	lost=$(sed -n 's/.*sample events), \([0-9][0-9]*\) lost.*/\1/p' rt.err | head -n 1)
	# How many are lost depends on how fast this machine's one recorder CPU drains
	# every ring: a figure to read beside the run above, not a pass mark.
	info "--realtime 10 -F $MAX: ${written:-?} written, ${lost:-?} lost ($(pct "${lost:-0}" $((${written:-0} + ${lost:-0})))%), $(grep -o 'recorder CPU.*' rt.err)"
	[ $rc -eq 0 ] && [ -n "$lost" ] && ok "--realtime: record at -F $MAX exits 0 and counts its lost samples" ||
		fail "--realtime: exit $rc, lost '${lost:-?}': $(head -c 300 rt.err)"
	honest_counts "realtime" rt.spool rt.err
fi
finish
