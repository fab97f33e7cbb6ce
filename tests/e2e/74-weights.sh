# SPDX-License-Identifier: MIT
# Weights of counted events (docs/DESIGN.md, decision 12): every sample carries the period
# the kernel used, and views sum periods.  fault_split faults 3:1 in fault_three and
# fault_one; -e page-faults at the default frequency (periods vary) and with -c 1 (every
# fault) must both give about 75/25.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload fault_split

# three_share FOLDED: fault_three's share of the folded total, in percent (two decimals).
three_share() {
	set -- $(folded_share "$1" ';fault_three(;|$)')
	pct "$1" "$2"
}
# within A B POINTS: "1" when |A - B| <= POINTS.
within() {
	awk -v a="$1" -v b="$2" -v d="$3" 'BEGIN { x = a - b; if (x < 0) x = -x; print (x <= d) ? 1 : 0 }'
}

sp_record freq.spool -e page-faults -- "$WL" -t 2 >/dev/null || fail "record -e page-faults exited $?: $(head -c 300 record.err)"
sp_record every.spool -e page-faults -c 1 -- "$WL" -t 1 >/dev/null || fail "record -e page-faults -c 1 exited $?: $(head -c 300 record.err)"
"$SP" report --format=folded freq.spool >freq.folded 2>/dev/null
"$SP" report --format=folded every.spool >every.folded 2>/dev/null
f=$(three_share freq.folded)
e=$(three_share every.folded)
info "fault_three's share: $f% at the default frequency, $e% with -c 1 (expected 75%)"
[ "$(within "$f" 75 5)" = 1 ] && ok "default frequency: fault_three has $f% of the faults (75 +- 5)" ||
	fail "default frequency: fault_three has $f% of the faults, not 75 +- 5"
[ "$(within "$e" 75 5)" = 1 ] && ok "-c 1: fault_three has $e% of the faults (75 +- 5)" ||
	fail "-c 1: fault_three has $e% of the faults, not 75 +- 5"
[ "$(within "$f" "$e" 5)" = 1 ] && ok "the two agree within 5 points ($f% vs $e%)" ||
	fail "the two differ by more than 5 points ($f% vs $e%)"

# The folded values are faults, not samples: far more than the samples taken.
set -- $(folded_share freq.folded 'fault_')
samples=$("$SP" dump freq.spool 2>/dev/null | grep -c '^sample ')
info "default frequency: $samples samples standing for $2 faults"
[ "${2:-0}" -gt "$samples" ] && ok "folded values sum periods ($2 faults > $samples samples)" ||
	fail "folded values ($2) are not more than the samples ($samples): periods not summed?"
"$SP" dump freq.spool 2>/dev/null | grep '^sample ' | grep -q ' period=[0-9]' &&
	ok "dump shows each sample's period" || fail "dump shows no period on samples"
"$SP" report freq.spool >freq.txt 2>/dev/null
grep -q '^Events: .* page-faults' freq.txt && grep -q 'Self%  Total%    Events' freq.txt &&
	ok "the text report says its counts are page-fault events" ||
	fail "the text report does not name events as its unit: $(sed -n 1,12p freq.txt)"
finish
