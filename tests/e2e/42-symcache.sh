# SPDX-License-Identifier: MIT
# The symbol cache (CACHE/symbols/BUILDID.sym): the first report keeps what it found
# in files with full DWARF, later reports read it instead of the DWARF, and every
# report prints the same bytes as one without the cache.  A file that is no longer
# the recorded one is still refused, cache or not; a file without DWARF is not cached.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload inline_chain
need_cmd readelf "reading build-ids"
need_cmd objcopy "making a copy without DWARF"

cp "$WL" ./inl || { fail "cannot copy the workload"; finish; }
sp_record i.spool -F 999 -- ./inl -t 1 >/dev/null || {
	fail "record of inline_chain exited $?: $(head -c 300 record.err)"
	finish
}
bid=$(readelf -n ./inl 2>/dev/null | awk '/Build ID/ { print $3 }')
[ -n "$bid" ] || skip_all "the workload has no build-id"
# symfile BUILDID: the cache file of that build-id (one file here), or a path that is not there.
symfile() {
	for f in "$PWD"/cache/symbols/"$1"-*.sym; do
		echo "$f"
		return
	done
}
sym=$(symfile "$bid")

# Each view and export, with and without the cache (an empty STACKPULSE_CACHE_DIR).
views() { # PREFIX
	"$SP" report i.spool >"$1.txt" 2>"$1.err" || fail "$1: report failed: $(head -c 300 "$1.err")"
	"$SP" report --lines --format=folded i.spool >"$1.folded" 2>/dev/null
	"$SP" report --lines --tree i.spool >"$1.tree" 2>/dev/null
	"$SP" report --format=json i.spool >"$1.json" 2>/dev/null
}
STACKPULSE_CACHE_DIR= views plain
[ -e "$sym" ] && fail "an empty STACKPULSE_CACHE_DIR still wrote '$sym'" ||
	ok "an empty STACKPULSE_CACHE_DIR keeps no symbol cache"
grep -q 'mix_inner.*\[inline\]' plain.txt && ok "the workload's inline chain is named" ||
	fail "no inline frame in the report: $(head -c 300 plain.txt)"

views first
sym=$(symfile "$bid")
if [ -f "$sym" ]; then
	ok "the first report wrote the workload's symbol cache ($(wc -c <"$sym") bytes)"
else
	fail "no symbol cache at '$sym' after the first report"
	finish
fi
perm=$(stat -c %a "$sym")
[ "$perm" = 600 ] && ok "the symbol cache is private to its owner (mode $perm)" ||
	fail "the symbol cache has mode $perm"
before=$(stat -c %Y.%i "$sym")
views second
for v in txt folded tree json; do
	cmp -s "plain.$v" "first.$v" || fail "$v: the report that wrote the cache differs: $(diff "plain.$v" "first.$v" | head -4)"
	cmp -s "plain.$v" "second.$v" && ok "$v: the report read from the cache equals the one without it" ||
		fail "$v: the report read from the cache differs: $(diff "plain.$v" "second.$v" | head -4)"
done
[ "$(stat -c %Y.%i "$sym")" = "$before" ] && ok "a report that found nothing new leaves the cache file alone" ||
	fail "the cache file was rewritten by a report that found nothing new"

# Read from the cache, a report reads no DWARF: libc's debug file (libc6-dbg) is
# looked for again (its names stand only while it is there) but its decompressed
# copy, which libdw would read, is opened only without the symbol cache.
if command -v strace >/dev/null 2>&1; then
	traced strace -f -e trace=openat -o trace.txt "$SP" report i.spool >/dev/null 2>&1
	rm -rf cache/symbols.off && mv cache/symbols cache/symbols.off
	traced strace -f -e trace=openat -o trace0.txt "$SP" report i.spool >/dev/null 2>&1
	rm -rf cache/symbols && mv cache/symbols.off cache/symbols
	grep -q "symbols/$bid-[0-9a-f]*.sym" trace.txt && ok "the report read the symbol cache" ||
		fail "the report did not open '$sym'"
	if grep -v ENOENT trace0.txt | grep -q 'cache/debug/.*\.debug"'; then
		grep -v ENOENT trace.txt | grep -q 'cache/debug/.*\.debug"' &&
			fail "DWARF was read with the symbol cache: $(grep 'cache/debug/' trace.txt | head -2)" ||
			ok "with the symbol cache libc's DWARF (its decompressed copy) is not opened"
	else
		skip "libc's DWARF is not read even without the symbol cache (libc6-dbg not installed)"
	fi
else
	skip "strace not found: which files a report opens is not checked"
fi

# The recorded file replaced by another at the same path: refused, whatever is cached.
cp "$WORKLOADS/chain4" ./inl
"$SP" report i.spool >replaced.txt 2>&1
grep -q '^Unproven: *1 module file differs' replaced.txt && ok "a replaced file is still refused with a cache for its old build-id" ||
	fail "a replaced file was not reported unproven: $(grep -E 'Unproven|mix_inner' replaced.txt | head -3)"
grep -q 'mix_inner' replaced.txt && fail "names came from the cache for a file that is not the recorded one" ||
	ok "no cached name shown for the replaced file"

# The workload stripped, its DWARF in a debug file beside it (debug link): cached
# while the debug file is there; once it is gone, the report is the one without it.
cp "$WL" ./inl
objcopy --only-keep-debug ./inl ./inl.debug && objcopy --strip-debug --add-gnu-debuglink=inl.debug ./inl ./inl.s &&
	mv ./inl.s ./inl || { fail "cannot split the workload's DWARF"; finish; }
sp_record s.spool -F 999 -- ./inl -t 1 >/dev/null || fail "record of the stripped workload failed"
sbid=$(readelf -n ./inl 2>/dev/null | awk '/Build ID/ { print $3 }')
"$SP" report s.spool >split1.txt 2>&1
[ -f "$(symfile "$sbid")" ] && ok "names from a separate debug file are cached" ||
	fail "no symbol cache for the stripped workload with its debug file"
grep -q 'mix_inner.*\[inline\]' split1.txt || fail "the debug file's inline frames are missing"
mv ./inl.debug ./inl.debug.away
"$SP" report s.spool >split2.txt 2>&1
STACKPULSE_CACHE_DIR= "$SP" report s.spool >split3.txt 2>&1
grep -q 'mix_inner' split2.txt && fail "the cache named inline frames after the debug file was removed" ||
	ok "debug file removed: the cache is not used"
cmp -s split2.txt split3.txt && ok "debug file removed: the report equals the one without the cache" ||
	fail "debug file removed: the report differs from the one without the cache: $(diff split2.txt split3.txt | head -4)"

# A copy without DWARF (same build-id, no debug file): its names are not kept.
rm -rf cache
objcopy --strip-debug "$WL" ./inl
sym=$(symfile "$bid")
"$SP" report i.spool >nodwarf.txt 2>&1 || fail "report of the copy without DWARF failed"
grep -q 'hot_caller' nodwarf.txt && ok "the copy without DWARF is named from its symbol table" ||
	fail "the copy without DWARF is not named: $(head -c 300 nodwarf.txt)"
[ -e "$sym" ] && fail "names from a file without DWARF were cached in '$sym'" ||
	ok "a file without DWARF is not cached (a debug file found later could say more)"

# Any ELF can claim any build-id: a copy with the same build-id and a renamed
# function, reported first, must not name the genuine file's frames later.
rm -rf cache
cp "$WL" ./inl
objcopy --redefine-sym hot_caller=forged_caller "$WL" ./forged || { fail "cannot make the forged copy"; finish; }
fbid=$(readelf -n ./forged 2>/dev/null | awk '/Build ID/ { print $3 }')
[ "$fbid" = "$bid" ] || { fail "the forged copy has another build-id ($fbid)"; finish; }
sp_record f.spool -F 999 -- ./forged -t 1 >/dev/null || fail "record of the forged copy failed"
"$SP" report f.spool >forged.txt 2>&1
grep -q forged_caller forged.txt && ok "the forged copy's report shows its own names (and fills the cache)" ||
	fail "the forged copy's report: $(head -c 200 forged.txt)"
"$SP" report i.spool >genuine.txt 2>&1
if grep -q forged_caller genuine.txt; then
	fail "the genuine file's report shows the forged copy's names (cache poisoned)"
else
	grep -q hot_caller genuine.txt && ok "the genuine file's report keeps its own names after the forged copy's" ||
		fail "the genuine file's report lacks hot_caller: $(head -c 200 genuine.txt)"
fi
finish
