# SPDX-License-Identifier: MIT
# stackpulse annotate on the hot_line workload: divide()'s hottest line is its division
# (>= 80% of its samples) and its hottest instruction lies in that line's code; the
# inlined helper scramble()'s division line is shown on the helper's own line, under
# the line of mix() that calls it (gcc -O2 -g from the Makefile, clang -O2 -g when clang
# exists); beside perf annotate (same hottest line and instruction, shares within 5
# points for the line, 8 for the instruction); report --by=line; a source that is missing, then found with --source-dir; a
# binary deleted while recorded (lines from the names the recording stored, the module
# file named as unreadable); a spool symbolized beforehand.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload hot_line
command -v python3 >/dev/null 2>&1 || skip_all "python3 not found (it reads annotate's JSON)"

SRC=$REPO/tests/workloads/hot_line.c
HOT=$(grep -n 'HOT_DIVIDE' "$SRC" | cut -d: -f1)
INL=$(grep -n 'HOT_INLINE' "$SRC" | cut -d: -f1)
CALL=$(grep -n 'CALL_INLINE' "$SRC" | cut -d: -f1)
info "source lines: division $HOT, inlined helper's division $INL, its call $CALL"

# check_json FILE FUNCTION: "LINE PCT INSN_ADDR INSN_PCT INSN_LINE": the function's
# hottest line, its share, the hottest instruction, its share and its line.
hottest() {
	python3 - "$1" "$2" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
for f in doc["functions"]:
    if f["name"] != sys.argv[2]:
        continue
    line = max(f["lines"], key=lambda l: l["samples"]) if f["lines"] else {"line": 0, "percent": 0}
    ins = max(f["instructions"], key=lambda i: i["samples"]) if f["instructions"] else None
    if ins:
        print(line["line"], line["percent"], ins["address"], ins["percent"], ins["line"])
    else:
        print(line["line"], line["percent"], "none", 0, 0)
EOF
}

# inlined FILE FUNCTION: "FUNC LINE CALL_LINE PCT" of the function's hottest inlined line.
inlined() {
	python3 - "$1" "$2" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
for f in doc["functions"]:
    rows = [l for l in f["lines"] if l["inlined_function"]] if f["name"] == sys.argv[2] else []
    if rows:
        r = max(rows, key=lambda l: l["samples"])
        print(r["inlined_function"], r["line"], r["call_line"], r["percent"])
EOF
}

# check_inline SPOOL WHAT: the helper's hot line, on its own line under its caller's line.
check_inline() {
	with_timeout 60 "$SP" annotate --format=json -s mix "$1" >"$1.mix.json" 2>"$1.err" ||
		fail "$2: annotate -s mix exited $?: $(head -c 300 "$1.err")"
	set -- $(inlined "$1.mix.json" mix) "$1" "$2"
	info "$6: mix's hottest inlined line: $1 line $2 called at line $3, $4% of mix"
	[ "${1:-}" = scramble ] && [ "${2:-}" = "$INL" ] && [ "${3:-}" = "$CALL" ] &&
		ok "$6: scramble's division (line $INL) shown inlined under mix's line $CALL" ||
		fail "$6: the hottest inlined line is '${1:-none} ${2:-} under ${3:-}', not scramble $INL under $CALL"
	# In the text, the helper's row follows its caller's line.
	with_timeout 60 "$SP" annotate -s mix "$5" >"$5.mix.txt" 2>/dev/null
	awk -v call="$CALL" -v inl="$INL" '
		$4 == call && /CALL_INLINE/ { c = NR }
		c && $4 == inl && /inlined scramble: .*HOT_INLINE/ { if (NR > c) found = 1 }
		END { exit !found }' "$5.mix.txt" &&
		ok "$6: text view: 'inlined scramble' line $INL printed under line $CALL" ||
		fail "$6: text view lacks line $INL under line $CALL: $(grep -m3 -E 'CALL_INLINE|HOT_INLINE' "$5.mix.txt" | tr '\n' '|')"
}

sp_record hl.spool -F 999 -- "$WL" -t 2 >/dev/null || {
	fail "record of hot_line exited $?: $(head -c 300 record.err)"
	finish
}
with_timeout 60 "$SP" annotate --format=json -s divide hl.spool >divide.json 2>divide.err ||
	fail "annotate --format=json -s divide exited $?: $(head -c 300 divide.err)"
set -- $(hottest divide.json divide)
SP_LINE=${1:-0} SP_LPCT=${2:-0} SP_INSN=${3:-none} SP_IPCT=${4:-0}
info "stackpulse: divide's hottest line $SP_LINE ($SP_LPCT%), instruction $SP_INSN ($SP_IPCT%, line ${5:-0})"
[ "$SP_LINE" = "$HOT" ] && [ "$(num_ge "$SP_LPCT" 80)" = 1 ] &&
	ok "divide's hottest line is the division, line $HOT, with $SP_LPCT% (>= 80%)" ||
	fail "divide's hottest line is $SP_LINE with $SP_LPCT%, not line $HOT with >= 80%"
[ "${5:-0}" = "$HOT" ] &&
	ok "the hottest instruction $SP_INSN lies in line $HOT's code" ||
	fail "the hottest instruction $SP_INSN belongs to line ${5:-0}, not $HOT"

with_timeout 60 "$SP" annotate hl.spool >all.txt 2>all.err || fail "annotate exited $?: $(head -c 300 all.err)"
grep -q '^== divide (hot_line)' all.txt && grep -q 'HOT_DIVIDE' all.txt &&
	grep -Eq '^\* +[0-9.]+ +[0-9]+ +[0-9a-f]+:  ' all.txt &&
	grep -Eq 'j[a-z]+ 0x[0-9a-f]+ <divide\+0x[0-9a-f]+>' all.txt &&
	ok "text view: source text, a hot instruction marked '*', branch targets as divide+0x..." ||
	fail "text view lacks the source text, a marked instruction or a divide+0x target"
check_inline hl.spool "gcc -O2 -g"

# report --by=line: the division line heads the table across functions.
with_timeout 60 "$SP" report --by=line hl.spool >byline.txt 2>byline.err ||
	fail "report --by=line exited $?: $(head -c 300 byline.err)"
top=$(awk '/Source line/ { t = 1; next } t { print; exit }' byline.txt)
info "report --by=line top row: $top"
echo "$top" | grep -q " hot_line.c:$HOT .*divide (hot_line)" &&
	ok "report --by=line: hot_line.c:$HOT (divide) is the top row" ||
	fail "report --by=line top row is not hot_line.c:$HOT: $top"

# A spool symbolized beforehand still annotates (its names stored, its code read).
cp hl.spool sym.spool
if with_timeout 60 "$SP" symbolize sym.spool >/dev/null 2>&1; then
	with_timeout 60 "$SP" annotate --format=json -s divide sym.spool >sym.json 2>/dev/null
	set -- $(hottest sym.json divide)
	[ "${1:-}" = "$HOT" ] && [ "${3:-none}" != none ] &&
		ok "a symbolized spool: same hottest line $HOT, disassembly shown" ||
		fail "a symbolized spool: hottest line '${1:-}', instruction '${3:-}'"
else
	fail "symbolize sym.spool failed"
fi

# The compiler's own layouts: clang -O2 -g, when installed.
if command -v clang >/dev/null 2>&1; then
	clang -O2 -g -fomit-frame-pointer -o hl-clang "$SRC" && sp_record clang.spool -F 999 -- ./hl-clang -t 2 >/dev/null &&
		check_inline clang.spool "clang -O2 -g" || fail "clang build or record failed"
else
	skip "clang not found: the clang -O2 -g inline check did not run"
fi

# A source that is not where DWARF says: numbers and counts, then --source-dir finds it.
mkdir -p build src
cp "$SRC" build/hot_line.c
(cd build && cc -O2 -g -fomit-frame-pointer -o ../hl-moved hot_line.c) || fail "cc of a copy failed"
sp_record moved.spool -F 999 -- ./hl-moved -t 1 >/dev/null || fail "record of the copy exited $?"
mv build/hot_line.c src/hot_line.c
with_timeout 60 "$SP" annotate -s divide moved.spool >moved.txt 2>moved.err
grep -q 'source not found: .*/build/hot_line.c' moved.txt && grep -q 'not found' moved.err &&
	awk -v hot="$HOT" '$4 == hot { f = 1 } END { exit !f }' moved.txt &&
	ok "a missing source is said (output and warning), line $HOT still listed with its counts" ||
	fail "missing source: $(grep -m2 -E 'not found|^ ' moved.txt moved.err | tr '\n' '|')"
with_timeout 60 "$SP" annotate -s divide --source-dir src moved.spool >found.txt 2>/dev/null
grep -q 'HOT_DIVIDE' found.txt && ! grep -q 'source not found' found.txt &&
	ok "--source-dir src finds it" || fail "--source-dir did not find the source"

# A binary deleted while recorded: the recording stores its frames' names; no code to show.
cp "$WL" hl-deleted
sp_record deleted.spool -F 999 -- ./hl-deleted -t 2 >/dev/null &
rec=$!
track_pid $rec
sleep 1
rm -f hl-deleted
wait $rec || fail "record of the deleted copy exited $?"
with_timeout 60 "$SP" annotate --format=json -s divide deleted.spool >deleted.json 2>deleted.err
set -- $(hottest deleted.json divide)
info "deleted binary: hottest line ${1:-}, instruction ${3:-}; $(head -c 200 deleted.err)"
[ "${1:-}" = "$HOT" ] && [ "${3:-}" = none ] && grep -q "cannot read '.*hl-deleted" deleted.err &&
	ok "deleted binary: lines from the stored names (line $HOT), the unreadable module file named" ||
	fail "deleted binary: line '${1:-}', instruction '${3:-}', stderr: $(head -c 200 deleted.err)"

# perf annotate on a perf recording of the same binary: same hottest line and instruction.
if ! command -v perf >/dev/null 2>&1; then
	skip "perf not found: no comparison with perf annotate"
elif ! with_timeout 120 perf record -q -e cpu-clock -F 999 -o perf.data -- "$WL" -t 2 >/dev/null 2>&1; then
	skip "perf record cannot record here: no comparison with perf annotate"
else
	perf annotate -i perf.data --stdio -s divide 2>/dev/null >perf.txt
	perf annotate -i perf.data --stdio -l -s divide 2>/dev/null >perf-l.txt
	set -- $(awk -F'[: \t]+' '/^ *[0-9.]+ : +[0-9a-f]+:/ { p = $2; if (p + 0 > best + 0) { best = p; a = $3 } }
		END { print a, best }' perf.txt)
	P_INSN=0x${1:-none} P_IPCT=${2:-0}
	set -- $(awk '/^ *[0-9.]+ [^ ]+:[0-9]+$/ { n = split($2, f, ":"); print f[n], $1; exit }' perf-l.txt)
	P_LINE=${1:-0} P_LPCT=${2:-0}
	info "perf annotate: hottest line $P_LINE ($P_LPCT%), instruction $P_INSN ($P_IPCT%)"
	info "stackpulse:    hottest line $SP_LINE ($SP_LPCT%), instruction $SP_INSN ($SP_IPCT%)"
	close() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 5) }'; }
	[ "$P_LINE" = "$SP_LINE" ] && close "$P_LPCT" "$SP_LPCT" &&
		ok "beside perf annotate: same hottest line $P_LINE, $SP_LPCT% vs $P_LPCT% (within 5 points)" ||
		fail "beside perf annotate: line $SP_LINE $SP_LPCT% vs perf's $P_LINE $P_LPCT%"
	# Two recordings, each of a few hundred samples in divide, whose skid onto the
	# instruction after the division varies with the load: 75.0% vs 80.09% was seen
	# on a loaded machine, so the instruction's share is held to 8 points.
	near() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 8) }'; }
	[ "$P_INSN" = "$SP_INSN" ] && near "$P_IPCT" "$SP_IPCT" &&
		ok "beside perf annotate: same hottest instruction $P_INSN, $SP_IPCT% vs $P_IPCT% (within 8 points)" ||
		fail "beside perf annotate: instruction $SP_INSN $SP_IPCT% vs perf's $P_INSN $P_IPCT%"
fi
finish
