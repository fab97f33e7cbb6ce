# SPDX-License-Identifier: MIT
# Several processes in one recording: -p PID,PID records two unrelated processes;
# --descendants also attaches the children and grandchildren already running under
# the given pid (without it, they are not recorded).
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload threads
THREADS=$WL
need_workload forker
FORKER=$WL
need_cmd sh "a parent process whose descendants run"

THREAD_ROOT='^(__GI_)?_*clone3?;start_thread'
ROOT='^_start;__libc_start_main[^;]*;__libc_start_call_main;main'
# forker's static spawn() is inlined into main: its inline frame may sit between.
SPAWN='(;spawn_\[i\])?'
MIN=99

# samples_of PID FILE: the samples of PID in a pid_samples listing (0 when none).
samples_of() {
	awk -v p="$1" '$1 == p { n = $2 } END { print n + 0 }' "$2"
}

# wait_for FILE PATTERN COUNT: wait up to 10 s until COUNT lines of FILE match PATTERN.
wait_for() {
	i=0
	while [ "$(lines_matching "$1" "$2")" -lt "$3" ] && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	[ "$(lines_matching "$1" "$2")" -ge "$3" ]
}

# lines_matching FILE PATTERN: how many lines match (0 while FILE does not exist yet).
lines_matching() {
	n=$(grep -c "$2" "$1" 2>/dev/null)
	echo "${n:-0}"
}

# --- two unrelated processes, one busy worker thread each -----------------------
: >a.out
: >b.out
: >desc.out
"$THREADS" -n 1 -f -P >a.out 2>&1 &
a=$!
track_pid $a
"$THREADS" -n 1 -f -P >b.out 2>&1 &
b=$!
track_pid $b
wait_for a.out '^pid ' 1 && wait_for b.out '^pid ' 1 || { fail "the threads workloads did not start"; finish; }

with_timeout 60 "$SP" record -p "$a,$b" -F 999 -d 2 -o multi.spool >/dev/null 2>multi.err
rc=$?
sed 's/^/# record -p A,B: /' multi.err
if [ $rc -ne 0 ]; then
	fail "record -p $a,$b exited $rc: $(head -c 300 multi.err)"
else
	ok "record -p $a,$b -d 2 exits 0"
	with_timeout 60 "$SP" dump multi.spool >multi.dump 2>/dev/null
	pid_samples multi.dump >multi.pids
	na=$(samples_of $a multi.pids)
	nb=$(samples_of $b multi.pids)
	total=$(awk '{ n += $2 } END { print n + 0 }' multi.pids)
	info "samples: pid $a $na ($(pct "$na" "$total")%), pid $b $nb ($(pct "$nb" "$total")%), total $total"
	# Two busy threads on two CPUs: about half each; ask for a fifth.
	for p in $a $b; do
		n=$(samples_of $p multi.pids)
		share_at_least "pid $p:" 20 "$n" "$total" "the samples come from this process"
	done
	other=$(awk -v a=$a -v b=$b '$1 != a && $1 != b { n += $2 } END { print n + 0 }' multi.pids)
	[ "$other" -eq 0 ] && ok "no samples from any other pid" || fail "$other samples from pids other than $a and $b"
	with_timeout 60 "$SP" report --format=folded multi.spool >multi.folded 2>/dev/null
	set -- $(folded_share multi.folded "$THREAD_ROOT;worker;worker_step;worker_leaf\$")
	share_at_least $MIN "$1" "$2" "the samples of both processes are complete worker stacks"
fi
kill -0 $a 2>/dev/null && kill -0 $b 2>/dev/null && ok "both processes still run after the recording" ||
	fail "a recorded process died"
kill -KILL $a $b 2>/dev/null

# --- descendants ------------------------------------------------------------------
# sh (the given pid) -> forker (idle in wait) -> 2 children spinning in child_work.
# The trailing 'true' keeps sh from exec'ing forker, so forker's children are sh's
# grandchildren.  forker's children die with it.
sh -c "'$FORKER' -n 2 -f -P >desc.out; true" &
top=$!
track_pid $top
wait_for desc.out '^child ' 2 || { fail "forker did not start its children: $(cat desc.out)"; finish; }
mid=$(awk '$1 == "pid" { print $2 }' desc.out)
track_pid "$mid"
kids=$(awk '$1 == "child" { print $2 }' desc.out)
info "descendants of sh $top: forker $mid, children $(echo $kids)"

# Without --descendants the running children are not part of the recording.
with_timeout 60 "$SP" record -p $top -F 999 -d 1 -o plain.spool >/dev/null 2>plain.err
rc=$?
if [ $rc -eq 0 ]; then
	with_timeout 60 "$SP" dump plain.spool >plain.dump 2>/dev/null
	pid_samples plain.dump >plain.pids
	n=0
	for k in $kids; do n=$((n + $(samples_of $k plain.pids))); done
	info "without --descendants: $n samples from the children"
	[ "$n" -eq 0 ] && ok "without --descendants, the already running children are not recorded" ||
		fail "without --descendants, $n samples came from the children"
else
	fail "record -p $top exited $rc: $(head -c 300 plain.err)"
fi

with_timeout 60 "$SP" record -p $top --descendants -F 999 -d 2 -o desc.spool >/dev/null 2>desc.err
rc=$?
sed 's/^/# record --descendants: /' desc.err
if [ $rc -ne 0 ]; then
	fail "record -p $top --descendants exited $rc: $(head -c 300 desc.err)"
	finish
fi
ok "record -p $top --descendants -d 2 exits 0"
with_timeout 60 "$SP" dump desc.spool >desc.dump 2>/dev/null
pid_samples desc.dump >desc.pids
total=$(awk '{ n += $2 } END { print n + 0 }' desc.pids)
inkids=0
for k in $kids; do
	n=$(samples_of $k desc.pids)
	info "grandchild $k: $n samples"
	[ "$n" -gt 0 ] && ok "grandchild $k has samples ($n)" || fail "grandchild $k has no samples"
	inkids=$((inkids + n))
done
info "samples from the grandchildren: $inkids / $total ($(pct "$inkids" "$total")%)"
with_timeout 60 "$SP" report --format=folded desc.spool >desc.folded 2>/dev/null
set -- $(folded_share desc.folded "$ROOT$SPAWN;child_work(;|\$)")
share_at_least $MIN "$1" "$inkids" "the grandchildren's samples are complete (main;child_work[;...])"
for k in $kids; do
	kill -0 "$k" 2>/dev/null || fail "grandchild $k died during the recording"
done
finish
