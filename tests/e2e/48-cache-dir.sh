# SPDX-License-Identifier: MIT
# The cache directory is used only when no one else could change it: every level
# reached without a symlink, owned by root or this user (writable by others only when
# sticky, as /tmp), the cache itself this user's and writable by no one else; levels
# made now are 0700.  Otherwise report warns, names the directory and why, writes
# nothing there, and prints what it prints without a cache (root renaming
# files through another user's symlinks).
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload inline_chain
[ "$(id -u)" = 0 ] || skip_all "the cache of root against another user's directories needs root"
id nobody >/dev/null 2>&1 || skip_all "no user 'nobody' to own the hostile directories"

cp "$WL" ./inl || { fail "cannot copy the workload"; finish; }
sp_record i.spool -F 999 -- ./inl -t 1 >/dev/null || {
	fail "record of inline_chain exited $?: $(head -c 300 record.err)"
	finish
}
STACKPULSE_CACHE_DIR= "$SP" report i.spool >plain.txt 2>/dev/null

# refused NAME DIR WHY WATCH [CACHE]: a report with CACHE (default DIR) as the cache
# warns that DIR is not used and WHY, writes nothing under WATCH and prints the
# report it prints without a cache.
refused() {
	before=$(find "$4" | sort | tr '\n' ' ')
	STACKPULSE_CACHE_DIR=${5:-$2} "$SP" report i.spool >"$1.txt" 2>"$1.err"
	rc=$?
	after=$(find "$4" | sort | tr '\n' ' ')
	if [ $rc -ne 0 ]; then
		fail "$1: report exited $rc: $(head -c 300 "$1.err")"
	elif ! grep -q "cache directory '$2' not used: $3" "$1.err"; then
		fail "$1: no warning '$3': $(head -c 300 "$1.err")"
	elif [ "$before" != "$after" ]; then
		fail "$1: the report wrote under '$4': $after"
	elif ! cmp -s plain.txt "$1.txt"; then
		fail "$1: the report differs from one without a cache"
	else
		ok "$1: refused ($3), nothing written, the same report"
	fi
}

mkdir -p other && chown nobody other
refused "a cache owned by another user" "$PWD/other" "owned by another user" other

mkdir -p open && chmod 0777 open
refused "a cache writable by others" "$PWD/open" "writable by group or others" open

mkdir -p real && ln -s real link
refused "a cache that is a symlink" "$PWD/link" "a symbolic link" real
refused "a cache reached through a symlink" "$PWD/link/cache" "a symbolic link" real

mkdir -p theirs && chown nobody theirs && mkdir theirs/cache
refused "a cache inside another user's directory" "$PWD/theirs/cache" \
	"inside a directory owned by another user" theirs

mkdir -p shared && chmod 0777 shared
refused "a cache inside a directory others may write (not sticky)" "$PWD/shared/cache" \
	"inside a directory writable by group or others" shared

# symbols/ planted by another user, or left writable by all, inside a cache of ours.
mkdir -p mine/symbols && chown nobody mine/symbols
refused "another user's symbols dir in our cache" "$PWD/mine/symbols" "owned by another user" mine "$PWD/mine"
mkdir -p loose/debug && chmod 0777 loose/debug
refused "a debug dir others may write in our cache" "$PWD/loose/debug" "writable by group or others" loose "$PWD/loose"

# A sticky world-writable parent (as /tmp) is fine: the levels made now are 0700 and ours.
mkdir -p sticky && chmod 1777 sticky
STACKPULSE_CACHE_DIR=$PWD/sticky/a/b "$SP" report i.spool >new.txt 2>new.err
modes=$(stat -c '%a %U' sticky/a sticky/a/b sticky/a/b/symbols 2>/dev/null | tr '\n' ' ')
[ "$modes" = "700 root 700 root 700 root " ] && [ -n "$(find sticky/a/b/symbols -name '*.sym')" ] &&
	ok "a new cache under a sticky directory: levels made 0700, the symbol cache written" ||
	fail "a new cache under a sticky directory: '$modes', $(find sticky | tr '\n' ' ') $(head -c 200 new.err)"
cmp -s plain.txt new.txt && ok "the report with the new cache is the same" ||
	fail "the report with the new cache differs"
# A relative path is no cache, and says so (it was silent).
mkdir -p relcache
STACKPULSE_CACHE_DIR=relcache "$SP" report i.spool >rel.txt 2>rel.err
grep -q "STACKPULSE_CACHE_DIR 'relcache' is not an absolute path: no cache is used" rel.err &&
	[ -z "$(ls -A relcache)" ] && ok "a relative STACKPULSE_CACHE_DIR: warned, nothing cached" ||
	fail "a relative STACKPULSE_CACHE_DIR: $(head -c 200 rel.err); $(ls -A relcache | head -n 3)"
finish
