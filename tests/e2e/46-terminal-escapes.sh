# SPDX-License-Identifier: MIT
# Names a target chooses never reach a terminal raw: a thread name, a perf-map
# symbol, a module path and the recorded command holding escape sequences, a
# newline and a BEL, C1 controls, bidirectional and invisible characters and
# bytes that are not UTF-8 are shown as \xHH in every text view, the text
# exports, pprof's strings and the warnings on stderr, and JSON's way (\uXXXX)
# in the JSON outputs (a hostile user's names on root's terminal).  A
# backslash is shown as \x5c, so no name can spell an escape.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_cmd python3 "a target that renames its thread"
need_workload jit_perfmap
JIT=$WL
need_workload spin_ms
SPIN=$WL

ESC=$(printf '\033')
BEL=$(printf '\007')
C1=$(printf '\302\233')      # U+009B, CSI in one byte for 8-bit terminals
RLO=$(printf '\342\200\256') # U+202E, right-to-left override
RLM=$(printf '\342\200\217') # U+200F, right-to-left mark
ZWSP=$(printf '\342\200\213') # U+200B, zero-width space
BOM=$(printf '\357\273\277') # U+FEFF, zero-width no-break space
FF=$(printf '\377')          # never in UTF-8
# raw_lines FILE: the lines that hold one of those raw (byte-wise: \377 is no character).
raw_lines() {
	LC_ALL=C grep -a -e "$ESC" -e "$BEL" -e "$C1" -e "$RLO" -e "$RLM" -e "$ZWSP" -e "$BOM" \
		-e "$FF" "$1"
}

# check_file WHAT FILE WANT: FILE holds no raw control bytes and shows WANT (escaped).
check_file() {
	n=$(raw_lines "$2" | wc -l)
	if [ "$n" != 0 ]; then
		fail "$1: $n lines with raw control, bidirectional, invisible or non-UTF-8 bytes: $(raw_lines "$2" | head -n 1 | od -c | head -n 2 | tr -s ' ' | tr '\n' ' ')"
	elif ! LC_ALL=C grep -aqF -- "$3" "$2"; then
		fail "$1: '$3' not shown: $(head -c 300 "$2" | tr '\n' '|') $(head -c 300 "${2%.*}.err" 2>/dev/null)"
	else
		ok "$1: shown as '$3', no raw control bytes"
	fi
}

# check_run WHAT WANT FILE ARGS...: stackpulse ARGS into FILE (errors into FILE's .err),
# then check_file WHAT FILE WANT.
check_run() {
	what=$1 want=$2 file=$3
	shift 3
	with_timeout 60 "$SP" "$@" >"$file" 2>"${file%.*}.err"
	check_file "$what" "$file" "$want"
}

# pprof_run SPOOL STRINGS: SPOOL's pprof export (STRINGS with .pprof), its string table in STRINGS.
pprof_run() {
	with_timeout 60 "$SP" report --format=pprof -o "${2%.*}.pprof" "$1" 2>"${2%.*}.err"
	pprof_strings "${2%.*}.pprof" >"$2"
}

# pprof_strings PROFILE: the string table of a gzip'd profile.proto, one string a line.
pprof_strings() {
	python3 - "$1" <<'PY'
import gzip, sys
data = gzip.open(sys.argv[1]).read()
def varint(i):
    v = s = 0
    while True:
        b = data[i]; i += 1; v |= (b & 0x7f) << s; s += 7
        if b < 0x80:
            return v, i
i, out = 0, sys.stdout.buffer
while i < len(data):
    key, i = varint(i)
    kind = key & 7
    if kind == 0:
        _, i = varint(i)
    elif kind == 2:
        n, i = varint(i)
        if key >> 3 == 6:  # Profile.string_table
            out.write(data[i:i + n] + b"\n")
        i += n
    elif kind in (1, 5):
        i += 8 if kind == 1 else 4
    else:
        sys.exit("bad wire type %d" % kind)
PY
}

# json_check WHAT FILE: every line of FILE (JSON Lines) or FILE as a whole is valid JSON.
json_check() {
	if python3 -c '
import json, sys
t = open(sys.argv[1], encoding="utf-8").read()
try:
    json.loads(t)
except ValueError:
    [json.loads(l) for l in t.splitlines() if l.strip()]
' "$2" 2>json.err; then
		ok "$1: valid JSON"
	else
		fail "$1: not valid JSON: $(tail -n 1 json.err)"
	fi
}

# --- a thread name --------------------------------------------------------------------
# rename.py HEX: name the thread with the bytes HEX spells, then spin for 0.5 s of CPU.
cat >rename.py <<'EOF'
import sys, time
with open('/proc/self/comm', 'wb') as f:
    f.write(bytes.fromhex(sys.argv[1]))
t = time.process_time()
while time.process_time() - t < 0.5:
    pass
EOF
# ESC [31m EV newline IL BEL
sp_record thread.spool -F 999 -- python3 rename.py 1b5b33316d45560a494c07 ||
	{ fail "record of a renamed thread exited $?"; finish; }
NAME='\x1b[31mEV\x0aIL\x07'
for g in thread process; do
	with_timeout 60 "$SP" report --group-by=$g thread.spool >g-$g.txt 2>g-$g.err
	check_file "report --group-by=$g heading" g-$g.txt "($NAME)"
done
check_run "perf-script: the comm of each sample's header" "$NAME " thread.script \
	report --format=perf-script thread.spool
pprof_run thread.spool thread.strings
check_file "pprof: the thread label" thread.strings "$NAME"
# What the tester saw: go tool pprof prints the labels and strings as they are.
if command -v go >/dev/null 2>&1 && go tool pprof -h >/dev/null 2>&1; then
	for o in tags raw; do
		with_timeout 120 go tool pprof -$o thread.pprof >thread-$o.txt 2>thread-$o.err
		check_file "go tool pprof -$o" thread-$o.txt "$NAME"
	done
else
	skip "go tool pprof not found: its -tags and -raw output not checked"
fi

# --- C1, bidirectional, not UTF-8 and a backslash in a thread name ----------------------
# U+009B, U+202E, U+200F, a byte 0xff and the text \x41 (which must not read as "A").
sp_record wide.spool -F 999 -- python3 rename.py c29be280aee2808fff5c783431 ||
	{ fail "record of a renamed thread exited $?"; finish; }
WIDE='\xc2\x9b\xe2\x80\xae\xe2\x80\x8f\xff\x5cx41'
WIDE_JSON='\u009b\u202e\u200f\\xff\\x41'
check_run "report --group-by=thread heading: C1, bidi, 0xff, backslash" "($WIDE)" wide.txt \
	report --group-by=thread wide.spool
check_run "perf-script: the comm of each sample's header" "$WIDE " wide.script \
	report --format=perf-script wide.spool
pprof_run wide.spool wide.strings
check_file "pprof: the thread label" wide.strings "$WIDE"
check_run "speedscope: the profile's name" "\"name\":\"$WIDE_JSON (pid" wide.json \
	report --format=speedscope wide.spool
json_check "speedscope" wide.json
check_run "dump --json: the thread-name record" "\"$WIDE_JSON\"" wide.dump dump --json wide.spool
json_check "dump --json" wide.dump

# --- a perf-map symbol ------------------------------------------------------------------
jit_record jit.spool jit.out
mkdir maps
# The same range, renamed: a title-setting OSC, a screen clear, a C1 CSI, a BEL.
awk -v e="$ESC" -v b="$BEL" -v c="$C1" '{ printf "%s %s %s]0;owned%sjit%s[2Jhot%s1m\n", $1, $2, e, b, e, c }' \
	"$MAP" >"maps/$(basename "$MAP")"
JNAME='\x1b]0;owned\x07jit\x1b[2Jhot\xc2\x9b1m'
for v in table tree inverted lines; do
	case $v in
	table) opt= ;;
	lines) opt=--lines ;;
	*) opt=--$v ;;
	esac
	with_timeout 60 "$SP" report $opt --width=300 --perf-map-dir maps jit.spool >jit-$v.txt 2>jit-$v.err
	check_file "report ${opt:-(table)}: perf-map name" jit-$v.txt "$JNAME"
done
with_timeout 60 "$SP" report --format=folded --perf-map-dir maps jit.spool >jit.folded 2>jit.err
# Folded stacks keep ';' for the frames: the name's own became '_'.
check_file "folded: perf-map name" jit.folded 'jit\x1b[2Jhot\xc2\x9b1m'

with_timeout 60 "$SP" report --format=perf-script --perf-map-dir maps jit.spool >jit.script 2>/dev/null
check_file "perf-script: perf-map name" jit.script "$JNAME"

# Names that read as others: bidirectional marks (RLM, LRM, ALM), zero-width space and
# joiners, line and paragraph separators, BOM, word joiner, U+2064, 0xff, a backslash.
mkdir maps2
python3 - "$MAP" "maps2/$(basename "$MAP")" <<'EOF'
import sys
name = (b'jit' + '\u200f\u200e\u061c\u200b\u200c\u200d\u2028\u2029\ufeff\u2060\u2064'.encode()
        + b'\xff\\x41hot')
with open(sys.argv[1], 'rb') as f, open(sys.argv[2], 'wb') as out:
    for line in f:
        start, size = line.split()[:2]
        out.write(start + b' ' + size + b' ' + name + b'\n')
EOF
INVIS='jit\xe2\x80\x8f\xe2\x80\x8e\xd8\x9c\xe2\x80\x8b\xe2\x80\x8c\xe2\x80\x8d\xe2\x80\xa8\xe2\x80\xa9\xef\xbb\xbf\xe2\x81\xa0\xe2\x81\xa4\xff\x5cx41hot'
INVIS_JSON='jit\u200f\u200e\u061c\u200b\u200c\u200d\u2028\u2029\ufeff\u2060\u2064\\xff\\x41hot'
check_run "report --tree: bidirectional and invisible characters in a perf-map name" "$INVIS" \
	inv-tree.txt report --tree --width=1000 --perf-map-dir maps2 jit.spool
check_run "folded: bidirectional and invisible characters" "$INVIS" inv.folded \
	report --format=folded --perf-map-dir maps2 jit.spool
# Stored by symbolize, the escaped names come back as they were shown, not escaped twice.
with_timeout 120 "$SP" symbolize --perf-map-dir maps2 -o jsym.spool jit.spool >jsym.out 2>jsym.err ||
	fail "symbolize exited $?: $(head -c 300 jsym.err)"
check_run "report of the symbolized spool: the stored name as shown live" "$INVIS" jsym-tree.txt \
	report --tree --width=1000 --perf-map-dir /nonexistent jsym.spool
check_run "dump --json: the sym-perf-map name" "\"$INVIS_JSON\"" jsym.dump dump --json jsym.spool
json_check "dump --json of the symbolized spool" jsym.dump

# --- a module path and the command --------------------------------------------------------
mkdir bin
EVIL="bin/sp${ESC}[2Jin${BEL}"
cp "$SPIN" "$EVIL"
sp_record mod.spool -F 999 -- "./$EVIL" 200 || { fail "record of a program with an escape in its name exited $?"; finish; }
check_file "record's messages" record.err 'spool'
MNAME='sp\x1b[2Jin\x07'
with_timeout 60 "$SP" report mod.spool >mod.txt 2>mod.err
check_file "report: the module column and the command line" mod.txt "$MNAME"
grep '^Command:' mod.txt | grep -qF "$MNAME" && ok "the Command: line shows the escaped path" ||
	fail "the Command: line: $(grep '^Command:' mod.txt | od -c | head -n 2 | tr '\n' ' ')"
rm -f "$EVIL"
with_timeout 60 "$SP" report mod.spool >gone.txt 2>gone.err
# Messages on stderr go through one path: a spool named with escapes that is not there.
with_timeout 60 "$SP" report "bin/x${ESC}[2J${BEL}.spool" >nospool.txt 2>nospool.err
check_file "report's error naming a missing spool" nospool.err "bin/x\x1b[2J\x07.spool"
check_file "report of a deleted module: its unnamed frames" gone.txt "[unknown] in $MNAME"
with_timeout 60 "$SP" report --format=folded mod.spool >gone.folded 2>/dev/null
check_file "folded of a deleted module" gone.folded "$MNAME+0x"

# A C1 CSI, a right-to-left override, a byte 0xff and a backslash in the program's name.
EVIL2="bin/x${C1}y${RLO}${FF}\\x41z"
cp "$SPIN" "$EVIL2"
sp_record mod2.spool -F 999 -- "./$EVIL2" 200 || { fail "record of a program with a C1 control in its name exited $?"; finish; }
WPATH='bin/x\xc2\x9by\xe2\x80\xae\xff\x5cx41z'
WPATH_JSON='bin/x\u009by\u202e\\xff\\x41z'
# The recorded command quotes the word as a shell would.
WCMD="'./$WPATH' 200"
WCMD_JSON="\"'./$WPATH_JSON' 200\""
with_timeout 60 "$SP" report mod2.spool >mod2.txt 2>mod2.err
grep -a '^Command:' mod2.txt >mod2.cmd
check_file "report: the Command: line" mod2.cmd "$WCMD"
check_run "perf-script: the module column" "/$WPATH)" mod2.script report --format=perf-script mod2.spool
pprof_run mod2.spool mod2.strings
check_file "pprof: the comment (the command)" mod2.strings "$WCMD"
check_file "pprof: the mapping's file name" mod2.strings "/$WPATH"
check_run "flamegraph: the header's command" "Command: &apos;./$WPATH&apos; 200" mod2.svg \
	report --format=flamegraph mod2.spool
for f in json speedscope; do
	check_run "$f: the command" "$WCMD_JSON" mod2-$f.json report --format=$f mod2.spool
	json_check "$f" mod2-$f.json
done
check_run "dump --json: the meta record's command" "$WCMD_JSON" mod2.dump dump --json mod2.spool
# JSON round-trips: a reader gets the command's characters back, the byte 0xff as the text \xff.
if python3 -c '
import json, os, sys
want = os.fsencode(sys.argv[2]).replace(b"\xff", b"\\xff").decode()
got = json.load(open(sys.argv[1], encoding="utf-8"))["spool"]["command"]
sys.exit(got != want)
' mod2-json.json "'./$EVIL2' 200"; then
	ok "report --format=json: the command decodes to its own characters"
else
	fail "report --format=json: the command decodes to something else: $(grep -ao '"command":"[^"]*"' mod2-json.json)"
fi
finish
