# SPDX-License-Identifier: MIT
# Flight recorder (docs/DESIGN.md, decision 13): record --rolling keeps only the last
# seconds of samples in memory; SIGUSR2 writes them as a complete spool without stopping,
# and the end writes the last one.  phases spins in phase_one ... phase_five, 1.5 s each:
# a snapshot taken in phase 3 with a 1.5 s window holds phase 3 and not phase 1.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload phases

# phase_samples SPOOL NAME: samples of SPOOL in function NAME.
phase_samples() {
	"$SP" report --format=folded "$1" 2>/dev/null >p.folded
	set -- $(folded_share p.folded ";$2(;|\$)")
	echo "${1:-0}"
}

"$SP" record --rolling 1.5 -o fr.spool -- "$WL" -m 1500 >phases.out 2>record.err &
rec=$!
track_pid "$rec"
i=0
while ! grep -q '^phase 3' phases.out 2>/dev/null && [ $i -lt 200 ]; do
	sleep 0.05
	i=$((i + 1))
done
grep -q '^phase 3' phases.out || { fail "phases never reached phase 3: $(cat phases.out record.err)"; finish; }
ls fr-*.spool >/dev/null 2>&1 && fail "a spool was written before it was asked for: $(ls)" ||
	ok "nothing written before SIGUSR2"
# 0.7 s into phase 3: the window then reaches back into phase 2 only
sleep 0.7
pid=$rec
kill -USR2 "$pid"
i=0
while ! grep -q 'snapshot of the last' record.err && [ $i -lt 100 ]; do
	sleep 0.05
	i=$((i + 1))
done
snap=$(sed -n "s/.*snapshot of the last 1.5 s: '\([^']*\)'.*/\1/p" record.err | head -1)
running=no
kill -0 "$pid" 2>/dev/null && running=yes
[ -n "$snap" ] && [ -f "$snap" ] && ok "SIGUSR2 wrote '$snap'" || fail "no snapshot after SIGUSR2: $(cat record.err)"
[ "$running" = yes ] && ok "recording went on after the snapshot" || fail "the recorder stopped at SIGUSR2"
wait "$rec"
rc=$?
[ "$rc" = 0 ] && ok "record --rolling exited 0" || fail "record --rolling exited $rc: $(head -c 300 record.err)"

if [ -n "$snap" ] && [ -f "$snap" ]; then
	one=$(phase_samples "$snap" phase_one)
	two=$(phase_samples "$snap" phase_two)
	three=$(phase_samples "$snap" phase_three)
	info "snapshot in phase 3: phase_one $one, phase_two $two, phase_three $three samples"
	[ "$three" -ge 50 ] && ok "the snapshot holds phase 3 ($three samples)" ||
		fail "the snapshot holds $three samples of phase 3"
	[ "$one" = 0 ] && ok "the snapshot holds nothing of phase 1" ||
		fail "the snapshot holds $one samples of phase 1, outside its 1.5 s window"
	"$SP" dump "$snap" 2>/dev/null | grep -q '^summary ' && ok "the snapshot is a complete spool" ||
		fail "the snapshot has no summary trailer"
fi
last=$(ls fr-*.spool 2>/dev/null | grep -v "^$snap\$" | tail -1)
if [ -n "$last" ]; then
	five=$(phase_samples "$last" phase_five)
	three=$(phase_samples "$last" phase_three)
	info "the last snapshot: phase_five $five, phase_three $three samples"
	[ "$five" -ge 100 ] && [ "$three" = 0 ] &&
		ok "the end wrote the last window: phase 5 ($five samples), nothing of phase 3" ||
		fail "the last snapshot holds phase_five $five, phase_three $three"
else
	fail "no last snapshot at the end: $(ls)"
fi
# memory: the window's samples, not the run's
kept=$(sed -n 's/.*flight recorder: .* in memory, \([0-9]*\) samples.*/\1/p' record.err)
taken=$(sed -n 's/.*(of \([0-9]*\) sample events).*/\1/p' record.err)
info "kept $kept of $taken samples in memory"
[ -n "$kept" ] && [ -n "$taken" ] && [ "$kept" -le 2250 ] && [ "$taken" -gt "$kept" ] &&
	ok "memory held the window: $kept samples of the $taken taken" ||
	fail "the summary's window: kept '$kept' of '$taken': $(tail -3 record.err)"
finish
