# SPDX-License-Identifier: MIT
# scripts/gen-spool (the report benchmark's spool generator): builds, writes the samples,
# stacks and threads it is asked for over real module files, and report names their frames.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_cmd make "building scripts/gen-spool"
with_timeout 300 make -s -C "$REPO" bench-tools >build.out 2>&1 || { fail "make bench-tools failed: $(tail -n 5 build.out)"; finish; }
GEN=$REPO/scripts/gen-spool
LIBC=$(ldd "$SP" 2>/dev/null | awk '$1 ~ /^libc\.so/ { print $3 }')
[ -n "$LIBC" ] || skip_all "cannot find the C library stackpulse uses (ldd)"
cp "$SP" module-bin

with_timeout 60 "$GEN" -n 20000 -s 300 -p 2 -t 4 -m "$TMP/module-bin" -m "$LIBC" -o g.spool 2>gen.err ||
	{ fail "gen-spool failed: $(head -c 300 gen.err)"; finish; }
ok "$(cat gen.err)"
"$SP" dump g.spool >g.dump || { fail "dump of the generated spool failed"; finish; }
n=$(awk '$1 == "sample"' g.dump | wc -l)
[ "$n" -eq 20000 ] && ok "20000 sample records" || fail "$n sample records, asked for 20000"
n=$(awk '$1 == "thread"' g.dump | wc -l)
[ "$n" -eq 8 ] && ok "8 threads (2 processes x 4)" || fail "$n threads, asked for 8"
n=$(awk '$1 == "module"' g.dump | wc -l)
[ "$n" -eq 4 ] && ok "4 module records (2 files x 2 processes)" || fail "$n module records, expected 4"

"$SP" report --format=folded g.spool >g.folded 2>g.err || { fail "report failed: $(head -c 300 g.err)"; finish; }
total=$(folded_total g.folded)
[ "$total" -eq 20000 ] && ok "folded stacks hold the 20000 samples" || fail "folded stacks hold $total samples"
nstacks=$(wc -l <g.folded)
[ "$nstacks" -ge 200 ] && ok "$nstacks distinct folded stacks (300 generated)" || fail "only $nstacks distinct folded stacks"
depths=$(awk '{ s = $0; sub(/ [0-9]+$/, "", s); n = split(s, f, ";"); if (n < 10) short++ } END { print short + 0 }' g.folded)
[ "$depths" -eq 0 ] && ok "every stack has at least 10 frames" || fail "$depths stacks shorter than 10 frames"
# The frames are inside real functions: the symbolizer names them (no module+0xOFFSET).
frames=$(tr ';' '\n' <g.folded | sed 's/ [0-9]*$//' | wc -l)
raw=$(tr ';' '\n' <g.folded | sed 's/ [0-9]*$//' | grep -c '+0x')
[ "$raw" -eq 0 ] && ok "all $frames frames named by the symbolizer" || fail "$raw of $frames frames unnamed"
grep -q 'main' g.folded && ok "stackpulse's own functions appear (main)" || fail "no 'main' frame: $(head -c 200 g.folded)"

with_timeout 30 "$GEN" -n 0 -o x.spool >/dev/null 2>err.txt
[ $? -eq 2 ] && ok "gen-spool -n 0: usage error ($(head -n 1 err.txt))" || fail "gen-spool -n 0 did not fail with status 2"
finish
