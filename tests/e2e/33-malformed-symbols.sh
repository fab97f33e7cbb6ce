# SPDX-License-Identifier: MIT
# Malformed symbol sources: report never crashes or hangs, keeps every sample, and
# frames it cannot name fall back to module+0xOFFSET (and are counted), never to a
# wrong name.
#  - perf maps (report --perf-map-dir): binary junk, a huge line, overlapping and
#    wrapping ranges, no newline at the end, empty names, NUL bytes;
#  - module files: a copy of chain4 is recorded, then truncated at many lengths and
#    given corrupted ELF headers and section headers.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_cmd perl "writing the damaged files"
need_workload jit_perfmap
JIT=$WL
need_workload chain4
CHAIN4=$WL

# check_report NAME FOLDED-OUT ERR EXPECTED-TOTAL: after a report run with status rc.
BAD=0
check_report() {
	if [ "$rc" -ne 0 ]; then
		echo "$1: exit $rc: $(head -c 200 "$3")" >>bad.txt
	elif [ "$(folded_total "$2")" != "$4" ]; then
		echo "$1: $(folded_total "$2") samples, expected $4" >>bad.txt
	else
		return 0
	fi
	BAD=$((BAD + 1))
	return 1
}

# --- perf maps ------------------------------------------------------------------------
jit_record jit.spool jit.out
mapname=$(basename "$MAP")
with_timeout 60 "$SP" report --format=folded --perf-map-dir /nonexistent jit.spool >nomap.folded 2>/dev/null
JTOTAL=$(folded_total nomap.folded)
first=$(head -n 1 "$MAP")
start=${first%% *}
mkdir variants maps
# Each variant: variants/NAME.map (perl writes the binary ones).
perl -e '
	my ($dir, $map, $start) = @ARGV;
	open(my $in, "<", $map) or die; local $/; my $good = <$in>; close $in;
	my $s = hex($start);
	sub put { open(my $o, ">:raw", "$dir/$_[0].map") or die; print $o $_[1]; close $o }
	srand(42);
	put("junk", join("", map { chr(int(rand(256))) } 1 .. 65536));
	put("junk-lines", join("", map { join("", map { chr(int(rand(256))) } 1 .. 40) . "\n" } 1 .. 2000));
	put("huge-line", sprintf("%x 100 ", $s) . ("x" x (4 << 20)) . "\n" . $good);
	put("huge-line-no-newline", $good . sprintf("%x 100 ", $s) . ("y" x (4 << 20)));
	put("overlapping", $good . sprintf("%x 1000 overlap_a\n%x 10 overlap_b\n%x 800 overlap_c\n", $s - 0x100, $s + 8, $s + 4));
	put("wrapping", sprintf("ffffffffffffff00 1000 wraps\n%x ffffffffffffffff huge_size\n0 0 zero_size\n", $s) . $good);
	put("no-final-newline", $good . sprintf("%x 10 cut_short_na", $s + 0x100000));
	put("empty-names", sprintf("%x 100 \n%x 100\n%x 100    \n", $s, $s, $s));
	put("nul-bytes", sprintf("%x 100 with\0nul\n", $s) . "\0\0\0\n" . $good);
	put("bad-numbers", sprintf("zz%x 100 bad_start\n%x -5 negative\n%x 0x 2empty_hex\n %x  100  spaced_name \n", $s, $s, $s, $s));
	put("empty", "");
	put("only-newlines", "\n" x 100000);
' variants "$MAP" "$start" || { fail "perl could not write the perf map variants"; finish; }
for v in variants/*.map; do
	name=$(basename "$v" .map)
	cp "$v" "maps/$mapname"
	chmod 644 "maps/$mapname"
	with_timeout 60 "$SP" report --format=folded --perf-map-dir maps jit.spool >"pm-$name.folded" 2>"pm-$name.err"
	rc=$?
	check_report "perf map $name" "pm-$name.folded" "pm-$name.err" "$JTOTAL" &&
		info "perf map $name: ok; leaf $(folded_self "pm-$name.folded" | head -n 1 | cut -d' ' -f3 | cut -c1-40); $(head -n 1 "pm-$name.err" | cut -c1-100)"
done
[ $BAD -eq 0 ] && ok "report reads every malformed perf map: exit 0, all $JTOTAL samples" ||
	{ fail "$BAD malformed perf maps broke report"; sed 's/^/# /' bad.txt; }
grep -q 'malformed perf map line' pm-junk-lines.err && ok "malformed perf map lines are counted and said" ||
	fail "no warning about malformed perf map lines: $(head -c 200 pm-junk-lines.err)"
# A last line without its newline may be cut mid-write (even inside a number):
# it is skipped and counted; the lines before it still count.
grep -q jit_hot_loop pm-no-final-newline.folded && grep -q '1 malformed perf map line' pm-no-final-newline.err &&
	ok "a last line without its newline is skipped and counted; the others still name jit_hot_loop" ||
	fail "no final newline: $(folded_self pm-no-final-newline.folded | head -n 1), $(head -c 200 pm-no-final-newline.err)"
# Where ranges overlap, the later line wins (a JIT reusing memory appends).
grep -q overlap_c pm-overlapping.folded && ! grep -q 'overlap_[ab]' pm-overlapping.folded &&
	ok "overlapping ranges: the later line wins (overlap_c)" ||
	fail "overlapping ranges: leaf $(folded_self pm-overlapping.folded | head -n 1)"
grep -q 'wraps\|huge_size' pm-wrapping.folded && fail "a wrapping range named a frame" ||
	ok "ranges that wrap past the top of the address space name nothing"
grep -q 'with' pm-nul-bytes.folded && fail "a line with a NUL byte named a frame" ||
	ok "a line with a NUL byte names nothing"

# damage_elf SRC DIR PER-SECTION: write damaged copies of the ELF file SRC into DIR:
# truncations, corrupted ELF header fields, junk section headers and, with
# PER-SECTION 1, each section header's offset, size, link or entry size broken.
damage_elf() {
	mkdir -p "$2"
	perl -e '
	my ($src, $dir, $per_section) = @ARGV;
	open(my $in, "<:raw", $src) or die; local $/; my $d = <$in>; close $in;
	my $n = length $d;
	sub put { open(my $o, ">:raw", "$dir/$_[0]") or die; print $o $_[1]; close $o }
	sub patch { my ($name, $off, $fmt, $v) = @_; my $c = $d; my $b = pack($fmt, $v);
		substr($c, $off, length $b) = $b; put($name, $c) }
	my %len = map { $_ => 1 } (0, 1, 4, 16, 52, 63, 64, 100, 500, 1000, 2000, 4096, 8192, $n - 1,
		map { int($n * $_ / 16) } 1 .. 15);
	put("trunc-$_", substr($d, 0, $_)) for grep { $_ < $n } sort { $a <=> $b } keys %len;
	patch("class-32", 4, "C", 1);
	patch("big-endian", 5, "C", 2);
	patch("phoff-huge", 0x20, "Q<", 0xfffffffffff0);
	patch("shoff-huge", 0x28, "Q<", 0xfffffffffff0);
	patch("shoff-near-end", 0x28, "Q<", $n - 10);
	patch("phnum-max", 0x38, "v", 0xffff);
	patch("shentsize-1", 0x3a, "v", 1);
	patch("shnum-max", 0x3c, "v", 0xffff);
	patch("shnum-0", 0x3c, "v", 0);
	patch("shstrndx-bad", 0x3e, "v", 0xfffe);
	my ($shoff) = unpack("Q<", substr($d, 0x28, 8));
	my ($shnum) = unpack("v", substr($d, 0x3c, 2));
	{ my $c = $d; substr($c, $shoff, $shnum * 64) = "\xff" x ($shnum * 64); put("shdrs-ff", $c) }
	{ srand(7); my $c = $d; substr($c, $shoff, $shnum * 64) = join("", map { chr(int(rand(256))) } 1 .. $shnum * 64); put("shdrs-random", $c) }
	for my $i (1 .. ($per_section ? $shnum - 1 : 0)) {
		my $h = $shoff + $i * 64;
		patch("sec$i-offset-huge", $h + 0x18, "Q<", 0xfffffffff000);
		patch("sec$i-size-huge", $h + 0x20, "Q<", 0xfffffffff000);
		patch("sec$i-link-bad", $h + 0x28, "V", 0xffff) if $i % 3 == 0;
		patch("sec$i-entsize-0", $h + 0x38, "Q<", 0) if $i % 3 == 1;
	}
' "$@"
}

# --- module files ---------------------------------------------------------------------
BAD=0
: >bad.txt
cp "$CHAIN4" ./c4
sp_record c4.spool -F 999 -- ./c4 -t 1 >/dev/null || { fail "record of a chain4 copy exited $?"; finish; }
with_timeout 60 "$SP" report --format=folded c4.spool >good.folded 2>/dev/null
CTOTAL=$(folded_total good.folded)
tr ';' '\n' <good.folded | sed 's/ [0-9]*$//' | sort -u >good.names
grep -q 'main;level1;level2;level3;level4' good.folded && ok "the intact copy is symbolized (main;level1..level4)" ||
	fail "the intact copy is not symbolized: $(head -n 1 good.folded)"
damage_elf c4 elf 1 || { fail "perl could not write the damaged ELF files"; finish; }
# try_damaged WHAT DIR FILE SPOOL MODULE TOTAL: copy each damaged variant in DIR over
# FILE, report SPOOL, and sort the outcome: still named, MODULE+0xOFFSET fallback,
# or wrong names (anything not in good.names); then check it.
try_damaged() {
	nvar=$(ls "$2" | wc -l)
	named=0
	fallback=0
	wrong=0
	BAD=0
	: >bad.txt
	cp "$3" "$3.orig"
	for v in "$2"/*; do
		name=$(basename "$v")
		cp "$v" "$3"
		with_timeout 60 "$SP" report --format=folded "$4" >e.folded 2>e.err
		rc=$?
		check_report "$1 $name" e.folded e.err "$6" || continue
		odd=$(tr ';' '\n' <e.folded | sed 's/ [0-9]*$//' | sort -u | grep -Ev "^$5\\+0x[0-9a-f]+\$" |
			grep -vxF -f good.names | head -n 3 | tr '\n' ' ')
		if [ -n "$odd" ]; then
			wrong=$((wrong + 1))
			echo "$1 $name: unexpected frame names: $odd" >>bad.txt
		elif grep -q "$5+0x" e.folded; then
			fallback=$((fallback + 1))
		else
			named=$((named + 1))
		fi
	done
	cp "$3.orig" "$3"
	info "$nvar damaged ${1}s ($(wc -c <"$3") bytes): $named still fully named, $fallback with $5+0xOFFSET frames, $wrong with unexpected names, $BAD broken runs"
	[ $BAD -eq 0 ] && ok "report survives every damaged $1: exit 0, all $6 samples" ||
		{ fail "$BAD damaged ${1}s broke report"; head -n 10 bad.txt | sed 's/^/# /'; }
	[ $wrong -eq 0 ] && ok "no damaged $1 gives a frame a wrong name" ||
		{ fail "$wrong damaged ${1}s gave unexpected names"; grep unexpected bad.txt | head -n 5 | sed 's/^/# /'; }
	[ $fallback -gt 0 ] && ok "damaged ${1}s fall back to $5+0xOFFSET ($fallback of $nvar)" ||
		fail "no damaged $1 fell back to $5+0xOFFSET: the damage tested nothing"
}
try_damaged "module file" elf c4 c4.spool c4 "$CTOTAL"
# A truncated copy is unreadable: the report's header counts it.
head -c 100 c4.orig >c4
with_timeout 60 "$SP" report c4.spool >t.txt 2>&1
grep -E '^(Unreadable|Unproven):' t.txt | head -n 1 | sed 's/^/# /'
grep -Eq '^(Unreadable|Unproven): +1 module file' t.txt && ok "the report header counts the unusable module file" ||
	fail "the report header does not count the unusable module file"
cp c4.orig c4

# --- separate debug files ---------------------------------------------------------------
# A stripped copy names its code only through its debug file (found by its debug link,
# beside it); the debug file is then damaged the same ways.
if ! command -v objcopy >/dev/null 2>&1 || ! command -v strip >/dev/null 2>&1; then
	skip "damaged debug files: objcopy and strip not found in PATH"
	finish
fi
cp "$CHAIN4" sp && objcopy --only-keep-debug sp sp.debug && strip -s sp &&
	objcopy --add-gnu-debuglink=sp.debug sp || { fail "cannot split chain4 into sp and sp.debug"; finish; }
sp_record sp.spool -F 999 -- ./sp -t 1 >/dev/null || { fail "record of the stripped copy exited $?"; finish; }
with_timeout 60 "$SP" report --format=folded sp.spool >good.folded 2>/dev/null
STOTAL=$(folded_total good.folded)
tr ';' '\n' <good.folded | sed 's/ [0-9]*$//' | sort -u >good.names
grep -q 'main;level1;level2;level3;level4' good.folded && ok "the stripped copy is named from its intact debug file" ||
	fail "the stripped copy is not named from its debug file: $(head -n 1 good.folded)"
damage_elf sp.debug dbg 0 || { fail "perl could not write the damaged debug files"; finish; }
try_damaged "debug file" dbg sp.debug sp.spool sp "$STOTAL"
finish
