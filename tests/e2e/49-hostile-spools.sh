# SPDX-License-Identifier: MIT
# Spools shaped to cost their readers the most (tests/e2e/hostile-spool.py): a chain
# of 20,000 stack nodes with a sample on each took report 40 s and 786 MB, folded
# over a minute and 1.4 GB.  No recorder writes a stack deeper than 2,049 frames
# (SP_SPOOL_MAX_DEPTH), so a deeper node makes the spool corrupt: refused at once.
# The deepest legal chain reads quickly; the figures of a 1 MB spool of 2,049-deep
# stacks are printed (its cost is proportional to the frames its stacks hold).
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_cmd python3 "writing the hostile spools"
GEN=$(dirname "$0")/hostile-spool.py

# timed NAME COMMAND...: run it (bound 60 s); sets rc and secs, output in NAME.out/.err.
timed() {
	name=$1
	shift
	t0=$(date +%s%N)
	with_timeout 60 "$@" >"$name.out" 2>"$name.err"
	rc=$?
	secs=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
}

python3 "$GEN" deep deep.spool 20000 || { fail "cannot write the hostile spool"; finish; }
for cmd in "report" "report --format=folded" "report --format=perf-script" "report --tree" "dump"; do
	timed deep "$SP" $cmd deep.spool
	if [ $rc = 1 ] && grep -q "corrupt" deep.err && [ "$(num_ge 2 "$secs")" = 1 ]; then
		ok "$cmd of a 20,000-deep chain: refused as corrupt in $secs s"
	else
		fail "$cmd of a 20,000-deep chain: exit $rc in $secs s: $(head -c 200 deep.err)"
	fi
done

python3 "$GEN" deep legal.spool 2049 || { fail "cannot write the hostile spool"; finish; }
for cmd in "report" "report --format=folded" "report --tree" "report --format=json"; do
	timed legal "$SP" $cmd legal.spool
	[ $rc = 0 ] && ok "$cmd of a 2,049-deep chain: exit 0 in $secs s" ||
		fail "$cmd of a 2,049-deep chain: exit $rc: $(head -c 200 legal.err)"
done
"$SP" dump legal.spool 2>/dev/null | grep -c '^sample ' | grep -qx 2049 &&
	ok "dump of the 2,049-deep chain reads its 2,049 samples" ||
	fail "dump of the 2,049-deep chain: $("$SP" dump legal.spool 2>&1 | tail -n 1)"

python3 "$GEN" wide wide.spool 2048 || { fail "cannot write the hostile spool"; finish; }
timed wide "$SP" report wide.spool
info "1 MB of 2,049-deep stacks ($(grep -c '' wide.out) lines): report exit $rc in $secs s"
[ $rc = 0 ] && ok "report of 1 MB of 2,049-deep stacks exits 0" ||
	fail "report of 1 MB of 2,049-deep stacks: exit $rc: $(head -c 200 wide.err)"
# One file spelled 1,000 ways ("/dir//f", "/dir/./f", ...) with its true identity and
# no build-id: one open file and one libdwfl instance, not 1,000 (1.2 GB and 2 s before).
if ! command -v nm >/dev/null 2>&1 || ! command -v strace >/dev/null 2>&1; then
	skip "spellings of one file: nm and strace needed (binutils, strace)"
else
	cp "$SP" ./spbig
	svma=$(nm ./spbig | awk '$3 == "sp_symbolizer_resolve_all" { print $1 }')
	SVMA=${svma:-10} python3 "$GEN" "spellings:$PWD/spbig" spell.spool 1000 ||
		{ fail "cannot write the hostile spool"; finish; }
	STACKPULSE_CACHE_DIR= traced with_timeout 120 strace -f -e trace=open,openat -o spell.trace \
		"$SP" report spell.spool >spell.txt 2>spell.err
	rc=$?
	opens=$(grep -c 'spbig"' spell.trace)
	named=$(awk '$4 == "sp_symbolizer_resolve_all" { print $3 }' spell.txt | head -n 1)
	info "1,000 spellings of one file: report exit $rc, $opens opens of it, ${named:-0} samples named"
	[ $rc = 0 ] && [ "$opens" -le 2 ] && [ "${named:-0}" = 1000 ] &&
		ok "1,000 spellings of one file: opened $opens time(s), every sample named" ||
		fail "1,000 spellings of one file: exit $rc, $opens opens, ${named:-0} samples named: $(head -c 200 spell.err)"
fi
finish
