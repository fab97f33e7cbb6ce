# SPDX-License-Identifier: MIT
# C++ templates and inlined helpers (tests/workloads/cxx_templates.cc, built here with
# g++ -O2 -g): names are demangled, and for every sampled address of the program the
# inline chain and file:line that `stackpulse symbolize` stores agree with
# eu-addr2line -i (elfutils); binutils' addr2line -i is compared too, for the record.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_cmd g++ "building the C++ workload"
need_cmd python3 "reading the dump"
need_cmd eu-addr2line "the reference inline chains (Debian package elfutils)"

SRC=$REPO/tests/workloads/cxx_templates.cc
g++ -O2 -g -o cxx "$SRC" 2>gxx.err || {
	fail "g++ cannot build cxx_templates.cc: $(head -c 300 gxx.err)"
	finish
}
sp_record c.spool -F 999 -- ./cxx 1.5 >/dev/null || {
	fail "record of cxx_templates exited $?: $(head -c 300 record.err)"
	finish
}
with_timeout 60 "$SP" report --format=folded c.spool >c.folded 2>/dev/null
for fn in 'long shapes::crunch<long>(std::vector<long, std::allocator<long> > const&)' \
	'double shapes::crunch<double>(std::vector<double, std::allocator<double> > const&)'; do
	grep -qF ";main;$fn;" c.folded && ok "demangled template instance: $fn" ||
		fail "no frame '$fn' under main: $(folded_top c.folded 1)"
done
grep -q 'shapes::reduce<[a-z]*, 8>(.*)_\[i\]' c.folded &&
	ok "the inlined function template reduce<T, 8> is an inline frame of its own" ||
	fail "no inline frame shapes::reduce<T, 8>: $(folded_top c.folded 1)"

with_timeout 120 "$SP" symbolize -o s.spool c.spool >sym.out 2>&1 || {
	fail "symbolize exited $?: $(head -c 300 sym.out)"
	finish
}
"$SP" dump s.spool >s.dump 2>dump.err || fail "dump of the symbolized spool failed: $(head -c 200 dump.err)"

set -- $(python3 "$E2E_DIR/addr2line-compare.py" s.dump ./cxx cxx eu-addr2line 2>eu.diff)
share=$(pct "${1:-0}" "${2:-0}")
info "eu-addr2line -i: $1 of $2 frame samples agree ($share%) over ${3:-0} distinct addresses"
sed 's/^/# /' eu.diff
[ "${3:-0}" -ge 3 ] && [ "$(num_ge "$share" 99)" = 1 ] &&
	ok "inline chains and file:line agree with eu-addr2line -i for $share% of the program's frame samples" ||
	fail "only $share% of the frame samples agree with eu-addr2line -i ($1 of $2, ${3:-0} addresses)"

if command -v addr2line >/dev/null 2>&1; then
	set -- $(python3 "$E2E_DIR/addr2line-compare.py" s.dump ./cxx cxx addr2line 2>bu.diff)
	info "binutils addr2line -i: $1 of $2 frame samples agree ($(pct "${1:-0}" "${2:-0}")%)"
	sed 's/^/# /' bu.diff
else
	skip "binutils addr2line not found: not compared"
fi
finish
