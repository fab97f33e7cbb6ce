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
MAPS=
trap 'for m in $MAPS; do rm -f "$m"; done; cleanup' EXIT
sp_record jit.spool -F 999 -- "$JIT" -t 1 >jit.out || { fail "record of jit_perfmap exited $?"; finish; }
MAP=$(sed -n 's/^jit_perfmap: perf map //p' jit.out)
MAPS="$MAPS $MAP"
[ -f "$MAP" ] || { fail "jit_perfmap left no perf map '$MAP'"; finish; }
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
cp c4 c4.orig
mkdir elf
perl -e '
	my ($src, $dir) = @ARGV;
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
	for my $i (1 .. $shnum - 1) {
		my $h = $shoff + $i * 64;
		patch("sec$i-offset-huge", $h + 0x18, "Q<", 0xfffffffff000);
		patch("sec$i-size-huge", $h + 0x20, "Q<", 0xfffffffff000);
		patch("sec$i-link-bad", $h + 0x28, "V", 0xffff) if $i % 3 == 0;
		patch("sec$i-entsize-0", $h + 0x38, "Q<", 0) if $i % 3 == 1;
	}
' c4 elf || { fail "perl could not write the damaged ELF files"; finish; }
nvar=$(ls elf | wc -l)
named=0
fallback=0
wrong=0
for v in elf/*; do
	name=$(basename "$v")
	cp "$v" c4
	with_timeout 60 "$SP" report --format=folded c4.spool >e.folded 2>e.err
	rc=$?
	check_report "ELF $name" e.folded e.err "$CTOTAL" || continue
	# Every frame has its intact-copy name or the c4+0xOFFSET form; anything else is wrong.
	odd=$(tr ';' '\n' <e.folded | sed 's/ [0-9]*$//' | sort -u | grep -Ev '^c4\+0x[0-9a-f]+$' |
		grep -vxF -f good.names | head -n 3 | tr '\n' ' ')
	if [ -n "$odd" ]; then
		wrong=$((wrong + 1))
		echo "ELF $name: unexpected frame names: $odd" >>bad.txt
	elif grep -q 'c4+0x' e.folded; then
		fallback=$((fallback + 1))
	else
		named=$((named + 1))
	fi
done
cp c4.orig c4
info "$nvar damaged copies of chain4 ($(wc -c <c4) bytes): $named still fully named, $fallback with module+offset frames, $wrong with unexpected names, $BAD broken runs"
[ $BAD -eq 0 ] && ok "report survives every damaged module file: exit 0, all $CTOTAL samples" ||
	{ fail "$BAD damaged module files broke report"; head -n 10 bad.txt | sed 's/^/# /'; }
[ $wrong -eq 0 ] && ok "no damaged module file gives a frame a wrong name" ||
	{ fail "$wrong damaged module files gave unexpected names"; grep unexpected bad.txt | head -n 5 | sed 's/^/# /'; }
[ $fallback -gt 0 ] && ok "damaged module files fall back to c4+0xOFFSET ($fallback of $nvar)" ||
	fail "no damaged module file fell back to module+offset: the damage tested nothing"
# A truncated copy is unreadable: the report's header counts it.
head -c 100 c4.orig >c4
with_timeout 60 "$SP" report c4.spool >t.txt 2>&1
grep -E '^(Unreadable|Unproven):' t.txt | head -n 1 | sed 's/^/# /'
grep -Eq '^(Unreadable|Unproven): +1 module file' t.txt && ok "the report header counts the unusable module file" ||
	fail "the report header does not count the unusable module file"
cp c4.orig c4
finish
