# SPDX-License-Identifier: MIT
# report --diff as a regression gate: the same program recorded twice passes
# --max-increase 20 (exit 0); a build whose compute_hash does 3x the work fails it (exit 3)
# and names compute_hash first with a ratio near 3; the JSON form parses and agrees.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload three_funcs
need_cmd python3 "reading the JSON diff"
TF=$WL

# Fixed work, so CPU time (what cpu-clock samples) does not depend on the machine's load.
for s in base same slow; do
	x=1
	[ "$s" = slow ] && x=3
	sp_record $s.spool -F 999 -- "$TF" -n 2500 -x $x >/dev/null ||
		{ fail "record of three_funcs -x $x exited $?: $(head -c 300 record.err)"; finish; }
done

"$SP" report --diff base.spool same.spool --max-increase 20 >same.txt 2>same.err
rc=$?
info "same program twice: $(sed -n '/Base.*New/,+3p' same.txt | tr -s ' ' | tr '\n' '|')"
[ "$rc" = 0 ] && ok "the same program recorded twice passes --max-increase 20 (exit 0)" ||
	fail "the same program recorded twice exited $rc: $(cat same.err) $(head -n 12 same.txt)"
grep -q '^Gate: .*: none$' same.txt && ok "the text says the gate found none" ||
	fail "no 'Gate: ... none' line: $(grep Gate same.txt)"

"$SP" report --diff base.spool slow.spool --max-increase 20 >slow.txt 2>slow.err
rc=$?
[ "$rc" = 3 ] && ok "a 3x slower compute_hash fails the gate (exit 3)" ||
	fail "a 3x slower compute_hash exited $rc: $(cat slow.err)"
# the first row of the table: base, new, ratio, points, other ratio, function
first=$(awk '/Base +New +Ratio/ { getline; print; exit }' slow.txt)
name=$(echo "$first" | awk '{ print $6 }')
ratio=$(echo "$first" | awk '{ r = $3; sub(/x\*?$/, "", r); print r }')
info "first row: $first"
[ "$name" = compute_hash ] && ok "compute_hash is listed first" || fail "first row is '$first'"
if [ "$(num_ge "$ratio" 2.4)" = 1 ] && [ "$(num_ge 3.6 "$ratio")" = 1 ]; then
	ok "its self ratio is $ratio (2.4 to 3.6)"
else
	fail "its self ratio is '$ratio', not near 3"
fi
echo "$first" | grep -q 'x\*' && ok "its change is marked beyond noise" || fail "no noise mark: $first"
grep -q "compute_hash" slow.err && ok "stderr names compute_hash" || fail "stderr: $(cat slow.err)"
grep -q '^Gate: .*1 function, compute_hash' slow.txt && ok "the Gate line names it" ||
	fail "Gate line: $(grep Gate slow.txt)"
# the bound is sampling noise only, and both lines say so
grep -q '^Gate: .* beyond sampling noise, ' slow.txt && grep -q 'beyond sampling noise' slow.err &&
	ok "the Gate line and stderr say 'beyond sampling noise'" ||
	fail "Gate line / stderr: $(grep Gate slow.txt) / $(cat slow.err)"
awk 'length > 80 { bad = 1 } END { exit bad }' slow.txt && ok "the text fits 80 columns" ||
	fail "lines over 80 columns: $(awk 'length > 80' slow.txt)"

# JSON: parses, and says the same
"$SP" report --diff base.spool slow.spool --max-increase 20 --format=json >slow.json 2>/dev/null
rc=$?
out=$(python3 - slow.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
f = d["functions"][0]
print(d["gate"]["passed"], d["gate"]["regressed"][0], f["name"], f["regressed"],
      round(f["self"]["ratio"], 2), f["self"]["beyond_noise"], d["unit"], d["base"]["event"])
PY
)
info "json: rc $rc: $out"
set -- $out
if [ "$rc" = 3 ] && [ "${1:-}" = False ] && [ "${2:-}" = compute_hash ] && [ "${3:-}" = compute_hash ] &&
	[ "${4:-}" = True ] && [ "$(num_ge "${5:-0}" 2.4)" = 1 ] && [ "$(num_ge 3.6 "${5:-9}")" = 1 ] &&
	[ "${7:-}" = ns ]; then
	ok "the JSON diff parses with python's json and names compute_hash, ratio $5, exit 3"
else
	fail "JSON diff: rc $rc, '$out'"
fi

# --diff-normalize=total compares shares: compute_hash's share grows less than 3x
"$SP" report --diff base.spool slow.spool --diff-normalize=total >norm.txt 2>&1
grep -q "share of the samples" norm.txt && ok "--diff-normalize=total compares shares" ||
	fail "--diff-normalize=total: $(head -n 3 norm.txt)"

# -n shows sample counts; --focus keeps shares of the whole (no 0.0 everywhere)
"$SP" report --diff base.spool slow.spool -n >n.txt 2>&1
grep -q 'Samples' n.txt && ok "-n adds sample counts to the diff" || fail "-n: $(sed -n 5,8p n.txt)"
"$SP" report --diff base.spool slow.spool --focus compute_hash >focus.txt 2>&1
pts=$(awk '/Base +New +Ratio/ { getline; print $4; exit }' focus.txt)
[ "$(num_ge "$pts" 10)" = 1 ] && ok "with --focus, compute_hash's share still grows ($pts points of the whole)" ||
	fail "with --focus: '$pts' points: $(head -n 12 focus.txt)"

"$SP" report --diff base.spool slow.spool --format=folded >/dev/null 2>bad.err
rc=$?
[ "$rc" = 2 ] && ok "--diff with --format=folded is a usage error" || fail "--format=folded with --diff exited $rc"
"$SP" report slow.spool --max-increase 20 >/dev/null 2>bad.err
[ $? = 2 ] && ok "--max-increase without --diff is a usage error" || fail "--max-increase alone: $(cat bad.err)"
finish
