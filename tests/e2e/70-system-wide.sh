# SPDX-License-Identifier: MIT
# The whole machine and other events: record -a with three busy programs
# started outside the recorder and one started and ended during the recording; -C with
# programs pinned to CPUs; -e page-faults, -e context-switches, -c PERIOD; a hardware
# event on a machine without one.  Beside: perf record -a --call-graph dwarf.
# e2e: alone (records the whole machine)
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
[ "$(id -u)" = 0 ] || skip_all "system-wide recording needs root or CAP_PERFMON"
need_workload chain4
need_workload deep_recursion
need_workload spin_ms
need_workload event_mix
W=$WORKLOADS

# share_of PID ERE: "MATCHED TOTAL" of the folded stacks of one process of sw.spool
share_of() {
	with_timeout 60 "$SP" report --pid="$1" --format=folded sw.spool >"pid$1.folded" 2>/dev/null
	folded_share "pid$1.folded" "$2"
}

"$W/chain4" -t 30 >/dev/null & c4=$!; track_pid $c4
"$W/deep_recursion" -t 30 -d 15 >/dev/null & dr=$!; track_pid $dr
"$W/spin_ms" 30000 >/dev/null & sm=$!; track_pid $sm
sleep 0.3
# Started and ended while recording: 300 ms of CPU, a second in.
(sleep 1; exec "$W/spin_ms" 300 >/dev/null) & late=$!; track_pid $late
sp_record sw.spool -a -d 3 || { fail "record -a exited $?: $(head -c 300 record.err)"; finish; }
wait $late 2>/dev/null
info "record -a: $(sed -n 1,3p record.err | tr '\n' ' ')"
lost=$(sed -n 's/.*sample events), \([0-9][0-9]*\) lost.*/\1/p' record.err | head -n 1)
info "lost samples: ${lost:-?}"
# spin_ms checks its CPU time in cpu_ms (a clock read, sometimes a syscall): a whole chain too.
for check in \
	"$c4 chain4 ^_start;__libc_start_main;__libc_start_call_main;main;level1;level2;level3;level4$" \
	"$sm spin_ms ^_start;__libc_start_main;__libc_start_call_main;main;spin_outer;(spin_leaf$|cpu_ms)" \
	"$dr deep_recursion ^_start;__libc_start_main;__libc_start_call_main;main;(deep_recurse;)+deep_leaf$" \
	"$late spin_ms(late) ^_start;__libc_start_main;__libc_start_call_main;main;spin_outer;(spin_leaf$|cpu_ms)"; do
	set -- $check
	pid=$1 name=$2 re=$3
	set -- $(share_of "$pid" "$re")
	whole=$1 total=$2
	info "$name (pid $pid): $whole of $total samples carry the whole chain ($(pct "$whole" "$total")%)"
	if [ "$total" -eq 0 ]; then
		fail "$name (pid $pid): no samples in the system-wide recording"
	elif [ "$name" = "spin_ms(late)" ]; then
		share_at_least "a program started and ended during the recording:" 95 "$whole" "$total" "its samples carry its whole chain (named)" ||
			info "the late program: top stacks: $(folded_top "pid$pid.folded" 3 | tr '\n' ' ')"
	else
		share_at_least "$name:" 99 "$whole" "$total" "its samples carry its whole chain" ||
			info "$name: top stacks: $(folded_top "pid$pid.folded" 3 | tr '\n' ' ')"
	fi
done
# Kernel threads and idle CPUs are kept as such, never as unknown processes.
"$SP" dump sw.spool >sw.dump 2>/dev/null
grep -q 'system_wide=1' sw.dump && ok "the spool says it is system-wide" || fail "no system_wide=1 in dump's meta line"
mode=$(stat -c %a sw.spool)
[ "$mode" = 600 ] && ok "the system-wide spool is its owner's alone (mode 600, as perf.data)" ||
	fail "the system-wide spool has mode $mode, not 600"
if command -v perf >/dev/null 2>&1 &&
	with_timeout 60 perf record -q -a --call-graph dwarf -F 999 -o sw.data -- sleep 3 >/dev/null 2>&1; then
	sp_bytes=$(wc -c <sw.spool)
	sp_n=$(grep -c '^sample ' sw.dump)
	p_bytes=$(wc -c <sw.data)
	p_n=$(perf script -i sw.data -F ip 2>/dev/null | awk 'BEGIN { RS = "" } { n++ } END { print n + 0 }')
	info "3 s system-wide: stackpulse $sp_bytes bytes for $sp_n samples; perf --call-graph dwarf $p_bytes bytes for $p_n samples"
fi
kill $c4 $dr $sm 2>/dev/null
wait $c4 $dr $sm 2>/dev/null

# -C: programs pinned to CPU 0 and to CPU 1; recording CPU 0 sees only the first.
if command -v taskset >/dev/null 2>&1 && [ "$(nproc)" -ge 2 ]; then
	taskset -c 0 "$W/chain4" -t 30 >/dev/null & on0=$!; track_pid $on0
	taskset -c 1 "$W/spin_ms" 30000 >/dev/null & on1=$!; track_pid $on1
	sleep 0.3
	sp_record cpu0.spool -C 0 -d 2 || fail "record -C 0 exited $?: $(head -c 300 record.err)"
	kill $on0 $on1 2>/dev/null
	wait $on0 $on1 2>/dev/null
	with_timeout 60 "$SP" report --format=folded --pid=$on0 cpu0.spool >on0.folded 2>/dev/null
	with_timeout 60 "$SP" report --format=folded --pid=$on1 cpu0.spool >on1.folded 2>/dev/null
	n0=$(folded_total on0.folded) n1=$(folded_total on1.folded)
	info "-C 0: $n0 samples of the program on CPU 0, $n1 of the one on CPU 1"
	# at least 100: other work on a loaded machine may take most of CPU 0 from it
	[ "$n0" -gt 100 ] && [ "$n1" -eq 0 ] && ok "-C 0 keeps only CPU 0's samples" ||
		fail "-C 0: $n0 samples of CPU 0's program, $n1 of CPU 1's (want many and none)"
	# the idle task is pid 0: --pid 0 keeps it (a second with nothing busy)
	sp_record idle.spool -a -d 1 || fail "record -a -d 1 exited $?: $(head -c 300 record.err)"
	# How many samples the idle task has, from the per-process roots: on a machine kept
	# busy by other work there may be none, and --pid 0 must then keep none.
	"$SP" report --format=folded --group-by=process idle.spool 2>/dev/null |
		awk '/^\[idle\] \(pid 0\);/ { n += $NF } END { print n + 0 }' >idle.want
	want=$(cat idle.want)
	if "$SP" report --pid 0 --format=folded idle.spool >idle.folded 2>idle.err &&
		[ "$(folded_total idle.folded)" = "$want" ]; then
		if [ "$want" -gt 0 ]; then
			ok "report --pid 0 keeps the idle task's $want samples, no other"
		else
			ok "report --pid 0 keeps nothing: the idle task had no sample (no CPU was idle)"
		fi
	else
		fail "report --pid 0 kept $(folded_total idle.folded) samples, the idle task has $want: $(head -c 200 idle.err)"
	fi
	# --percent-limit leaves small processes' sections out, counted
	"$SP" report --group-by=process --percent-limit 5 sw.spool >sections.txt 2>/dev/null
	grep -q '^(.* more process.* under 5.0% each' sections.txt &&
		ok "--group-by with --percent-limit leaves small sections out: $(grep 'more process' sections.txt)" ||
		fail "no summary of small sections: $(grep -c '^== ' sections.txt) sections"
	# -C with a command: the summary says the other CPUs were not sampled
	sp_record c1.spool -C 1 -- taskset -c 1 "$W/chain4" -t 1 >/dev/null
	grep -q 'sampled only on CPUs 1 (-C)' record.err && ok "-C with a command: the summary says which CPUs were sampled" ||
		fail "-C with a command: $(cat record.err | tr '\n' '|' | head -c 300)"
else
	skip "-C check: needs taskset and 2 CPUs"
fi

# Processes that come and go: once gone for good their modules are dropped and the files no
# process maps are closed (memory follows the live processes), and their frames stay named.
cat >churn.sh <<EOF2
i=0
while [ \$i -lt 150 ]; do cp "$W/spin_ms" ./churn_\$i; ./churn_\$i 10 >/dev/null; i=\$((i + 1)); done
EOF2
sh churn.sh & churn=$!; track_pid $churn
sp_record churn.spool -a -d 6 || fail "record -a during the churn exited $?: $(head -c 300 record.err)"
wait $churn 2>/dev/null
forgotten=$(sed -n 's/^ *\([0-9][0-9]*\) process.* gone for good .* and \([0-9][0-9]*\) module file.*/\1 \2/p' record.err)
peak=$(record_peak_mib record.err)
with_timeout 60 "$SP" report --format=folded churn.spool >churn.folded 2>/dev/null
set -- $(folded_share churn.folded '(^|;)spin_leaf$')
named=$1
set -- $(folded_share churn.folded '(^|;)churn_[0-9]+\+0x')
unnamed=$1
info "churn: ${forgotten:-no} processes forgotten / files closed; peak ${peak:-?} MiB; $named samples in spin_leaf, $unnamed address-only frames of the copies"
set -- ${forgotten:-0 0}
[ "$1" -gt 0 ] && [ "$2" -gt 0 ] && ok "processes gone were forgotten ($1) and their files closed ($2)" ||
	fail "nothing forgotten or closed during the churn: $(tail -n 4 record.err | tr '\n' ' ')"
[ "$named" -gt 100 ] && [ "$unnamed" -eq 0 ] && ok "the copies' frames stay named ($named samples in spin_leaf)" ||
	fail "the copies' frames: $named samples in spin_leaf, $unnamed address-only"
rm -f churn_*

# Ctrl-C ends a recording without -d cleanly: exit 0, a finished spool.
"$SP" record -a -o int.spool 2>int.err & rec=$!; track_pid $rec
sleep 1.5
kill -INT $rec
wait $rec
rc=$?
"$SP" dump int.spool >int.dump 2>/dev/null
[ "$rc" = 0 ] && grep -q '^summary ' int.dump && ok "SIGINT ends record -a: exit 0, the spool has its summary" ||
	fail "SIGINT to record -a: exit $rc, summary record: $(grep -c '^summary ' int.dump); $(head -c 200 int.err)"

# -e page-faults: the page-touching function is on top.
sp_record pf.spool -e page-faults -- "$W/event_mix" -f -t 1 >/dev/null || fail "record -e page-faults exited $?: $(head -c 300 record.err)"
top=$("$SP" report --format=folded pf.spool 2>/dev/null | sort -t' ' -k2 -n -r | head -n 1)
info "page-faults: heaviest stack $top"
case $top in *";fault_loop;touch_fresh "*) ok "-e page-faults puts touch_fresh on top";;
	*) fail "-e page-faults: heaviest stack is not touch_fresh's: $top";; esac
grep -q 'page-faults' record.err && ok "record's summary names the event" || fail "record's summary does not say page-faults: $(head -n 1 record.err)"

# -e context-switches: the sleeping call path is on top.
sp_record cs.spool -e context-switches -- "$W/event_mix" -n -t 1 >/dev/null || fail "record -e context-switches exited $?: $(head -c 300 record.err)"
top=$("$SP" report --format=folded cs.spool 2>/dev/null | sort -t' ' -k2 -n -r | head -n 1)
info "context-switches: heaviest stack $top"
case $top in *";nap_loop;take_nap;"*) ok "-e context-switches puts the sleeping path (take_nap) on top";;
	*) fail "-e context-switches: heaviest stack is not take_nap's: $top";; esac

# -c PERIOD: cpu-clock every 1 ms for 1 s of CPU is about 1000 samples.
sp_record c.spool -e cpu-clock -c 1000000 -- "$W/chain4" -t 1 >/dev/null || fail "record -c exited $?: $(head -c 300 record.err)"
n=$("$SP" dump c.spool 2>/dev/null | grep -c '^sample ')
info "-e cpu-clock -c 1000000 on 1 s of CPU: $n samples (expected about 1000)"
[ "$n" -ge 850 ] && [ "$n" -le 1150 ] && ok "-c 1000000 gives about the expected count ($n)" ||
	fail "-c 1000000 gave $n samples, not about 1000"
"$SP" dump c.spool 2>/dev/null | grep -q 'period=1000000' && ok "the spool records the period" || fail "dump shows no period=1000000"

# A hardware event the machine lacks: the documented message, exit 1, no spool left.
if perf stat -e cycles -x, true 2>&1 | grep -q 'not supported\|<not counted>'; then
	"$SP" record -e cycles -o hw.spool -- true 2>hw.err
	rc=$?
	[ "$rc" = 1 ] && grep -q "no such hardware event.*use -e cpu-clock" hw.err && [ ! -e hw.spool ] &&
		ok "-e cycles without a PMU: exit 1, '$(head -c 120 hw.err)...'" ||
		fail "-e cycles without a PMU: exit $rc, '$(head -c 300 hw.err)', spool left: $([ -e hw.spool ] && echo yes || echo no)"
else
	skip "this machine has hardware cycles: the missing-event message is not reachable here"
fi
finish
