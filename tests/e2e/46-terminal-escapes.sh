# SPDX-License-Identifier: MIT
# Names a target chooses never reach a terminal raw: a thread name, a perf-map
# symbol, a module path and the recorded command holding escape sequences, a
# newline and a BEL are shown as \xHH in every text view, the text exports and the
# warnings on stderr (issue 12: a hostile user's names on root's terminal).
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
C1=$(printf '\302\233') # U+009B, CSI in one byte for 8-bit terminals
# raw_bytes FILE: how many lines hold ESC, BEL or a C1 CSI.
raw_bytes() {
	grep -c "$ESC\|$BEL\|$C1" "$1"
}

# check_file WHAT FILE WANT: FILE holds no raw control bytes and shows WANT (escaped).
check_file() {
	n=$(raw_bytes "$2")
	if [ "$n" != 0 ]; then
		fail "$1: $n lines with raw ESC/BEL/CSI bytes: $(grep "$ESC\|$BEL\|$C1" "$2" | head -n 1 | od -c | head -n 2 | tr -s ' ' | tr '\n' ' ')"
	elif ! grep -qF -- "$3" "$2"; then
		fail "$1: '$3' not shown: $(head -c 300 "$2" | tr '\n' '|') $(head -c 300 "${2%.*}.err" 2>/dev/null)"
	else
		ok "$1: shown as '$3', no raw control bytes"
	fi
}

# --- a thread name --------------------------------------------------------------------
cat >rename.py <<'EOF'
import time
with open('/proc/self/comm', 'w') as f:
    f.write('\x1b[31mEV\nIL\x07')
t = time.process_time()
while time.process_time() - t < 0.5:
    pass
EOF
sp_record thread.spool -F 999 -- python3 rename.py || { fail "record of a renamed thread exited $?"; finish; }
NAME='\x1b[31mEV\x0aIL\x07'
for g in thread process; do
	with_timeout 60 "$SP" report --group-by=$g thread.spool >g-$g.txt 2>g-$g.err
	check_file "report --group-by=$g heading" g-$g.txt "($NAME)"
done
with_timeout 60 "$SP" report --format=perf-script thread.spool >thread.script 2>/dev/null
check_file "perf-script thread column" thread.script 'EV'

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
check_file "report of a deleted module: the address frames" gone.txt "$MNAME+0x"
with_timeout 60 "$SP" report --format=folded mod.spool >gone.folded 2>/dev/null
check_file "folded of a deleted module" gone.folded "$MNAME+0x"
finish
