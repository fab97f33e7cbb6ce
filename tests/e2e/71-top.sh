# SPDX-License-Identifier: MIT
# Watching a recording live: stackpulse top driven in tmux (keys, screen),
# top --batch on a program whose hot function moves half way, report on a spool still
# being written and report --follow, and the Tail example program (examples/tail.c).
# e2e: alone (reads top's screen after fixed delays)
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload chain4
need_workload two_phases
C4=$WORKLOADS/chain4
TP=$WORKLOADS/two_phases

# --- top --batch: a table per interval; the hot spot's move shows within 2 intervals ----
with_timeout 60 "$SP" top --batch -d 1 --window 2 --rows 5 -o tp.spool -- "$TP" -t 8 >batch.out 2>batch.err
rc=$?
[ "$rc" = 0 ] && ok "top --batch exits 0 when the command does" || fail "top --batch exited $rc: $(head -c 300 batch.err)"
# per table: its index and the first row's function (the table is sorted by the window's self%)
awk '/^--- stackpulse top/ { t++; row = 0; next } /Self%/ { row = 1; next } row == 1 { print t, $5; row = 2 }' batch.out >tops.txt
tables=$(grep -c '^--- stackpulse top' batch.out)
first_two=$(awk '$2 == "phase_two" { print $1; exit }' tops.txt)
appears=$(awk '/^--- stackpulse top/ { t++ } / phase_two / { print t; exit }' batch.out)
info "top --batch: $tables tables; phase_two first in table ${appears:-never}, on top from table ${first_two:-never}; tops: $(awk '{ printf "%s ", $2 }' tops.txt)"
if [ -n "$appears" ] && [ -n "$first_two" ] && [ $((first_two - appears)) -le 2 ]; then
	ok "the move from phase_one to phase_two shows on top within 2 intervals"
else
	fail "phase_two did not come on top within 2 intervals of appearing"
fi
awk '$2 == "phase_one"' tops.txt | grep -q . && ok "phase_one was on top before" || fail "phase_one never on top: $(cat tops.txt | tr '\n' ' ')"
tail -n 8 batch.out | grep -q 'recording over' && ok "the last table is the finished recording's" ||
	fail "no final table: $(tail -n 3 batch.out | tr '\n' ' ')"
"$SP" report tp.spool >tp.report 2>&1 && grep -q 'phase_two' tp.report &&
	ok "the spool top wrote is complete: report reads it" || fail "report of top's spool: $(head -c 300 tp.report)"

# --- top in a terminal (tmux): the screen, the keys, q ---------------------------------
if command -v tmux >/dev/null 2>&1; then
	S=sptop$$
	cat >run-top.sh <<EOF2
"$SP" top -o t.spool -- "$C4" -t 60 2>top.err
echo \$? >top.rc
EOF2
	tmux -L "$S" new-session -d -s "$S" -x 140 -y 40 "sh run-top.sh"
	pane() { tmux -L "$S" capture-pane -p -t "$S" >"$1"; }
	sleep 3
	pane screen1.txt
	# the first row: Self% of the window, then the function
	row=$(awk '/Self%/ { getline; print; exit }' screen1.txt)
	share=$(echo "$row" | awk '{ sub(/%/, "", $1); print $1 }')
	fn=$(echo "$row" | awk '{ print $5 }')
	info "top in tmux after 3 s: first row '$row'"
	[ "$fn" = level4 ] && [ "$(num_ge "${share:-0}" 90)" = 1 ] &&
		ok "within 3 s the screen shows level4 on top with ${share}% (> 90%)" ||
		fail "after 3 s the screen's first row is not level4 above 90%: $(head -n 8 screen1.txt | tr '\n' '|')"
	tmux -L "$S" send-keys -t "$S" t
	sleep 1.5
	pane screen2.txt
	row2=$(awk '/Self%/ { getline; print; exit }' screen2.txt)
	grep -q 'sort (total)' screen2.txt && [ "$row2" != "$row" ] &&
		ok "t sorts by total: the screen says so and its first row changed ($row2)" ||
		fail "t: $(head -n 4 screen2.txt | tr '\n' '|')"
	sed -n 2p screen2.txt | grep -q '^q quit' && ok "the key legend starts with 'q quit' (never cut off)" ||
		fail "legend: $(sed -n 2p screen2.txt)"
	tmux -L "$S" send-keys -t "$S" p
	sleep 1.5
	pane screen3.txt
	grep -q 'per process (on)' screen3.txt && grep -q 'chain4\[' screen3.txt &&
		ok "p groups by process: a Process column naming chain4[PID]" ||
		fail "p: $(head -n 5 screen3.txt | tr '\n' '|')"
	tmux -L "$S" send-keys -t "$S" Enter
	sleep 1.5
	pane screen4.txt
	grep -q 'called from' screen4.txt && ok "Enter shows the selected function's callers and callees" ||
		fail "Enter: no callers section: $(tail -n 8 screen4.txt | tr '\n' '|')"
	tmux -L "$S" send-keys -t "$S" a
	sleep 1.5
	pane screen5.txt
	# the selected row (the first by total) may have no self samples: the annotation says so
	grep -q 'Annotation of' screen5.txt && grep -q -e 'Source lines with samples' -e 'No function matched' screen5.txt &&
		ok "a shows the selected function's annotation" ||
		fail "a: no annotation: $(grep -v '^ *$' screen5.txt | tail -n 8 | tr '\n' '|')"
	# A pause freezes the display only: the rings are read all along, no sample is lost.
	tmux -L "$S" send-keys -t "$S" Space
	sleep 2
	pane screen6.txt
	tmux -L "$S" send-keys -t "$S" Space
	sleep 1
	grep -q '\[paused\]' screen6.txt && ok "space pauses the display ([paused] in the header)" ||
		fail "space: $(head -n 1 screen6.txt)"
	tmux -L "$S" send-keys -t "$S" q
	for _ in 1 2 3 4 5 6 7 8 9 10; do [ -s top.rc ] && break; sleep 0.5; done
	tmux -L "$S" kill-server 2>/dev/null
	[ "$(cat top.rc 2>/dev/null)" = 0 ] && ok "q exits 0" || fail "top exited '$(cat top.rc 2>/dev/null)': $(head -c 300 top.err)"
	lost=$(sed -n 's/.* \([0-9][0-9]*\) lost,.*/\1/p' top.err | head -n 1)
	[ "$lost" = 0 ] && ok "no sample lost across a 2 s pause (record's summary: 0 lost)" ||
		fail "lost '${lost:-no summary}' across a pause: $(grep -m1 lost top.err)"
	# The spool is whole, and reports like one record wrote.
	sp_record r.spool -- "$C4" -t 1 >/dev/null
	"$SP" report t.spool >t.report 2>t.rerr && "$SP" report r.spool >r.report 2>/dev/null
	labels() { awk -F: '/^[A-Z][A-Za-z ]*:/ { print $1 } /Self%/ { print "table"; exit }' "$1" | tr '\n' ' '; }
	[ -s t.report ] && [ "$(labels t.report)" = "$(labels r.report)" ] && grep -q level4 t.report &&
		ok "top's spool reports like record's, in form ($(labels t.report))" ||
		fail "top's report: '$(labels t.report)' vs record's '$(labels r.report)': $(head -c 200 t.rerr)"
else
	skip "top in a terminal: tmux not found (apt-get install tmux)"
fi

# --- report on a spool still being written; report --follow ----------------------------
"$SP" record -q -o f.spool -- "$C4" -t 4 >/dev/null 2>&1 & rec=$!; track_pid $rec
sleep 1.5
"$SP" report f.spool >growing.out 2>growing.err
grep -q 'still being written' growing.err && ok "report on a spool being written says so ($(head -n 1 growing.err | cut -c1-100)...)" ||
	fail "report during recording: $(head -c 300 growing.err)"
with_timeout 60 "$SP" report --follow=0.5 --rows 5 f.spool >follow.out 2>follow.err
rc=$?
wait $rec
n=$(grep -c '^--- f.spool' follow.out)
last_top=$(awk '/^--- f.spool/ { row = 0 } /Self%/ { row = 1; next } row == 1 { top = $5; row = 2 } END { print top }' follow.out)
info "report --follow: exit $rc, $n tables, last top $last_top, last header: $(grep '^--- f.spool' follow.out | tail -n 1)"
[ "$rc" = 0 ] && [ "$n" -ge 3 ] && grep '^--- f.spool' follow.out | tail -n 1 | grep -q 'recording over' && [ "$last_top" = level4 ] &&
	ok "report --follow prints a fresh table every interval until the recording is over ($n tables)" ||
	fail "report --follow: exit $rc, $n tables: $(head -c 300 follow.err)"

# --- a spool being written is nobody else's to write ---------------------------------------
"$SP" record -q -o busy.spool -- "$C4" -t 3 >/dev/null 2>&1 & r1=$!; track_pid $r1
sleep 0.8
"$SP" record -q -o busy.spool -- "$C4" -t 1 >/dev/null 2>busy.err
rc2=$?
"$SP" symbolize busy.spool >/dev/null 2>sym.err
rcs=$?
"$SP" report busy.spool >busy.rep 2>/dev/null
"$SP" report --format=json busy.spool >busy.json 2>/dev/null
wait $r1
"$SP" report busy.spool >busy.final 2>/dev/null
[ "$rc2" = 1 ] && grep -q 'another recording is writing it' busy.err &&
	ok "a second recording into a spool being written is refused ($(head -c 90 busy.err)...)" ||
	fail "a second recording into busy.spool: exit $rc2: $(head -c 300 busy.err)"
[ "$rcs" = 1 ] && grep -q 'a recording still writes it' sym.err &&
	ok "symbolize refuses to rewrite a spool being written in place" ||
	fail "symbolize on a live spool: exit $rcs: $(head -c 300 sym.err)"
grep -q 'still going on' busy.rep && ! grep -q 'cut short' busy.rep && grep -q '"growing":true' busy.json &&
	grep -q '"truncated":false' busy.json &&
	ok "report's header and json say the recording goes on, not that it was cut short" ||
	fail "report of a live spool: $(grep -E 'Note|cut short' busy.rep) $(grep -o '"growing":[a-z]*,"truncated":[a-z]*' busy.json)"
grep -q 'Samples:    [0-9]' busy.final && ! grep -q 'Note:' busy.final &&
	ok "the first recording's spool is whole once it ends" || fail "busy.spool after the first recording: $(head -n 8 busy.final | tr '\n' '|')"

# --- the Tail example --------------------------------------------------------------------
# a library built with sanitizers (make check-sanitize's copy) links the example with them
san=
nm "$REPO/libstackpulse.a" 2>/dev/null | grep -q '__asan_' && san=SANITIZE=1
if with_timeout 300 make -s -C "$REPO" $san examples/tail >make.out 2>&1; then
	with_timeout 60 "$REPO/examples/tail" "$C4" -t 2 >tail.out 2>tail.err
	rc=$?
	so_far=$(grep -c '^so far: .* top leaf level4' tail.out)
	info "examples/tail: exit $rc, $so_far progress lines naming level4; $(tail -n 1 tail.out)"
	[ "$rc" = 0 ] && [ "$so_far" -ge 2 ] && grep -q '^at the end: .* top leaf level4' tail.out &&
		ok "examples/tail follows the recording batch by batch and names level4" ||
		fail "examples/tail: exit $rc: $(head -c 300 tail.out) $(head -c 300 tail.err)"
else
	fail "make examples/tail failed: $(tail -n 5 make.out)"
fi
finish
