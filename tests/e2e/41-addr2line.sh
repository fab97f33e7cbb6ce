# SPDX-License-Identifier: MIT
# C++ templates and inlined helpers (tests/workloads/cxx_templates.cc, built here with
# g++ -O2 -g): names are demangled, and for every sampled address of the program the
# inline chain and file:line that `stackpulse symbolize` stores agree with
# eu-addr2line -i (elfutils); binutils' addr2line -i is compared too, for the record.  The
# same program built by clang++ (no .debug_aranges) agrees with llvm-addr2line -i.
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
sed 's/^/# /' eu.diff
[ "${3:-0}" -ge 3 ] && ok "eu-addr2line -i: ${3:-0} distinct addresses compared (>= 3)" ||
	fail "eu-addr2line -i: only ${3:-0} distinct addresses compared (needs >= 3)"
share_at_least "eu-addr2line -i:" 99 "${1:-0}" "${2:-0}" "the program's frame samples agree on inline chains and file:line"

if command -v addr2line >/dev/null 2>&1; then
	set -- $(python3 "$E2E_DIR/addr2line-compare.py" s.dump ./cxx cxx addr2line 2>bu.diff)
	info "binutils addr2line -i: $1 of $2 frame samples agree ($(pct "${1:-0}" "${2:-0}")%)"
	sed 's/^/# /' bu.diff
else
	skip "binutils addr2line not found: not compared"
fi

# clang writes no .debug_aranges (DWARF 4 and 5): the CU of an address is found by its
# ranges, and the inline chains and lines must agree just the same, with LLVM's own
# llvm-addr2line (eu-addr2line 0.188 finds no CU without aranges, and binutils'
# addr2line drops an inline level of clang's DWARF 5).
if ! command -v llvm-addr2line >/dev/null 2>&1; then
	skip "llvm-addr2line not found (Debian package llvm): the clang++ build is not compared"
elif command -v clang++ >/dev/null 2>&1 && clang++ -O2 -g -o cxx_clang "$SRC" 2>clang.err; then
	if readelf -S cxx_clang 2>/dev/null | grep -q debug_aranges; then
		info "clang++ wrote .debug_aranges here: the lookup without them is not exercised"
	fi
	sp_record cl.spool -F 999 -- ./cxx_clang 1.5 >/dev/null || fail "record of cxx_clang exited $?"
	with_timeout 120 "$SP" symbolize -o cls.spool cl.spool >/dev/null 2>&1 || fail "symbolize of cxx_clang exited $?"
	"$SP" dump cls.spool >cls.dump 2>/dev/null
	set -- $(python3 "$E2E_DIR/addr2line-compare.py" cls.dump ./cxx_clang cxx_clang llvm-addr2line 2>cl.diff)
	sed 's/^/# /' cl.diff
	[ "${3:-0}" -ge 3 ] && ok "clang++ build, llvm-addr2line -i: ${3:-0} distinct addresses compared (>= 3)" ||
		fail "clang++ build, llvm-addr2line -i: only ${3:-0} distinct addresses compared (needs >= 3)"
	share_at_least "clang++ build (no .debug_aranges), llvm-addr2line -i:" 99 "${1:-0}" "${2:-0}" \
		"the frame samples agree on inline chains and lines"
	with_timeout 60 "$SP" report --format=folded --lines cl.spool >cl.folded 2>/dev/null
	grep -q '_\[i\]' cl.folded && ok "clang++ build: inline frames are shown" ||
		fail "clang++ build: no inline frame: $(folded_top cl.folded 2 | tr '\n' ' ')"
else
	skip "clang++ not found (Debian package clang): the build without .debug_aranges is not tested"
fi

# Go writes no .debug_aranges either: its frames get their lines from the CUs' ranges.
if command -v go >/dev/null 2>&1; then
	mkdir -p golines
	cat >golines/main.go <<'EOF'
package main

import "fmt"

//go:noinline
func goLineLeaf(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += i * i
	}
	return s
}

func main() {
	t := 0
	for k := 0; k < 20000; k++ {
		t += goLineLeaf(100000)
	}
	fmt.Println(t)
}
EOF
	printf 'module golines\ngo 1.19\n' >golines/go.mod
	if (cd golines && HOME=$TMP GOCACHE=$TMP/gocache go build -o ../golines.bin .) >go.err 2>&1; then
		sp_record go.spool -F 999 -- ./golines.bin >/dev/null || fail "record of the Go program exited $?"
		with_timeout 60 "$SP" report --format=folded --lines go.spool >go.folded 2>/dev/null
		set -- $(folded_share go.folded ';main\.main:1[78];main\.goLineLeaf:(8|9|10|11|12)$')
		share_at_least Go: 90 "$1" "$2" "the samples carry main.main:LINE;main.goLineLeaf:LINE" ||
			info "Go top stacks: $(folded_top go.folded 2 | tr '\n' ' ')"
	else
		fail "go build failed: $(head -c 300 go.err)"
	fi
else
	skip "go not found (Debian package golang-go): Go's lines are not tested"
fi
finish
