# SPDX-License-Identifier: MIT
# Stripped Go is named: a Go binary built with -ldflags='-s -w' has no
# ELF symbols and no DWARF, but keeps Go's function table (.gopclntab), which names its
# functions and gives their source lines.  main.fib's samples carry main.fib and its
# callers by name (>= 99%), with go_fib.go lines under --lines.
# Beside: perf report on the same binary, which shows addresses.
# And a frame named by its address alone is one function per module ("[unknown] in
# MODULE"), not one per address: a stripped C binary's hot loop is one row (--lines keeps
# the addresses).
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload hot_line

# --- a stripped C binary: its unnamed code is one row -------------------------------
strip -s -o hot_strip "$WL" || fail "strip failed"
sp_record hs.spool -F 999 -- ./hot_strip >/dev/null 2>&1 || fail "record of hot_strip exited $?"
with_timeout 60 "$SP" report --rows=1000 hs.spool >hs.txt 2>/dev/null
rows=$(awk '/Self%/ && /Total%/ { t = 1; next } t && NF == 0 { exit } t && $NF == "hot_strip"' hs.txt)
if [ "$(printf '%s\n' "$rows" | grep -c .)" -eq 1 ] && printf '%s\n' "$rows" | grep -q '\[unknown\] in hot_strip'; then
	ok "the stripped binary's unnamed code is one row: $(printf '%s' "$rows" | tr -s ' ')"
else
	fail "the stripped binary's rows: $(printf '%s' "$rows" | head -n 3 | tr -s ' ' | tr '\n' '|')"
fi
with_timeout 60 "$SP" report --lines --rows=1000 hs.spool >hs-lines.txt 2>/dev/null
n=$(grep -c 'hot_strip+0x' hs-lines.txt)
[ "$n" -gt 1 ] && ok "--lines keeps the addresses ($n rows)" || fail "--lines shows $n address rows"

if ! command -v go >/dev/null 2>&1; then
	skip "go not found in PATH (Debian package golang-go): stripped Go is not checked"
	finish
fi

info "$(go version)"
if ! (cp "$WORKLOADS/go_fib.go" main.go && GOCACHE=$PWD/gocache GOPATH=$PWD/gopath GO111MODULE=off \
	with_timeout 300 go build -ldflags='-s -w' -o gofib main.go) 2>go.err; then
	fail "cannot build go_fib.go: $(head -c 300 go.err)"
	finish
fi
if readelf -SW gofib | grep -Eq '\.symtab|\.debug_info'; then
	fail "the stripped Go binary still has symbols or DWARF"
fi
readelf -SW gofib | grep -q '\.gopclntab' || fail "the Go binary has no .gopclntab"

sp_record go.spool -F 999 -- ./gofib 1.5 >/dev/null 2>&1 ||
	{ fail "record exited $?: $(head -c 300 record.err)"; finish; }
with_timeout 60 "$SP" report --format=folded go.spool >go.folded 2>/dev/null ||
	fail "report --format=folded exited $?"
set -- $(leaf_share go.folded ';main\.fib$' \
	'^runtime\.goexit;runtime\.main;main\.main;main\.work;main\.twice_\[i\];main\.fib(;main\.fib)*$')
share_at_least "names:" 99 "$1" "$2" "main.fib's samples named main.fib < main.twice [inlined] < main.work < main.main < runtime.main < runtime.goexit" ||
	info "top stacks: $(folded_top go.folded 3 | tr '\n' ' ')"
set -- $(folded_share go.folded '^main\.fib$|;main\.fib$')
share_at_least "leaf:" 95 "$1" "$2" "samples in main.fib"
# No frame of the binary is left as an address.
set -- $(folded_share go.folded 'gofib\+0x|\[unknown\]')
[ "$1" -eq 0 ] && ok "no frame of the stripped binary is an address" ||
	fail "$1 of $2 samples hold an address of the binary: $(folded_top go.folded 2 | tr '\n' ' ')"

# --lines: main.fib's lines are go_fib.go's own (the function spans lines 16-20).
with_timeout 60 "$SP" report --lines --format=folded go.spool >lines.folded 2>/dev/null ||
	fail "report --lines exited $?"
set -- $(leaf_share lines.folded ';main\.fib:[0-9]+$' \
	';main\.work:2[0-9];main\.twice:2[0-9]_\[i\];main\.fib:(1[6-9]|20)(;main\.fib:(1[6-9]|20))*$')
share_at_least "lines:" 99 "$1" "$2" "main.fib's samples with its callers' lines (main.work and the inlined main.twice at go_fib.go:2x, main.fib at 16-20)"
with_timeout 60 "$SP" report --lines go.spool >lines.txt 2>/dev/null
grep -Eq 'main\.fib \((.*/)?main\.go:(1[6-9]|20)\)' lines.txt && ok "the flat report names main.fib's file and line" ||
	fail "no 'main.fib (main.go:LINE)' row: $(grep -m 3 'main\.fib' lines.txt | tr '\n' ' ')"

# Beside: perf on the same binary (it reads no .gopclntab: its top entry is an address).
if with_timeout 120 perf record -q -g -F 999 -o go.data -- ./gofib 1.5 >/dev/null 2>&1; then
	ref=$(perf report -i go.data --stdio --no-children --sort sym -g none 2>/dev/null |
		awk '$1 ~ /%$/ { print; exit }')
	info "perf report's top entry on the same binary: $ref"
	info "stackpulse's top entry: $(folded_self go.folded | head -n 1)"
fi
finish
