# SPDX-License-Identifier: MIT
# Spools shaped to cost their readers the most (tests/e2e/hostile-spool.py): a chain
# of 20,000 stack nodes with a sample on each took report 40 s and 786 MB, folded
# over a minute and 1.4 GB.  No recorder writes a stack deeper than 2,049 frames
# (SP_SPOOL_MAX_DEPTH), so a deeper node makes the spool corrupt: refused at once.
# The deepest legal chain reads quickly, and 1 MB of 2,049-deep stacks in every view
# and export stays under 200 MB.
# e2e: alone (its refusals are timed against a 2 s bound)
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

# 1 MB of 2,049-deep stacks, ~100,000 of them: every view walks the stacks merged by
# names (work proportional to the spool's nodes), every export streams.  Before, the
# text report took 3.1 s, pprof 303 MB and speedscope 295 MB (each stack expanded and
# kept in full).  Peak memory is checked (time is the benchmark's: scripts/bench-hostile).
python3 "$GEN" wide wide.spool 2048 && python3 "$GEN" widenames widenames.spool 2048 ||
	{ fail "cannot write the hostile spool"; finish; }
if ! with_timeout 300 make -s -C "$REPO" scripts/rusage-run >build.out 2>&1; then
	fail "make scripts/rusage-run failed: $(tail -n 5 build.out)"
else
	for spool in wide widenames; do
		for cmd in "report" "report --tree" "report --inverted" "report --format=folded" \
			"report --format=pprof" "report --format=speedscope" "report --format=flamegraph" \
			"report --format=json" "report --format=perf-script"; do
			with_timeout 120 "$REPO/scripts/rusage-run" ru "$SP" $cmd -o /dev/null $spool.spool 2>ru.err
			line=$(cat ru 2>/dev/null)
			st=$(printf '%s' "$line" | sed -n 's/.*status=\([0-9]*\).*/\1/p')
			kib=$(printf '%s' "$line" | sed -n 's/.*maxrss_kib=\([0-9]*\).*/\1/p')
			info "$cmd of 1 MB ($spool): $line"
			[ "$st" = 0 ] && [ "${kib:-999999}" -lt 204800 ] &&
				ok "$cmd of 1 MB of 2,049-deep stacks ($spool): exit 0, peak $((kib / 1024)) MB" ||
				fail "$cmd of 1 MB of 2,049-deep stacks ($spool): $line: $(head -c 200 ru.err)"
		done
	done
fi
# The text report of the wide spool: both leaves, each half the samples and the whole chain
# (--lines: its frames are addresses, which the text views otherwise merge per module).
"$SP" report --lines --stacks=2 wide.spool >wide.txt 2>/dev/null
[ "$(grep -c '^ *50.0% *100.0%' wide.txt)" = 2 ] && [ "$(grep -c '^    \[unknown\]+0x40' wide.txt)" = 4098 ] &&
	ok "the wide spool's report: two leaves of 50%, two heaviest stacks of 2,049 frames" ||
	fail "the wide spool's report: $(sed -n 10,14p wide.txt)"
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
