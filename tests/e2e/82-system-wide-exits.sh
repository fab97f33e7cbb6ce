# SPDX-License-Identifier: MIT
# record -a and processes that exit just after it starts: programs already running when
# the recording starts spin for 20 ms of CPU once it runs and exit, before the recorder
# drains their first sample (their /proc is gone by then).  Each is named, its stack
# whole, or counted in the summary as a process that exited before its maps could be read.
# e2e: alone (records the whole machine)
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
[ "$(id -u)" = 0 ] || skip_all "system-wide recording needs root or CAP_PERFMON"
need_workload spin_ms
N=6
CHAIN='^_start;__libc_start_main;__libc_start_call_main;main;spin_outer;(spin_leaf$|cpu_ms)'

named=0 counted=0 unnamed=0 total=0
for round in 1 2; do
	pids=
	for i in $(seq 1 $N); do
		"$WL" -w 20 >/dev/null &
		pids="$pids $!"
		track_pid $!
	done
	# they wait for SIGUSR1 (blocked before it can come: a moment to start)
	sleep 0.3
	"$SP" record -a -d 2 -o ex$round.spool 2>ex$round.err & rec=$!
	track_pid $rec
	# once the spool exists the events are on (the list of /proc is taken before)
	i=0
	while [ ! -s ex$round.spool ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
	sleep 0.1
	# Round 1 makes the late drain certain: the recorder is stopped while they run and
	# exit (their samples wait in the rings); round 2 leaves it to the timing.
	[ $round = 1 ] && kill -STOP $rec
	kill -USR1 $pids
	wait $pids
	[ $round = 1 ] && kill -CONT $rec
	wait $rec
	rc=$?
	[ "$rc" = 0 ] || { fail "record -a exited $rc: $(head -c 300 ex$round.err)"; continue; }
	info "round $round: $(grep -E 'had exited|exited before' ex$round.err | tr -s ' ' | tr '\n' ' ')"
	# processes counted as unreadable, their samples
	round_counted=0
	lost_procs=$(sed -n 's/.* samples* of \([0-9][0-9]*\) process.* that exited before .* maps could be read.*/\1/p' ex$round.err)
	for p in $pids; do
		with_timeout 60 "$SP" report --pid="$p" --format=folded ex$round.spool >p$p.folded 2>/dev/null
		set -- $(folded_share p$p.folded "$CHAIN")
		whole=$1 n=$2
		[ "$n" -gt 0 ] || continue
		total=$((total + 1))
		name=$("$SP" report --pid="$p" --group-by=process --format=folded ex$round.spool 2>/dev/null |
			head -n 1 | cut -d';' -f1)
		# the last sample or two may be taken in the kernel as it exits: no user frames
		set -- $(folded_share p$p.folded '\[unknown\]')
		if [ "$whole" -gt 0 ] && [ "$1" = 0 ] && echo "$name" | grep -q '^spin_ms'; then
			named=$((named + 1))
		elif [ "$round_counted" -lt "${lost_procs:-0}" ]; then
			round_counted=$((round_counted + 1))
			counted=$((counted + 1))
			info "pid $p: $whole of $n samples whole, thread '$name'; the summary counts unreadable processes"
		else
			unnamed=$((unnamed + 1))
			info "pid $p: $whole of $n samples whole, thread '$name': $(folded_top p$p.folded 2 | tr '\n' ' ')"
		fi
	done
done
info "$total processes sampled: $named named (whole chains, no unknown frame), $counted counted, $unnamed neither"
[ "$total" -ge $N ] && ok "the short-lived programs were sampled ($total of $((2 * N)))" ||
	fail "only $total of $((2 * N)) short-lived programs have samples"
[ "$unnamed" = 0 ] && [ "$total" -gt 0 ] &&
	ok "each is named with its whole chain or counted in the summary ($named named, $counted counted)" ||
	fail "$unnamed of $total short-lived programs neither named nor counted"
finish
