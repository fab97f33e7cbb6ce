# SPDX-License-Identifier: MIT
# Separate debug files: a copy of chain4 is split into a stripped binary and its debug
# file (objcopy --only-keep-debug, --add-gnu-debuglink, strip), recorded, and its names
# come back through the debug link (beside the binary, in .debug/), through
# STACKPULSE_DEBUG_DIRS (by link name and by build-id), and with inline frames and lines.
# The debug file of a second build (another build-id) is refused, with a warning and a
# header line.  debuginfod is only checked to fail cleanly (no network in tests).
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload chain4
need_cmd objcopy "splitting debug information"
need_cmd strip "splitting debug information"

CHAIN=';main;level1;level2;level3;level4$'
# The stripped binary has no names for its own code: module+offset frames.
ADDR='prog\+0x[0-9a-f]+'

cp "$WL" prog && objcopy --only-keep-debug prog prog.debug && strip -s prog &&
	objcopy --add-gnu-debuglink=prog.debug prog || {
	fail "cannot split chain4 into prog and prog.debug"
	finish
}
if nm prog 2>/dev/null | grep -q level4; then
	fail "strip left level4 in prog's symbol table"
	finish
fi
info "prog: $(wc -c <prog) bytes, prog.debug: $(wc -c <prog.debug) bytes"
sp_record split.spool -F 999 -- ./prog -t 1 >/dev/null || {
	fail "record of the stripped prog exited $?: $(head -c 300 record.err)"
	finish
}

# report FOLDED-FILE [ENV...]: report --format=folded with the environment given.
report_folded() {
	out=$1
	shift
	env "$@" "$SP" report --format=folded split.spool >"$out" 2>"$out.err"
}

# share_90 LABEL FILE ERE WHAT: at least 90% of the samples in FILE match ERE; on
# failure, the top stack.
share_90() {
	share_at_least "$1" 90 $(folded_share "$2" "$3") "$4" || info "$1 top stack: $(folded_top "$2" 1)"
}

report_folded beside.folded
share_90 "debug link beside the binary:" beside.folded "$CHAIN" "the samples are named main;level1;...;level4"

mkdir .debug && mv prog.debug .debug/
report_folded dotdebug.folded
share_90 "debug link in .debug/:" dotdebug.folded "$CHAIN" "the samples are named main;level1;...;level4"

# Out of every default place: the names are gone...
mkdir dbg && mv .debug/prog.debug dbg/
report_folded none.folded
share_90 "without a reachable debug file:" none.folded "$ADDR" "the samples show the stripped code as module+offset"
! grep -q level4 none.folded && ok "without a reachable debug file nothing is named level4" ||
	fail "stripped prog still named without its debug file: $(folded_top none.folded 1)"
# ...and STACKPULSE_DEBUG_DIRS brings them back, by link name...
report_folded dirs.folded STACKPULSE_DEBUG_DIRS="/nonexistent:$TMP/dbg"
share_90 "STACKPULSE_DEBUG_DIRS, by debug link:" dirs.folded "$CHAIN" "the samples are named main;level1;...;level4"
# ...and by build-id, the .build-id/xx/rest.debug layout.
id=$(readelf -n prog 2>/dev/null | sed -n 's/.*Build ID: *\([0-9a-f]*\).*/\1/p' | head -n 1)
if [ -n "$id" ]; then
	mkdir -p "ids/.build-id/$(echo "$id" | cut -c1-2)"
	cp dbg/prog.debug "ids/.build-id/$(echo "$id" | cut -c1-2)/$(echo "$id" | cut -c3-).debug"
	report_folded ids.folded STACKPULSE_DEBUG_DIRS="$TMP/ids"
	share_90 "STACKPULSE_DEBUG_DIRS, by build-id $id:" ids.folded "$CHAIN" "the samples are named main;level1;...;level4"
else
	skip "readelf shows no build-id for prog: the build-id layout is not checked"
fi
# Lines come from the debug file's DWARF too.
STACKPULSE_DEBUG_DIRS=$TMP/dbg "$SP" report --format=folded --lines split.spool >lines.folded 2>/dev/null
grep -Eq ';level3:[0-9]+;level4:[0-9]+ [0-9]+$' lines.folded &&
	ok "--lines through the debug file: $(grep -oE 'level3:[0-9]+;level4:[0-9]+' lines.folded | head -n 1)" ||
	fail "--lines through the debug file gave no level4:LINE: $(folded_top lines.folded 1)"

# A debug file of another build is refused, wherever it is found.
if ! command -v "${CC:-cc}" >/dev/null 2>&1; then
	skip "no C compiler (${CC:-cc}): the refusal of another build's debug file is not checked"
	finish
fi
# -O1 instead of the workloads' -O2: another binary, another build-id.
"${CC:-cc}" -O1 -g -o other "$REPO/tests/workloads/chain4.c" 2>cc.err &&
	objcopy --only-keep-debug other other.debug || {
	fail "cannot build the second variant: $(head -c 300 cc.err)"
	finish
}
mkdir wrong && cp other.debug wrong/prog.debug
if [ -n "$id" ]; then
	mkdir -p "wrong/.build-id/$(echo "$id" | cut -c1-2)"
	cp other.debug "wrong/.build-id/$(echo "$id" | cut -c1-2)/$(echo "$id" | cut -c3-).debug"
fi
STACKPULSE_DEBUG_DIRS=$TMP/wrong "$SP" report --format=folded split.spool >wrong.folded 2>wrong.err
share_90 "another build's debug file:" wrong.folded "$ADDR" "the samples show module+offset, no names"
! grep -q level4 wrong.folded && ok "another build's debug file names nothing level4" ||
	fail "another build's debug file was used: $(folded_top wrong.folded 1)"
info "warning: $(head -n 1 wrong.err)"
grep -q "debug file.* refused" wrong.err && grep -q "$TMP/wrong/" wrong.err &&
	ok "report warns that the debug file was refused and names it" ||
	fail "no refusal warning naming $TMP/wrong: '$(head -c 300 wrong.err)'"
STACKPULSE_DEBUG_DIRS=$TMP/wrong "$SP" report split.spool >wrong.txt 2>/dev/null
line=$(grep '^Debug files:' wrong.txt)
want=1
[ -n "$id" ] && want=2
echo "$line" | grep -q "^Debug files: $want refused" &&
	ok "the report header counts the refused debug files: $line" ||
	fail "the header has no 'Debug files: $want refused' line: '$line'"
# The refusal does not stop the search: the right file, further on, is still used.
STACKPULSE_DEBUG_DIRS="$TMP/wrong:$TMP/dbg" "$SP" report --format=folded split.spool >both.folded 2>both.err
share_90 "a refused candidate first, the right one next:" both.folded "$CHAIN" "the samples are named main;level1;...;level4"
grep -q refused both.err && ok "a refused candidate first, the right one next: the refusal is still warned" ||
	fail "wrong then right debug directory: no refusal warned, stderr '$(head -c 200 both.err)'"

# debuginfod: asked only when nothing local matches; an unreachable server is no error.
DEBUGINFOD_URLS=http://127.0.0.1:9 DEBUGINFOD_TIMEOUT=5 DEBUGINFOD_CACHE_PATH=$TMP/cache \
	with_timeout 60 "$SP" report --format=folded split.spool >dinfod.folded 2>dinfod.err
st=$?
[ $st -eq 0 ] && cmp -s dinfod.folded none.folded &&
	ok "DEBUGINFOD_URLS with an unreachable server: the report still comes, unnamed as before" ||
	fail "DEBUGINFOD_URLS with an unreachable server: exit $st, $(head -c 200 dinfod.err)"
finish
