# SPDX-License-Identifier: MIT
# lib/ is layered (README "Source layout"): scripts/check-layers finds no stage calling a
# stage above it, no exporter or view including the dispatcher's header, and no circle of
# includes or calls between files; and it does find each of those when one is planted,
# among them a parser of lib/formats/ using the symbolizer or the spool, and the unwinder
# using the symbolizer.
. "$(dirname "$0")/lib.sh"
need_cmd python3 "scripts/check-layers"
need_cmd nm "scripts/check-layers reads the objects' symbols"
with_timeout 300 make -s -C "$REPO" libstackpulse.a >build.out 2>&1 ||
	{ fail "make libstackpulse.a failed: $(tail -n 5 build.out)"; finish; }

if python3 "$REPO/scripts/check-layers" "$REPO" >layers.out 2>&1; then
	ok "$(tail -n 1 layers.out)"
else
	fail "scripts/check-layers on this tree: $(cat layers.out)"
fi

# A copy of lib/ (sources and objects) with one broken rule at a time.
plant() {
	rm -rf tree && mkdir tree && cp -Rp "$REPO/lib" tree/lib
	printf '%s\n' "$2" >>"tree/lib/$1"
	python3 "$REPO/scripts/check-layers" tree >planted.out 2>&1
}
# refused FILE LINE PATTERN WHAT: with LINE appended to lib/FILE, check-layers fails
# and prints PATTERN; WHAT names the broken rule.
refused() {
	plant "$1" "$2"
	[ $? -eq 1 ] && grep -q "$3" planted.out && ok "$4 is refused" ||
		fail "$4 was not refused: $(cat planted.out)"
}
refused report/export_pprof.c '#include "report/report.h"' "dispatcher's header" \
	"an exporter including report/report.h"
refused util/buf.c '#include "spool/spool.h"' "util may not use spool" \
	"util including the spool's header"
refused formats/perfmap.c '#include "symbols/symbols.h"' "formats may not use symbols" \
	"a parser of lib/formats/ including the symbolizer's header"
refused formats/kallsyms.c '#include "spool/spool.h"' "formats may not use spool" \
	"a parser of lib/formats/ including the spool's header"
refused unwind/live_jit_code.c '#include "symbols/symbols.h"' "unwind may not use symbols" \
	"the unwinder including the symbolizer's header"
plant report/aggregate.h '#include "report/views.h"'
[ $? -eq 1 ] && grep -q "include circle: .*report/aggregate.h.*report/views.h" planted.out &&
	ok "an include circle (aggregate.h <-> views.h) is found" ||
	fail "the planted include circle was not found: $(cat planted.out)"

# The design the code follows is in the tree: comments cite "docs/DESIGN.md, decision N"
# (on one line) and never a document outside it, nor the issue tracker's numbers.
(cd "$REPO" && grep -rnIiE "the seeds'|design seeds|seeds/[0-9]|\.\./shared" lib cmd examples tests scripts --exclude-dir=node_modules --exclude-dir=corpus --exclude=43-layers.sh --exclude='*.o';
	grep -rnIiP '(?<!docs/DESIGN\.md, )\bdecision [0-9]+' lib cmd examples tests scripts --exclude-dir=node_modules --exclude-dir=corpus --exclude=43-layers.sh --exclude='*.o';
	grep -rnIE '\(issue [0-9]+|issue [0-9]+ item [0-9]' lib cmd examples tests scripts --exclude-dir=node_modules --exclude-dir=corpus --exclude='*.o') >citations.out
if [ -s citations.out ]; then
	fail "comments cite documents outside the tree or a decision not as docs/DESIGN.md, decision N: $(cat citations.out)"
else
	ok "comments cite only docs/DESIGN.md's decisions"
fi
finish
