# SPDX-License-Identifier: MIT
# record -p never signals its target (docs/DESIGN.md, decision 11): a program that treats
# EINTR from epoll_wait as fatal (blocked_wait) survives the attach and its stacks
# are recorded; --stop-attach still does it the old way (SIGSTOP, SIGCONT), which
# that program does not survive.  A target that starts threads all the while
# (thread_churn) is sampled once per thread, not twice: its samples stay near its
# CPU time x the rate.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload blocked_wait
WAIT=$WL
need_workload thread_churn
CHURN=$WL

# attach_run NAME [RECORD OPTIONS...]: blocked_wait -t 4, attached for 1 s; sets st
# (its exit status) and leaves NAME.out, NAME.err, NAME.spool.
attach_run() {
	name=$1
	shift
	"$WAIT" -t 4 >"$name.out" &
	wpid=$!
	track_pid $wpid
	sleep 1
	with_timeout 30 "$SP" record "$@" -p $wpid -d 1 -o "$name.spool" >/dev/null 2>"$name.err"
	rc=$?
	wait $wpid
	st=$?
}

attach_run plain
[ $rc = 0 ] && ok "record -p exits 0" || fail "record -p exited $rc: $(head -c 300 plain.err)"
[ $st = 0 ] && grep -q undisturbed plain.out &&
	ok "the target's epoll_wait was not interrupted (exit 0: $(tail -n 1 plain.out))" ||
	fail "the target was disturbed: exit $st, $(tail -n 1 plain.out)"
"$SP" report --format=folded plain.spool >plain.folded 2>/dev/null
set -- $(folded_share plain.folded 'start_thread;spin;busy_leaf$')
share_at_least 90 "$1" "$2" "the samples are the spinning thread's, in busy_leaf, recorded while attached"

attach_run stopped --stop-attach
info "--stop-attach: target exit $st, $(tail -n 1 stopped.out)"
[ $rc = 0 ] && [ $st = 3 ] && ok "--stop-attach still stops the target (its epoll_wait failed with EINTR)" ||
	fail "--stop-attach: record exit $rc, target exit $st"

# A target starting threads all the while: no thread counted twice.
"$CHURN" -n 100000 -j 4 -m 5 >/dev/null &
cpid=$!
track_pid $cpid
sleep 0.5
ticks() { awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$cpid/stat"; }
t0=$(ticks)
with_timeout 30 "$SP" record -p $cpid -d 2 -o churn.spool >/dev/null 2>churn.err
rc=$?
t1=$(ticks)
kill $cpid 2>/dev/null
hz=$(getconf CLK_TCK)
written=$(summary_number churn.err written)
expect=$(awk -v t=$((t1 - t0)) -v hz="$hz" 'BEGIN { printf "%d", t / hz * 999 }')
info "thread_churn for 2 s: ${written:-?} samples written, its CPU time ($((t1 - t0)) ticks) gives about $expect at 999 Hz"
[ $rc = 0 ] && [ "${written:-0}" -gt 0 ] && [ "$(num_ge $((expect * 13 / 10)) "$written")" = 1 ] &&
	[ "$(num_ge "$written" $((expect / 2)))" = 1 ] &&
	ok "a thread-starting target's samples match its CPU time (no thread sampled twice)" ||
	fail "thread_churn: exit $rc, ${written:-?} samples for about $expect"
finish
