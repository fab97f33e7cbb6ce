# SPDX-License-Identifier: MIT
# Symbols stored in the spool (stackpulse symbolize): a copy of inline_chain in a temp
# dir is recorded and reported, symbolized, moved away, and reported again: the same
# bytes, in text, --lines folded and perf-script forms.  Kernel frames of a -k
# recording keep their names after the --kallsyms copy is gone, perf-map names after
# the map is gone.  A stripped binary without a debug file is listed with every place
# looked, and a later symbolize with its debug file reachable names it.  A binary deleted or replaced while it runs is
# named from the image that was sampled (stored at record end), never from the new file.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload inline_chain
IC=$WL
need_workload chain4
CHAIN4=$WL
need_workload spin_ms
SPIN=$WL

# reports NAME SPOOL [OPTIONS...]: text, folded --lines and perf-script reports into NAME.*
reports() {
	name=$1
	spool=$2
	shift 2
	"$SP" report "$@" "$spool" >"$name.txt" 2>"$name.err" &&
		"$SP" report --format=folded --lines "$@" "$spool" >"$name.folded" 2>>"$name.err" &&
		"$SP" report --format=perf-script "$@" "$spool" >"$name.script" 2>>"$name.err"
}

# --- 1. symbolize, move the binary away, report the same bytes -------------------------

mkdir bin && cp "$IC" bin/prog || {
	fail "cannot copy inline_chain"
	finish
}
sp_record ic.spool -F 999 -- ./bin/prog -t 1 >/dev/null || {
	fail "record of bin/prog exited $?: $(head -c 300 record.err)"
	finish
}
reports before ic.spool || fail "report before symbolize failed: $(head -c 300 before.err)"
grep -q 'mix_inner' before.folded && ok "before symbolize: the inline chain is named" ||
	fail "before symbolize: mix_inner missing: $(folded_top before.folded 1)"
size0=$(wc -c <ic.spool)
"$SP" symbolize ic.spool >sym.out 2>sym.err
st=$?
[ $st -eq 0 ] && ok "symbolize exits 0" || fail "symbolize exited $st: $(head -c 300 sym.err)"
sed 's/^/# /' sym.out
size1=$(wc -c <ic.spool)
stored=$(sed -n 's/.*: stored \([0-9]*\) frames.*/\1/p' sym.out)
[ "${stored:-0}" -gt 0 ] && [ "$size1" -gt "$size0" ] &&
	ok "symbolize stored $stored frames in place ($size0 -> $size1 bytes)" ||
	fail "symbolize stored '${stored:-}' frames, spool $size0 -> $size1 bytes"
ls -a | grep -q '^\.ic\.spool\.' && fail "symbolize left its temporary file behind" ||
	ok "no temporary file left beside the spool"
"$SP" dump ic.spool >ic.dump 2>/dev/null
grep -q '^sym-frame .*name="mix_inner"' ic.dump && grep -q '^sym-strings ' ic.dump &&
	ok "dump shows sym-strings and sym-frame records" || fail "dump shows no symbol records"
if command -v python3 >/dev/null 2>&1; then
	"$SP" dump --json ic.spool >ic.jsonl 2>/dev/null
	python3 -c '
import json, sys
recs = [json.loads(line) for line in open(sys.argv[1])]
chains = [r["chain"] for r in recs if r["type"] == "sym-frame"]
assert any(c[0]["name"] == "mix_inner" and c[0]["flags"] & 8 for c in chains), "no mix_inner inline chain"
assert len(chains) == sum(1 for line in open(sys.argv[2]) if line.startswith("sym-frame ")), "count differs"
' ic.jsonl ic.dump 2>json.err &&
		ok "dump --json shows the same sym-frame records, mix_inner's inline chain among them" ||
		fail "dump --json of a symbolized spool: $(tail -n 1 json.err)"
else
	skip "python3 not found: dump --json of symbol records not parsed"
fi

mv bin moved
reports after ic.spool || fail "report after moving the binary failed: $(head -c 300 after.err)"
for kind in txt folded script; do
	if cmp -s "before.$kind" "after.$kind"; then
		ok "report ($kind) with the binary gone is byte-for-byte the one before"
	else
		fail "report ($kind) differs once the binary is gone: $(diff "before.$kind" "after.$kind" | head -n 6 | tr '\n' '|')"
	fi
done
reports nostored ic.spool --no-stored-symbols
grep -q 'mix_inner' nostored.folded && fail "--no-stored-symbols still names mix_inner without the binary" ||
	ok "--no-stored-symbols: names gone with the binary (they came from the spool)"

# A second run finds everything stored and leaves the spool alone; -o writes a copy.
"$SP" symbolize ic.spool >again.out 2>&1
[ "$(wc -c <ic.spool)" -eq "$size1" ] && grep -q 'stored 0 frames' again.out &&
	ok "a second symbolize stores nothing new and leaves the spool as it was" ||
	fail "second symbolize: $(head -c 300 again.out), $(wc -c <ic.spool) bytes"
"$SP" symbolize -o copy.spool ic.spool >/dev/null 2>&1 && cmp -s copy.spool ic.spool &&
	ok "symbolize -o writes the spool to another file" || fail "symbolize -o copy differs"
"$SP" symbolize missing.spool >/dev/null 2>missing.err
st=$?
[ $st -eq 1 ] && grep -q "missing.spool" missing.err && ok "a missing spool: exit 1, named" ||
	fail "missing spool: exit $st, $(head -c 200 missing.err)"
mv moved bin

# --- 2. kernel frames without kallsyms --------------------------------------------------

if [ "$(id -u)" != 0 ] || [ ! -r /proc/kallsyms ] ||
	! awk '$1 !~ /^0+$/ { f = 1; exit } END { exit !f }' /proc/kallsyms; then
	skip "kernel symbols: not root or /proc/kallsyms unreadable or restricted"
else
	need_workload syscall_loop
	cp /proc/kallsyms saved.kallsyms
	sp_record k.spool -k -F 999 -- "$WL" -t 1 >/dev/null || fail "record -k exited $?"
	reports kbefore k.spool --kallsyms saved.kallsyms
	if grep -qE 'do_syscall_64|entry_SYSCALL' kbefore.folded; then
		"$SP" symbolize --kallsyms saved.kallsyms k.spool >ksym.out 2>&1 ||
			fail "symbolize --kallsyms exited $?: $(head -c 200 ksym.out)"
		"$SP" dump k.spool | grep -q '^sym-kernel ' &&
			ok "symbolize stored the kallsyms symbols it used" ||
			fail "no sym-kernel record in the symbolized spool"
		rm saved.kallsyms
		reports kafter k.spool --kallsyms saved.kallsyms
		cmp -s kbefore.folded kafter.folded && cmp -s kbefore.txt kafter.txt &&
			ok "kernel frames keep their names with the kallsyms copy gone (same report)" ||
			fail "kernel report differs without kallsyms: $(diff kbefore.folded kafter.folded | head -n 4 | tr '\n' '|')"
		[ -s kafter.err ] && fail "report warned: $(head -c 200 kafter.err)" ||
			ok "no kallsyms warning: the file was never needed"
	else
		skip "kernel symbols: the -k report names no system call ($(folded_top kbefore.folded 1))"
	fi
fi

# --- 3. perf-map names without the map ------------------------------------------------

WORKLOAD_JIT=$WORKLOADS/jit_perfmap
if [ -x "$WORKLOAD_JIT" ]; then
	sp_record jit.spool -F 999 -- "$WORKLOAD_JIT" -t 1 >jit.out || fail "record of jit_perfmap exited $?"
	MAP=$(sed -n 's/^jit_perfmap: perf map //p' jit.out)
	mkdir maps && mv "$MAP" maps/ 2>/dev/null
	reports jbefore jit.spool --perf-map-dir maps
	if grep -q jit_hot_loop jbefore.folded; then
		"$SP" symbolize --perf-map-dir maps jit.spool >jsym.out 2>&1 || fail "symbolize of jit.spool exited $?"
		"$SP" dump jit.spool | grep -q '^sym-perf-map .*name="jit_hot_loop"' &&
			ok "symbolize stored the perf map line it used" ||
			fail "no sym-perf-map record for jit_hot_loop"
		rm -rf maps
		reports jafter jit.spool --perf-map-dir maps
		cmp -s jbefore.folded jafter.folded && cmp -s jbefore.txt jafter.txt &&
			ok "perf-map names stay with the map gone (same report)" ||
			fail "perf-map report differs without the map: $(diff jbefore.folded jafter.folded | head -n 4 | tr '\n' '|')"
	else
		skip "perf maps: jit_hot_loop not named even with the map ($(folded_top jbefore.folded 1))"
	fi
	rm -f "$MAP"
else
	skip "jit_perfmap workload not built"
fi

# --- 4. a stripped binary without its debug file: where symbolize looked --------------

if command -v objcopy >/dev/null 2>&1 && command -v strip >/dev/null 2>&1; then
	mkdir strip && cp "$CHAIN4" strip/sprog && objcopy --only-keep-debug strip/sprog sprog.debug &&
		strip -s strip/sprog && objcopy --add-gnu-debuglink=sprog.debug strip/sprog
	id=$(readelf -n strip/sprog 2>/dev/null | sed -n 's/.*Build ID: *\([0-9a-f]*\).*/\1/p' | head -n 1)
	sp_record s.spool -F 999 -- ./strip/sprog -t 1 >/dev/null || fail "record of sprog exited $?"
	STACKPULSE_DEBUG_DIRS="$TMP/dbg" "$SP" symbolize s.spool >s.out 2>s.err
	st=$?
	sed 's/^/# /' s.out
	[ $st -eq 0 ] && ok "symbolize with frames left unresolved exits 0" ||
		fail "symbolize of the stripped binary exited $st"
	grep -q "^  $TMP/strip/sprog build-id $id: [0-9]* frames*, no symbol" s.out &&
		ok "unresolved: the module path, its build-id and frame count" ||
		fail "unresolved list lacks '$TMP/strip/sprog build-id $id'"
	missing=
	for place in "$TMP/strip/sprog" "$TMP/dbg/.build-id/$(echo "$id" | cut -c1-2)/$(echo "$id" | cut -c3-).debug" \
		"/usr/lib/debug/.build-id/$(echo "$id" | cut -c1-2)/$(echo "$id" | cut -c3-).debug" \
		"$TMP/dbg/sprog.debug" "$TMP/strip/sprog.debug" "$TMP/strip/.debug/sprog.debug" \
		"/usr/lib/debug$TMP/strip/sprog.debug"; do
		grep -qxF "    looked in $place" s.out || missing="$missing $place"
	done
	[ -z "$missing" ] && ok "every place looked is listed (file, build-id dirs, debug link places)" ||
		fail "places not listed:$missing"
	grep -q 'address-only' s.out && ok "counts of named and address-only frames printed" ||
		fail "no counts printed"
	# The debug file installed: address-only frames are tried again and named now.
	mkdir dbg && mv sprog.debug dbg/
	STACKPULSE_DEBUG_DIRS="$TMP/dbg" "$SP" symbolize s.spool >s2.out 2>&1
	mv dbg dbg.gone
	"$SP" report --format=folded s.spool >s.folded 2>/dev/null
	grep -q ';main;level1;level2;level3;level4' s.folded &&
		ok "a later symbolize with the debug file reachable stores the names" ||
		fail "after installing the debug file: $(folded_top s.folded 1)"
else
	skip "objcopy or strip missing: no stripped binary"
fi

# --- 5. binaries replaced or deleted while they run ------------------------------------

# run_and_swap NAME ACTION: start a copy of chain4 as bin/NAME, record it by pid, then
# replace (mv another binary over it) or delete it while it runs; wait for its exit.
run_and_swap() {
	cp "$CHAIN4" "bin/$1"
	"./bin/$1" -t 2 >/dev/null &
	pid=$!
	track_pid $pid
	sleep 0.3
	with_timeout 60 "$SP" record -q -o "$1.spool" -p $pid -d 1.2 2>"$1.rec.err" &
	rec=$!
	sleep 0.5
	case $2 in
	replace) cp "$SPIN" "bin/$1.new" && mv "bin/$1.new" "bin/$1" ;;
	delete) rm "bin/$1" ;;
	esac
	wait $rec || fail "record of $1 exited $?: $(head -c 200 "$1.rec.err")"
	wait $pid 2>/dev/null
}

for action in replace delete; do
	run_and_swap "p$action" $action
	"$SP" report --format=folded "p$action.spool" >"p$action.folded" 2>/dev/null
	"$SP" report --format=folded --no-stored-symbols "p$action.spool" >"p$action.raw" 2>/dev/null
	"$SP" report --no-stored-symbols "p$action.spool" >"p$action.txt" 2>/dev/null
	set -- $(folded_share "p$action.folded" ';main;level1;level2;level3;level4$')
	share_at_least "$action while running:" 90 "$1" "$2" "the samples are named from the sampled image" ||
		info "$action top stack: $(folded_top "p$action.folded" 1)"
	if grep -qE 'level4|cpu_ms' "p$action.raw"; then
		fail "$action: without the stored symbols a frame took a name from the file now there"
	else
		ok "$action: without the stored symbols the frames stay module+offset"
	fi
	case $action in
	replace) grep -q '^Unproven: ' "p$action.txt" &&
		ok "replace: the report says the file there is not the recorded one" ||
		fail "replace: no 'Unproven' line" ;;
	delete) grep -q '^Unreadable: ' "p$action.txt" &&
		ok "delete: the report says the file is missing" ||
		fail "delete: no 'Unreadable' line" ;;
	esac
done

finish
