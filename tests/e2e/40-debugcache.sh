# SPDX-License-Identifier: MIT
# Decompressed copies of debug files with compressed DWARF (Debian's libc6-dbg): the
# first report writes CACHE/debug/BUILDID.debug, later reports read it, and every
# report prints the same bytes as one without the cache.  A planted copy that is not
# the library's (another build-id) or that others may write is not used.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload chain4
need_cmd readelf "reading the libc build-id"

libc=$(ldd "$WL" 2>/dev/null | awk '/libc\.so/ { print $3 }')
[ -n "$libc" ] || skip_all "cannot find chain4's libc with ldd"
bid=$(readelf -n "$libc" 2>/dev/null | awk '/Build ID/ { print $3 }')
[ -n "$bid" ] || skip_all "'$libc' has no build-id"
dbg=/usr/lib/debug/.build-id/$(echo "$bid" | cut -c1-2)/$(echo "$bid" | cut -c3-).debug
[ -f "$dbg" ] || skip_all "no separate debug file for libc ('$dbg'): install libc6-dbg"
readelf -SW "$dbg" 2>/dev/null | grep -q '\.debug_info .* C ' ||
	skip_all "libc's debug file '$dbg' does not compress its DWARF: nothing to cache"

sp_record c.spool -F 999 -- "$WL" -t 1 >/dev/null || {
	fail "record of chain4 exited $?: $(head -c 300 record.err)"
	finish
}
copy=$PWD/cache/debug/$bid.debug
# The symbol cache (cache/symbols, 42-symcache) would answer before any DWARF is read:
# each report here starts without it, so that it reads the debug file or its copy.
nosym() { rm -rf cache/symbols; }

STACKPULSE_CACHE_DIR= "$SP" report c.spool >nocache.txt 2>nocache.err || fail "report without the cache failed"
[ -e "$copy" ] && fail "STACKPULSE_CACHE_DIR= still wrote '$copy'" ||
	ok "an empty STACKPULSE_CACHE_DIR keeps no copies"

nosym
"$SP" report c.spool >first.txt 2>first.err || fail "first report failed: $(head -c 300 first.err)"
if [ -f "$copy" ]; then
	ok "the first report made a decompressed copy of libc's debug file ($(wc -c <"$copy") bytes, from $(wc -c <"$dbg"))"
else
	fail "no copy at '$copy' after the first report"
	finish
fi
readelf -SW "$copy" 2>/dev/null | grep -Eq '^ *\[ *[0-9]+\] .* C ' && fail "the copy still has compressed sections" ||
	ok "the copy has no compressed sections"
perm=$(stat -c %a "$copy")
case $perm in
??0 | ?00) ok "the copy is private to its owner (mode $perm)" ;;
*) fail "the copy has mode $perm" ;;
esac
grep -q '__libc_start_call_main' first.txt && ok "libc frames are named" ||
	fail "no libc frame named in the report: $(head -c 300 first.txt)"
cmp -s nocache.txt first.txt && ok "the report that made the copy equals the one without the cache" ||
	fail "report differs with the cache: $(diff nocache.txt first.txt | head -5)"
nosym
"$SP" report c.spool >second.txt 2>&1
cmp -s nocache.txt second.txt && ok "the report read from the copy equals the one without the cache" ||
	fail "report read from the copy differs: $(diff nocache.txt second.txt | head -5)"
nosym
"$SP" report --lines --format=folded c.spool >lines.cached 2>/dev/null
STACKPULSE_CACHE_DIR= "$SP" report --lines --format=folded c.spool >lines.plain 2>/dev/null
cmp -s lines.cached lines.plain && ok "inline frames and source lines are the same from the copy" ||
	fail "--lines folded output differs with the cache"

# A copy another user could have written is not trusted.
chmod 666 "$copy"
before=$(stat -c %i "$copy")
nosym
"$SP" report c.spool >third.txt 2>&1
[ "$(stat -c %i "$copy")" != "$before" ] && ok "a world-writable copy is replaced, not read" ||
	fail "the world-writable copy was kept"
cmp -s nocache.txt third.txt || fail "report differs after replacing the copy"

# A planted file with another build-id is refused (and replaced by a good copy).
cp "$WL" "$copy"
nosym
"$SP" report c.spool >fourth.txt 2>&1
cmp -s nocache.txt fourth.txt && ok "a planted file with another build-id is not used" ||
	fail "report differs with a planted copy: $(diff nocache.txt fourth.txt | head -5)"
readelf -n "$copy" 2>/dev/null | grep -q "$bid" && ok "the planted file was replaced by libc's copy" ||
	fail "the planted file is still there"
finish
