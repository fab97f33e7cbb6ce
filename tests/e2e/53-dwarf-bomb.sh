# SPDX-License-Identifier: MIT
# Compressed-DWARF bombs.  A small library whose compressed
# .debug_pubnames inflates to 512 MiB from half a megabyte (tests/e2e/elf-bomb.py):
# recording a program that calls it cost the recorder 516 MiB and 3.1 s of CPU
# (986 of 1,113 samples lost), its report 539 MiB and 4.4 s; moved to a separate
# debug file, the report left a 537 MB copy in the cache.  A section claiming more
# than 256 MiB (SP_INFLATE_SECTION_MAX) is now skipped, never inflated, and the
# report says so; the recorder inflates nothing but a .debug_frame within the bound
# (this library's is compressed too, as gcc/clang -gz make it, and still unwinds).
# Last, the cache keeps within STACKPULSE_CACHE_SIZE, least recently used files first.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_cmd cc "building the library"
need_cmd python3 "writing the compressed section (tests/e2e/elf-bomb.py)"
need_cmd readelf "reading sections and build-ids"
need_cmd objcopy "splitting the library's debug file off"
need_cmd make "building scripts/rusage-run"
with_timeout 300 make -s -C "$REPO" scripts/rusage-run >build.out 2>&1 ||
	{ fail "make scripts/rusage-run failed: $(tail -n 5 build.out)"; finish; }
RU=$REPO/scripts/rusage-run
BOMB=$((512 << 20))
LIMIT_MIB=128

cat >bomb.c <<'EOF'
volatile unsigned long bomb_sink;
__attribute__((noinline)) void bomb_leaf(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		bomb_sink += i * 7;
}
__attribute__((noinline)) void bomb_middle(unsigned long n)
{
	bomb_leaf(n);
	bomb_sink++;
}
EOF
cat >main.c <<'EOF'
#include <stdlib.h>
#include <time.h>
void bomb_middle(unsigned long n);
__attribute__((noinline)) static void run(double secs)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		bomb_middle(100000);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
}
int main(int argc, char **argv)
{
	run(argc > 1 ? atof(argv[1]) : 1.0);
	return 0;
}
EOF
# The library's CFI only in .debug_frame (no .eh_frame for its functions), compressed
# with the rest of its DWARF: the recorder must inflate that one, and nothing else.
gz=-gz=zlib
cc -shared -fPIC -O1 -g $gz -fno-asynchronous-unwind-tables -Wl,--build-id -o plain.so bomb.c 2>cc.err ||
	{ gz=; cc -shared -fPIC -O1 -g -fno-asynchronous-unwind-tables -Wl,--build-id -o plain.so bomb.c 2>cc.err; } ||
	skip_all "cannot build a shared library with cc: $(head -c 200 cc.err)"
cp plain.so libbomb.so
cc -O1 -g -o bombmain main.c -L. -lbomb -Wl,-rpath,'$ORIGIN' 2>cc.err ||
	skip_all "cannot link a program with the library: $(head -c 200 cc.err)"
if [ -n "$gz" ] && readelf -SW plain.so | grep -Eq '\.debug_frame .* C '; then
	ok "the library's .debug_frame is compressed (cc $gz)"
else
	skip "the toolchain did not compress .debug_frame: the legitimate compressed case is not tried"
fi
with_timeout 120 python3 "$E2E_DIR/elf-bomb.py" plain.so libbomb.so .debug_pubnames $BOMB 2>bomb.err ||
	{ fail "elf-bomb.py failed: $(head -c 300 bomb.err)"; finish; }
bid=$(readelf -n libbomb.so 2>/dev/null | awk '/Build ID/ { print $3 }')
[ -n "$bid" ] || skip_all "the library has no build-id"
info "libbomb.so: $(wc -c <libbomb.so) bytes, .debug_pubnames claims $BOMB bytes: $(readelf -SW libbomb.so | grep pubnames | sed 's/^ *//')"

# ru_field FILE KEY: a value from rusage-run's line.
ru_field() {
	sed -n "s/.*$2=\([0-9.]*\).*/\1/p" "$1"
}
# bounded NAME RUFILE: the command measured kept far below the bomb, quickly.
bounded() {
	kib=$(ru_field "$2" maxrss_kib)
	cpu=$(awk -v u="$(ru_field "$2" user_s)" -v s="$(ru_field "$2" sys_s)" 'BEGIN { print u + s }')
	info "$1: $(cat "$2")"
	[ -n "$kib" ] && [ "$kib" -lt $((LIMIT_MIB * 1024)) ] &&
		ok "$1: peak memory $((kib / 1024)) MiB (bound $LIMIT_MIB; the bomb inflates to $((BOMB >> 20)))" ||
		fail "$1: peak memory ${kib:-?} KiB, the bomb was inflated"
	[ "$(num_ge 2 "$cpu")" = 1 ] && ok "$1: $cpu s of CPU (bound 2 s)" ||
		fail "$1: $cpu s of CPU"
}

# --- record: only a bounded .debug_frame is ever inflated ------------------------
with_timeout 120 "$RU" rec.ru "$SP" record -o b.spool -F 999 -- ./bombmain 2 >/dev/null 2>record.err
rc=$?
sed -n 1,4p record.err | sed 's/^/# /'
[ $rc = 0 ] || { fail "record exited $rc: $(head -c 300 record.err)"; finish; }
peak=$(record_peak_mib record.err)
cpu=$(sed -n 's/.*recorder CPU \([0-9.]*\) s.*/\1/p' record.err | head -n 1)
events=$(sed -n 's/.*(of \([0-9]*\) sample events).*/\1/p' record.err | head -n 1)
lost=$(sed -n 's/.*sample events), \([0-9][0-9]*\) lost.*/\1/p' record.err | head -n 1)
kib=$(ru_field rec.ru maxrss_kib)
[ -n "$kib" ] && [ "$kib" -lt $((LIMIT_MIB * 1024)) ] &&
	ok "record: peak memory $((kib / 1024)) MiB (summary: ${peak:-?} MiB; bound $LIMIT_MIB)" ||
	fail "record: peak memory ${kib:-?} KiB (summary ${peak:-?} MiB): the bomb was inflated"
[ -n "$cpu" ] && [ "$(num_ge 1.5 "$cpu")" = 1 ] && ok "record: recorder CPU $cpu s in a 2 s recording (bound 1.5 s)" ||
	fail "record: recorder CPU ${cpu:-?} s"
total=$((${events:-0} + ${lost:-0}))
[ -n "$lost" ] && [ "$total" -gt 0 ] && [ $((lost * 10)) -lt "$total" ] &&
	ok "record: $lost of $total samples lost (under 10%)" ||
	fail "record: ${lost:-?} of $total samples lost"
grep -q 'not inflated' record.err &&
	fail "record warned of a .debug_frame not inflated: $(grep 'not inflated' record.err)" ||
	ok "record: the library's .debug_frame is within the bound (no warning)"

# A .debug_frame that claims 512 MiB (its Elf64_Chdr's ch_size changed) is not read,
# and record says so after its summary.
mkdir -p claim && cp bombmain claim/ && cp plain.so claim/libbomb.so
if python3 "$E2E_DIR/elf-bomb.py" --claim claim/libbomb.so .debug_frame $BOMB 2>claim.err; then
	with_timeout 120 "$SP" record -o claim.spool -F 499 -- ./claim/bombmain 1 >/dev/null 2>claim.err
	grep -q "1 compressed .debug_frame section not inflated, first in '$TMP/claim/libbomb.so'.*256 MiB" claim.err &&
		ok "record warns of a .debug_frame claiming more than 256 MiB" ||
		fail "no warning from record for a .debug_frame claiming $BOMB bytes: $(tail -n 3 claim.err)"
else
	skip "no compressed .debug_frame to make claim more: $(head -c 200 claim.err)"
fi

# --- report with the library's own DWARF ----------------------------------------
with_timeout 120 "$RU" rep.ru "$SP" report --format=folded b.spool >own.folded 2>own.err ||
	fail "report exited $?: $(head -c 300 own.err)"
bounded "report (own DWARF)" rep.ru
grep -q "compressed section not inflated, first in '$TMP/libbomb.so'.*256 MiB" own.err &&
	ok "report warns of the section not inflated" || fail "no warning from report: $(head -c 400 own.err)"
set -- $(folded_share own.folded ';main;run;bomb_middle;bomb_leaf$')
[ "${2:-0}" -gt 0 ] && [ $(($1 * 100)) -ge $(($2 * 90)) ] &&
	ok "$1 of $2 samples unwound main > run > bomb_middle > bomb_leaf through the library's .debug_frame" ||
	fail "only ${1:-?} of ${2:-?} samples have main;run;bomb_middle;bomb_leaf: $(folded_top own.folded 3)"
"$SP" report --lines --format=folded b.spool 2>/dev/null | grep -q 'bomb_leaf:[0-9]' &&
	ok "the library's other DWARF (lines) is still read" || fail "no line for bomb_leaf with --lines"

# --- report with a separate debug file holding the bomb --------------------------
# The library stripped of its DWARF (the same build-id) and its debug file, the bomb
# added to it, in a build-id tree of STACKPULSE_DEBUG_DIRS.
mkdir -p dbg/.build-id/$(echo "$bid" | cut -c1-2)
dbgfile=$PWD/dbg/.build-id/$(echo "$bid" | cut -c1-2)/$(echo "$bid" | cut -c3-).debug
objcopy --only-keep-debug plain.so plain.debug && objcopy --strip-debug plain.so libbomb.so &&
	python3 "$E2E_DIR/elf-bomb.py" plain.debug "$dbgfile" .debug_pubnames $BOMB 2>bomb.err ||
	{ fail "cannot make the separate debug file: $(head -c 300 bomb.err)"; finish; }
STACKPULSE_DEBUG_DIRS=$PWD/dbg
export STACKPULSE_DEBUG_DIRS
rm -rf cache
with_timeout 120 "$RU" sep.ru "$SP" report --lines b.spool >sep.txt 2>sep.err ||
	fail "report exited $?: $(head -c 300 sep.err)"
bounded "report (separate debug file, cache)" sep.ru
grep -q "compressed section not inflated, first in '$dbgfile'" sep.err &&
	ok "report warns of the debug file's section not inflated" ||
	fail "no warning naming the debug file: $(head -c 400 sep.err)"
grep -q 'bomb_leaf (bomb\.c:[0-9]' sep.txt && ok "the debug file's lines are read" ||
	fail "no line for bomb_leaf from the debug file: $(grep bomb_leaf sep.txt | head -3)"
copy=cache/debug/$bid.debug
big=$(find cache -type f -size +65536k 2>/dev/null | tr '\n' ' ')
if [ ! -f "$copy" ]; then
	fail "no copy of the debug file at '$copy'"
elif [ "$(wc -c <"$copy")" -gt $((1 << 20)) ]; then
	fail "the copy is $(wc -c <"$copy") bytes: the bomb was inflated into the cache"
else
	ok "the cache's copy is $(wc -c <"$copy") bytes, the bomb left out ($(readelf -SW "$copy" | grep pubnames | awk '{ print $3 }'))"
fi
[ -z "$big" ] && ok "no file over 64 MiB in the cache ($(du -sk cache | cut -f1) KiB in all)" ||
	fail "large files in the cache: $big"
# A copy left by an older stackpulse, the bomb inflated into it (here: 3 MiB of
# zeros after the debug file's bytes, its build-id intact), is made again.
cp "$dbgfile" "$copy" && head -c 3145728 /dev/zero >>"$copy" && chmod 600 "$copy"
rm -rf cache/symbols
"$SP" report --lines b.spool >stale.txt 2>/dev/null
[ "$(wc -c <"$copy")" -lt $((1 << 20)) ] && ok "a copy larger than the bounds allow is replaced ($(wc -c <"$copy") bytes)" ||
	fail "the oversized copy was kept ($(wc -c <"$copy") bytes)"
cmp -s sep.txt stale.txt || fail "the report differs after replacing the copy: $(diff sep.txt stale.txt | head -5)"
STACKPULSE_CACHE_DIR= with_timeout 120 "$RU" nocache.ru "$SP" report --lines b.spool >nocache.txt 2>nocache.err ||
	fail "report without a cache exited $?: $(head -c 300 nocache.err)"
bounded "report (separate debug file, no cache)" nocache.ru
cmp -s sep.txt nocache.txt && ok "the report is the same without the cache" ||
	fail "the report differs without the cache: $(diff sep.txt nocache.txt | head -5)"

# --- the cache's size bound ------------------------------------------------------
# Eight 100 KiB files, one to eight days old; a symlink to a file outside (not the
# cache's); the library's symbol cache file made 30 days old, but read by the next
# report (which marks it used); the program's removed, so the report writes it anew
# and must make room: the bound is what the cache holds now plus 300 KiB.
bombsym=$(ls cache/symbols/"$bid"-*.sym 2>/dev/null | head -n 1)
mainbid=$(readelf -n bombmain 2>/dev/null | awk '/Build ID/ { print $3 }')
[ -n "$bombsym" ] && [ -n "$mainbid" ] || { fail "no symbol cache files to work with: $(ls cache/symbols)"; finish; }
rm -f cache/symbols/"$mainbid"-*.sym
touch -d '30 days ago' "$bombsym"
i=1
while [ $i -le 8 ]; do
	head -c 102400 /dev/zero >cache/symbols/old-$i.sym
	touch -d "$i days ago" cache/symbols/old-$i.sym
	i=$((i + 1))
done
head -c 1048576 /dev/zero >precious
touch -d '60 days ago' precious
ln -s "$PWD/precious" cache/symbols/zz-link.sym
# held [NAME-PATTERN]: bytes of the regular files in cache/debug and cache/symbols (but NAME-PATTERN's).
held() {
	find cache/debug cache/symbols -type f ! -name "${1:-/}" -printf '%s\n' | awk '{ t += $1 } END { print t + 0 }'
}
bound=$(($(held 'old-*') + 300 * 1024))
STACKPULSE_CACHE_SIZE=$bound with_timeout 120 "$SP" report b.spool >lru.txt 2>lru.err ||
	fail "report with STACKPULSE_CACHE_SIZE=$bound exited $?: $(head -c 300 lru.err)"
now=$(held)
gone=$(ls cache/symbols | grep -c '^old-' | awk '{ print 8 - $1 }')
info "bound $bound bytes: the cache holds $now; $gone of the eight old files removed: $(ls cache/symbols | tr '\n' ' ')"
[ "$now" -le "$bound" ] && ok "the cache holds $now bytes, within STACKPULSE_CACHE_SIZE=$bound" ||
	fail "the cache holds $now bytes, over the bound $bound"
if [ ! -e cache/symbols/old-8.sym ] && [ ! -e cache/symbols/old-3.sym ] && [ -e cache/symbols/old-2.sym ] &&
	[ -e cache/symbols/old-1.sym ]; then
	ok "the least recently used went first (old-8 .. old-3), the two newest stayed"
else
	fail "eviction order: $(ls cache/symbols | tr '\n' ' ')"
fi
[ -f "$bombsym" ] && ok "the symbol cache file read by the report was kept (marked used, though 30 days old)" ||
	fail "'$bombsym' was removed though the report had just used it"
ls cache/symbols/"$mainbid"-*.sym >/dev/null 2>&1 && ok "the new symbol cache file was written" ||
	fail "the program's symbol cache file was not written"
[ -L cache/symbols/zz-link.sym ] && [ "$(wc -c <precious)" = 1048576 ] &&
	ok "a symlink in the cache is neither followed nor removed" || fail "the symlink or its target was touched"
grep -q 'bomb_leaf' lru.txt && ok "the report within the bound names the library's functions" ||
	fail "no bomb_leaf in the report: $(head -c 300 lru.txt)"
STACKPULSE_CACHE_SIZE=12X "$SP" report b.spool 2>&1 >/dev/null | grep -q "STACKPULSE_CACHE_SIZE '12X' not understood" &&
	ok "a STACKPULSE_CACHE_SIZE that cannot be read is warned about" ||
	fail "no warning for STACKPULSE_CACHE_SIZE=12X"

# --- MiniDebugInfo (.gnu_debugdata, xz): libdwfl unpacks it whole for a stripped
# program; xz's sizes are checked only at the end.  A real one still names the
# program (chain4, stripped, its functions only in MiniDebugInfo); 512 MiB of zeros
# (80 KB of xz) is skipped after a bounded trial decode.
if ! command -v xz >/dev/null 2>&1 || ! command -v strip >/dev/null 2>&1 || ! command -v nm >/dev/null 2>&1; then
	skip "MiniDebugInfo: xz, strip and nm needed (xz-utils, binutils)"
elif [ ! -x "$WORKLOADS/chain4" ]; then
	skip "MiniDebugInfo: tests/workloads/chain4 not built (make workloads)"
else
	cp "$WORKLOADS/chain4" mdiprog
	nm mdiprog --format=posix --defined-only | awk '$2 == "T" || $2 == "t" { print $1 }' | sort >keep.syms
	objcopy --only-keep-debug mdiprog mdi.debug && objcopy -S --remove-section .comment \
		--keep-symbols=keep.syms mdi.debug mdi.mini && xz -f mdi.mini &&
		strip --strip-all -R .comment -o mdimain mdiprog &&
		objcopy --add-section .gnu_debugdata=mdi.mini.xz mdimain mdigood &&
		head -c $BOMB /dev/zero | xz -0 -T1 >mdi.bomb.xz &&
		objcopy --add-section .gnu_debugdata=mdi.bomb.xz mdimain mdibomb ||
		{ fail "cannot build the MiniDebugInfo programs"; finish; }
	chmod +x mdigood mdibomb
	nm mdigood >/dev/null 2>&1 && nm mdigood 2>/dev/null | grep -q level4 &&
		fail "the stripped program still has a symbol table: the check below proves nothing"
	for kind in good bomb; do
		STACKPULSE_CACHE_DIR= with_timeout 120 "$SP" record -o mdi$kind.spool -F 499 -- ./mdi$kind -t 1 \
			>/dev/null 2>mdi$kind.rec || fail "record of the $kind MiniDebugInfo program failed: $(head -c 200 mdi$kind.rec)"
		STACKPULSE_CACHE_DIR= with_timeout 120 "$RU" mdi$kind.ru "$SP" report --format=folded \
			mdi$kind.spool >mdi$kind.txt 2>mdi$kind.err
	done
	set -- $(folded_share mdigood.txt ';main;level1;level2;level3;level4$')
	share_at_least "a stripped program's MiniDebugInfo:" 90 "$1" "$2" "the stacks end in main;level1;..;level4" ||
		info "top stacks: $(folded_top mdigood.txt 2 | tr '\n' ' ')"
	bounded "report of a program whose MiniDebugInfo unpacks to 512 MiB" mdibomb.ru
	grep -q 'level4' mdibomb.txt && fail "the bomb's MiniDebugInfo was read (level4 named)" ||
		ok "the bomb's MiniDebugInfo was skipped (no names from it)"
	grep -q "compressed section.* not inflated" mdibomb.err && ok "report warns: $(grep -m1 "not inflated" mdibomb.err | cut -c1-150)" ||
		fail "no warning about the skipped MiniDebugInfo: $(head -c 300 mdibomb.err)"
fi
finish
