# SPDX-License-Identifier: MIT
# Quick start: record chain4 at 999 Hz for ~2 s into the default spool, then report
# (level4 heads the flat table) and report --format=folded (the whole chain).
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload chain4

with_timeout 60 "$SP" record -F 999 -- "$WL" -t 2 >record.out 2>record.err
st=$?
if [ $st -ne 0 ]; then
	fail "record exited $st: $(head -c 400 record.err)"
	finish
fi
ok "record -F 999 -- chain4 -t 2 exits 0"
[ -s profile.spool ] && ok "record writes the default spool profile.spool" ||
	{ fail "no profile.spool written in the working directory"; finish; }
grep -q 'chain4: done' record.out && ok "the command's stdout passes through" ||
	fail "chain4's output did not reach stdout"

with_timeout 60 "$SP" report >report.txt 2>report.err
st=$?
[ $st -eq 0 ] && ok "report (default spool) exits 0" || fail "report exited $st: $(head -c 400 report.err)"
grep -q 'Self%' report.txt && grep -q 'Total%' report.txt && grep -q 'Samples' report.txt &&
	grep -q 'Function' report.txt && grep -q 'Module' report.txt &&
	ok "report has the flat table header Self% Total% Samples Function Module" ||
	fail "report has no 'Self% Total% Samples Function Module' header"
top=$(report_top_function report.txt)
[ "$top" = level4 ] && ok "level4 tops the flat table" || fail "flat table top is '$top', expected level4"
grep -qi 'heaviest' report.txt && ok "report lists the heaviest stacks" || fail "report has no heaviest stacks section"
sed -n '1,12p' report.txt | sed 's/^/# report: /'

with_timeout 60 "$SP" report --format=folded profile.spool >folded.txt 2>folded.err
st=$?
[ $st -eq 0 ] && ok "report --format=folded exits 0" || fail "report --format=folded exited $st: $(head -c 400 folded.err)"
line=$(grep -E '(^|;)main;level1;level2;level3;level4 [0-9]+$' folded.txt | head -n 1)
if [ -n "$line" ]; then
	ok "folded has '...;main;level1;level2;level3;level4 N' ($line)"
else
	fail "folded has no '...;main;level1;level2;level3;level4 N' line; heaviest: $(folded_top folded.txt 1)"
fi
n=$(folded_total folded.txt)
# chain4 -t 2 runs for 2 s of CPU time: about 2000 samples at 999 Hz.
[ "$n" -ge 1500 ] && [ "$n" -le 2500 ] && ok "2 s of CPU at 999 Hz gives $n samples (1500..2500)" ||
	fail "$n samples for 2 s of CPU at 999 Hz (expected 1500..2500)"
finish
