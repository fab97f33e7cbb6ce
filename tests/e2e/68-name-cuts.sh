# SPDX-License-Identifier: MIT
# Names that fit: two functions whose long names share their start and
# their end, side by side in 80 columns, must not print alike in any view: the flat
# table, the call tree, the bottom-up tree, the heaviest stacks and a diff keep in view
# the part that tells them apart (a cut in the middle would print both the same); the
# header's long command line is cut to the width too.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
CC=${CC:-cc}
command -v "$CC" >/dev/null 2>&1 || skip_all "no C compiler ($CC) to build the workload"

A=process_request_handler_for_the_incoming_connections_alpha_variant_of_the_main_dispatch_loop_in_server
B=process_request_handler_for_the_incoming_connections_omega_variant_of_the_main_dispatch_loop_in_server
# build NAME ALPHA-WORK: the program, ALPHA-WORK iterations of A per round (B does 2000000).
build() {
	cat >"$1.c" <<EOF2
#include <time.h>
volatile unsigned long sink;
__attribute__((noinline)) void $A(long n) { for (long i = 0; i < n; i++) sink += i * 3; }
__attribute__((noinline)) void $B(long n) { for (long i = 0; i < n; i++) sink += i * 5; }
__attribute__((noinline)) void serve(void) { $A($2); $B(2000000); }
int main(void) { time_t e = time(0) + 1; while (time(0) <= e) serve(); return 0; }
EOF2
	"$CC" -O1 -g -o "$1" "$1.c" 2>cc.err || { fail "cannot build $1: $(head -c 300 cc.err)"; finish; }
}
build heavy_alpha 3000000
build light_alpha 1000000
# A long command line too (the program ignores its arguments): the header's line is cut.
# shellcheck disable=SC2046
sp_record base.spool -F 999 -- ./heavy_alpha $(seq -f 'argument-%03g' 1 30) >/dev/null || fail "record exited $?"
sp_record new.spool -F 999 -- ./light_alpha >/dev/null || fail "record exited $?"

# alike VIEW FILE: the lines naming A and B (the program's functions other than serve,
# main and _start, whose module is the program: heavy_alpha, light_alpha, or cut) must
# differ once their shares and indentation are set aside, and name alpha and omega.
alike() {
	lines=$(grep -E '(heavy_alpha|light_alpha|heav[^ ]*|[^ ]*pha)\)? *$|  (heavy|light)_alpha *$' "$2" |
		grep -Ev '^(Command|Spool):|(^|[ %])(serve|main|_start)( |$)' | sed -E 's/^[][ 0-9.%+-]*//' | sort)
	n=$(echo "$lines" | grep -c .)
	u=$(echo "$lines" | sort -u | grep -c .)
	a=$(echo "$lines" | grep -c alpha)
	o=$(echo "$lines" | grep -c omega)
	if [ "$a" -gt 0 ] && [ "$o" -gt 0 ] && [ "$n" = "$u" ]; then
		ok "$1: the two functions print apart ($(echo "$lines" | grep -m 1 alpha | cut -c1-70))"
	else
		fail "$1: the two functions print alike or without what tells them apart: $(echo "$lines" | head -n 4 | tr '\n' '|')"
	fi
}
with_timeout 60 "$SP" report base.spool >table.txt 2>/dev/null
sed -n '/Self%/,/^$/p' table.txt >flat.txt
alike "flat table" flat.txt
sed -n '/Heaviest/,$p' table.txt >heaviest.txt
alike "heaviest stacks" heaviest.txt
with_timeout 60 "$SP" report --tree base.spool >tree.txt 2>/dev/null
alike "call tree" tree.txt
with_timeout 60 "$SP" report --inverted base.spool >inverted.txt 2>/dev/null
alike "bottom-up tree" inverted.txt
with_timeout 60 "$SP" report --diff=base.spool new.spool >diff.txt 2>/dev/null
alike "diff" diff.txt
long=$(awk 'length($0) > 80' table.txt tree.txt inverted.txt diff.txt | head -n 1)
[ -z "$long" ] && ok "every line fits in 80 columns" || fail "a line is longer than 80 columns: $long"
finish
