# SPDX-License-Identifier: MIT
# report --group-by=process|thread beyond the text view: folded stacks and the flame
# graph root every stack at a frame naming its process ("NAME (pid P)") or thread
# ("NAME (pid P, tid T)"), on a recording of two programs run side by side by a shell
# (chain4: main -> level1..level4; spin_ms: main -> spin_outer -> spin_leaf); the text
# header lists the busiest processes; formats that cannot group refuse it.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload chain4
CHAIN4=$WL
need_workload spin_ms
SPIN=$WL
need_cmd sh "a shell that runs both programs"

sp_record two.spool -F 999 -- sh -c "'$CHAIN4' -t 1 >/dev/null & '$SPIN' 800; wait" >/dev/null ||
	{ fail "record failed: $(head -c 300 record.err)"; finish; }
info "$(grep -m1 'samples written' record.err)"

# --- folded ----------------------------------------------------------------------------
with_timeout 60 "$SP" report --format=folded two.spool >plain.folded 2>plain.err ||
	{ fail "report --format=folded failed: $(head -c 300 plain.err)"; finish; }
with_timeout 60 "$SP" report --format=folded --group-by=process two.spool >proc.folded 2>proc.err
st=$?
[ $st -eq 0 ] && [ -s proc.folded ] && ok "report --format=folded --group-by=process exits 0" ||
	{ fail "--format=folded --group-by=process exited $st: $(head -c 300 proc.err)"; finish; }

# Every line starts at a process frame; its counts are the ungrouped ones, regrouped.
unrooted=$(grep -Evc '^[^;]+ \(pid [0-9]+\);' proc.folded)
[ "$unrooted" -eq 0 ] && ok "every folded stack starts with a 'NAME (pid P)' frame" ||
	fail "$unrooted folded stacks without a process root: $(grep -Ev '^[^;]+ \(pid [0-9]+\);' proc.folded | head -n 3)"
total=$(folded_total plain.folded)
grouped=$(folded_total proc.folded)
[ "$grouped" -eq "$total" ] && ok "grouped folded stacks count the same $total samples" ||
	fail "grouped folded stacks count $grouped samples, ungrouped $total"
sed 's/ [0-9]*$//; s/^[^;]*;//' proc.folded | sort -u >proc.stacks
sed 's/ [0-9]*$//' plain.folded | sort -u >plain.stacks
cmp -s proc.stacks plain.stacks && ok "below their roots, the grouped stacks are the ungrouped ones" ||
	fail "grouped stacks differ below their roots: $(diff plain.stacks proc.stacks | head -n 4)"

# root_holds NAME PID CHAIN-ERE WHAT: at least 90% of the samples under NAME's root
# frame end in CHAIN-ERE.
root_holds() {
	on_chain=$(folded_share proc.folded "^$1 \\(pid $2\\);.*$3\$" | cut -d' ' -f1)
	under=$(folded_share proc.folded "^$1 \\(pid $2\\);" | cut -d' ' -f1)
	info "$1: $on_chain of $under samples end in $4 under its root"
	[ "$under" -gt 0 ] && [ $((on_chain * 100)) -ge $((under * 90)) ] &&
		ok "$1's root holds its $4 chain (at least 90%)" ||
		fail "$1's root: $on_chain of $under samples on $4"
}

# Each program's stacks under its own root, and only there.
chain_pid=$(sed -n 's/^chain4 (pid \([0-9]*\));.*/\1/p' proc.folded | sort -u)
spin_pid=$(sed -n 's/^spin_ms (pid \([0-9]*\));.*/\1/p' proc.folded | sort -u)
info "chain4 is pid ${chain_pid:-?}, spin_ms pid ${spin_pid:-?}"
if [ -n "$chain_pid" ] && [ -n "$spin_pid" ] && [ "$(echo "$chain_pid" | wc -l)" -eq 1 ] &&
	[ "$(echo "$spin_pid" | wc -l)" -eq 1 ]; then
	ok "one root frame for chain4 and one for spin_ms"
	root_holds chain4 "$chain_pid" ';level1;level2;level3;level4' "level1..level4"
	root_holds spin_ms "$spin_pid" ';spin_outer;spin_leaf' "spin_outer -> spin_leaf"
	mixed=$(grep -E '^chain4 .*spin_leaf|^spin_ms .*level4' proc.folded | wc -l)
	[ "$mixed" -eq 0 ] && ok "no stack of one program under the other's root" ||
		fail "$mixed stacks under the wrong process: $(grep -E '^chain4 .*spin_leaf|^spin_ms .*level4' proc.folded | head -n 2)"
	# A root's samples are the ones --pid keeps.
	with_timeout 60 "$SP" report --format=folded --pid "$chain_pid" two.spool >pid.folded 2>/dev/null
	by_pid=$(folded_total pid.folded)
	by_root=$(folded_share proc.folded "^chain4 \\(pid $chain_pid\\);" | cut -d' ' -f1)
	[ "$by_pid" -eq "$by_root" ] && ok "chain4's root counts the $by_pid samples --pid $chain_pid keeps" ||
		fail "chain4's root counts $by_root samples, --pid $chain_pid keeps $by_pid"
else
	fail "roots: chain4 '${chain_pid:-none}', spin_ms '${spin_pid:-none}': $(cut -d';' -f1 proc.folded | sort | uniq -c | head -n 5)"
fi

with_timeout 60 "$SP" report --format=folded --group-by=thread two.spool >thread.folded 2>/dev/null
unrooted=$(grep -Evc '^[^;]+ \(pid [0-9]+, tid [0-9]+\);' thread.folded)
[ -s thread.folded ] && [ "$unrooted" -eq 0 ] &&
	[ "$(folded_total thread.folded)" -eq "$total" ] &&
	ok "--group-by=thread roots every stack at 'NAME (pid P, tid T)', same total" ||
	fail "--group-by=thread: $unrooted stacks without a thread root: $(head -n 2 thread.folded)"

# --- flame graph -----------------------------------------------------------------------
with_timeout 60 "$SP" report --format=flamegraph --group-by=process -o proc.svg two.spool 2>svg.err
st=$?
if [ $st -eq 0 ] && grep -q "class=\"f group\"[^>]*data-n=\"chain4 (pid $chain_pid)\"" proc.svg &&
	grep -q "class=\"f group\"[^>]*data-n=\"spin_ms (pid $spin_pid)\"" proc.svg; then
	ok "the flame graph stands each program on a frame of its own process"
else
	fail "flamegraph --group-by=process (status $st): $(head -c 200 svg.err) $(grep -o 'class="f group"[^>]*' proc.svg | head -n 3)"
fi
if command -v xmllint >/dev/null 2>&1; then
	xmllint --noout proc.svg 2>xml.err && ok "the grouped flame graph is well-formed XML" ||
		fail "xmllint: $(head -c 300 xml.err)"
else
	skip "xmllint not installed: the grouped SVG's XML is not checked"
fi

# --- the text header -------------------------------------------------------------------
with_timeout 60 "$SP" report two.spool >text.txt 2>/dev/null
line=$(grep '^Processes:' text.txt)
info "$line"
case $line in
*"chain4[$chain_pid] "*"spin_ms[$spin_pid] "* | *"spin_ms[$spin_pid] "*"chain4[$chain_pid] "*)
	ok "the text header lists both programs among the busiest processes" ;;
*) fail "the header's process line is '$line'" ;;
esac

# --- formats that keep pid and tid per sample refuse to group ---------------------------
for f in pprof speedscope perf-script json; do
	with_timeout 30 "$SP" report --format=$f --group-by=process -o out.$f two.spool 2>refuse.err
	st=$?
	[ $st -eq 2 ] && grep -q 'folded and flamegraph' refuse.err &&
		ok "--format=$f --group-by=process is a usage error naming the formats that group" ||
		fail "--format=$f --group-by=process exited $st: $(head -c 200 refuse.err)"
done
finish
