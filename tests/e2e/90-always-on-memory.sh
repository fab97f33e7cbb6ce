# SPDX-License-Identifier: MIT
# Always-on recording stays bounded (docs/DESIGN.md, decision 14): record -a --rolling 5
# runs 60 s while processes of fresh binaries come and go (a small program copied to a new
# name about five times a second, run for a moment, deleted).  The recorder forgets what
# only gone processes needed, so its resident memory at 60 s is within 12 MiB of what it
# was at 15 s; a SIGUSR2 snapshot at the end still names the program running then.
# e2e: alone (records the whole machine for a minute)
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
[ "$(id -u)" = 0 ] || skip_all "system-wide recording needs root or CAP_PERFMON"
need_workload spin_ms
SPIN=$WL
need_workload chain4
DURATION=${E2E_ALWAYS_ON_SECONDS:-60}

rss_kib() { sed -n 's/^VmRSS:[^0-9]*\([0-9]*\).*/\1/p' "/proc/$1/status" 2>/dev/null; }

mkdir churn
# churn: a new binary name each time, run briefly, deleted after; stops when stop exists
(
	i=0
	while [ ! -e stop ]; do
		i=$((i + 1))
		cp "$SPIN" "churn/fresh$i"
		"churn/fresh$i" 15 >/dev/null 2>&1 &
		c=$!
		sleep 0.2
		wait "$c" 2>/dev/null
		rm -f "churn/fresh$i"
	done
	echo "$i" >churned
) &
track_pid $!

"$SP" record -a --rolling 5 -o fr.spool -d $((DURATION + 30)) >/dev/null 2>record.err &
rec=$!
track_pid "$rec"
sleep 15
rss15=$(rss_kib "$rec")
sleep $((DURATION - 15))
rss60=$(rss_kib "$rec")
# the program running now: named in a snapshot taken while it runs
"$WORKLOADS/chain4" -t 30 >/dev/null &
cur=$!
track_pid "$cur"
sleep 2
kill -USR2 "$rec"
wait_grep 'snapshot of the last' record.err
touch stop
kill "$cur" 2>/dev/null
kill -INT "$rec" 2>/dev/null
wait "$rec"
rc=$?
wait_grep . churned
info "churn: $(cat churned 2>/dev/null) fresh binaries run"
[ "$rc" = 0 ] && ok "record -a --rolling exited 0" || fail "record exited $rc: $(tail -3 record.err)"

if ldd "$SP" 2>/dev/null | grep -q 'libasan'; then
	# the recording above still runs every path under the sanitizers
	info "recorder RSS: $((${rss15:-0} / 1024)) MiB at 15 s, $((${rss60:-0} / 1024)) MiB at ${DURATION} s"
	skip "RSS bound not checked under AddressSanitizer: its quarantine keeps freed memory (up to 256 MiB)"
elif [ -n "$rss15" ] && [ -n "$rss60" ]; then
	info "recorder RSS: $((rss15 / 1024)) MiB at 15 s, $((rss60 / 1024)) MiB at ${DURATION} s"
	[ "$rss60" -le $((rss15 + 12 * 1024)) ] &&
		ok "memory bounded: $rss15 KiB at 15 s, $rss60 KiB at ${DURATION} s" ||
		fail "memory grew: $rss15 KiB at 15 s, $rss60 KiB at ${DURATION} s (more than 12 MiB)"
else
	fail "could not read the recorder's RSS ('$rss15', '$rss60')"
fi

snap=$(sed -n "s/.*snapshot of the last 5.0 s: '\([^']*\)'.*/\1/p" record.err | head -1)
if [ -n "$snap" ] && [ -f "$snap" ]; then
	with_timeout 120 "$SP" report --pid="$cur" --format=folded "$snap" >cur.folded 2>/dev/null
	set -- $(folded_share cur.folded ';level1;level2;level3;level4')
	info "the snapshot: $1 of $2 samples of chain4 in main > level1 > ... > level4"
	[ "$2" -gt 0 ] && [ "$1" -ge $(($2 / 2)) ] &&
		ok "the snapshot names the program running now ($1 of $2 samples on its chain)" ||
		fail "the snapshot names chain4 in $1 of $2 samples"
else
	fail "no snapshot after SIGUSR2: $(tail -3 record.err)"
fi
finish
