# SPDX-License-Identifier: MIT
# Stacks deeper than the copied window: 60 frames of 1.5 KiB recorded with
# --stack-size 16384.  Built with frame pointers, the kernel's frame-pointer chain is
# spliced where it meets the DWARF chain, so stacks reach main with every one of the
# 60 frames (perf --call-graph dwarf on the same binary is shown beside it).  Built
# without, the stacks end in a truncation marker: counted, and first in folded output
# so they never merge with rooted stacks.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events

SRC=$WORKLOADS/deep_recursion.c
[ -f "$SRC" ] || { fail "workload source '$SRC' missing"; finish; }
CC_FOUND=
for c in ${CC:-} cc gcc clang; do
	command -v "$c" >/dev/null 2>&1 && { CC_FOUND=$c; break; }
done
[ -n "$CC_FOUND" ] || skip_all "no C compiler (cc, gcc, clang) to build the deep recursion variants"

DEPTH=60
STACK=16384
MIN=99
ROOT='^_start;__libc_start_main[^;]*;__libc_start_call_main;main'
# main, exactly DEPTH deep_recurse frames (any compiler suffix), then the leaf.
CHAIN='(^|;)main'
i=0
while [ $i -lt $DEPTH ]; do
	CHAIN="$CHAIN;deep_recurse[^;]*"
	i=$((i + 1))
done
CHAIN="$CHAIN;deep_leaf\$"

for v in fp:-fno-omit-frame-pointer nofp:-fomit-frame-pointer; do
	if ! "$CC_FOUND" -O2 -g "${v#*:}" -o "deep_${v%%:*}" "$SRC" 2>cc.err; then
		fail "cannot build deep_${v%%:*} with $CC_FOUND -O2 -g ${v#*:}: $(head -c 300 cc.err)"
		finish
	fi
done
info "built with $CC_FOUND -O2 -g, with and without -fno-omit-frame-pointer"

# depth_hist FOLDED: "deep_recurse-frames samples" per distinct depth seen.
depth_hist() {
	awk '{ n = $NF; s = $0; sub(/[ \t]+[0-9]+[ \t]*$/, "", s); d = gsub(/deep_recurse/, "", s); h[d] += n }
	     END { for (d in h) print d, h[d] }' "$1" | sort -n | tr '\n' ' '
}

# --- with frame pointers: the splice ------------------------------------------------
sp_record fp.spool -F 999 --stack-size $STACK -- ./deep_fp -t 1 -d $DEPTH >/dev/null
rc=$?
sed 's/^/# record fp: /' record.err
if [ $rc -ne 0 ]; then
	fail "record of deep_fp exited $rc: $(head -c 300 record.err)"
else
	with_timeout 60 "$SP" report --format=folded fp.spool >fp.folded 2>/dev/null
	with_timeout 60 "$SP" dump fp.spool >fp.dump 2>/dev/null
	info "fp: dump summary: truncated_markers=$(dump_field summary truncated_markers fp.dump) spliced_stacks=$(dump_field summary spliced_stacks fp.dump) ignored_callchain_frames=$(dump_field summary ignored_callchain_frames fp.dump)"
	info "fp: deep_recurse frames per stack (frames samples): $(depth_hist fp.folded)"
	chain=$(folded_share fp.folded "$CHAIN")
	set -- $(folded_share fp.folded "$ROOT;")
	info "fp: stacks from _start (the whole root) $1 / $2 = $(pct "$1" "$2")%"
	set -- $(folded_share fp.folded '^\[truncated\]')
	info "fp: stacks marked truncated $1 / $2 = $(pct "$1" "$2")%"
	awk '{ split($0, f, ";"); n[f[1]] += $NF } END { for (r in n) print n[r], r }' fp.folded | sort -rn | head -n 3 |
		sed 's/^/# fp: first frame: /'
	share_at_least fp: $MIN $chain "the samples reach main through exactly $DEPTH deep_recurse frames"
fi

# perf on the same binary, for comparison: its DWARF unwinding stops at the copy's end.
if command -v perf >/dev/null 2>&1 &&
	perf record -q -F 999 --call-graph dwarf,$STACK -o perf.data -- ./deep_fp -t 1 -d $DEPTH >/dev/null 2>perf.err &&
	perf script -i perf.data -F ip,sym >perf.txt 2>/dev/null; then
	set -- $(awk '
		/^[ \t]*$/ { if (open) { n++; m += hit }; open = 0; hit = 0; next }
		{ open = 1; if ($2 == "main") hit = 1 }
		END { if (open) { n++; m += hit }; printf "%d %d\n", m, n }' perf.txt)
	info "perf --call-graph dwarf,$STACK: samples reaching main $1 / $2 = $(pct "$1" "$2")%"
else
	skip "perf comparison: perf missing or perf record failed here: $(head -c 200 perf.err 2>/dev/null)"
fi

# --- without frame pointers: truncated, counted, kept apart --------------------------
sp_record nofp.spool -F 999 --stack-size $STACK -- ./deep_nofp -t 1 -d $DEPTH >/dev/null
rc=$?
sed 's/^/# record nofp: /' record.err
if [ $rc -ne 0 ]; then
	fail "record of deep_nofp exited $rc: $(head -c 300 record.err)"
	finish
fi
with_timeout 60 "$SP" dump nofp.spool >nofp.dump 2>/dev/null
markers=$(dump_field summary truncated_markers nofp.dump)
said=$(summary_number record.err truncated)
info "nofp: truncated_markers=${markers:-?} in the dump summary; record's summary: ${said:-?} truncated stacks"
[ "${markers:-0}" -gt 0 ] && ok "nofp: truncated stacks are counted in the summary ($markers)" ||
	fail "nofp: truncated_markers='$markers' in the dump summary"
[ "${said:-0}" -gt 0 ] && ok "nofp: record's summary reports $said truncated stacks" ||
	fail "nofp: record's summary does not report truncated stacks"
with_timeout 60 "$SP" report --format=folded nofp.spool >nofp.folded 2>/dev/null
info "nofp: deep_recurse frames per stack (frames samples): $(depth_hist nofp.folded)"
set -- $(folded_share nofp.folded '^\[truncated\];')
share_at_least nofp: 90 "$1" "$2" "the stacks start with [truncated]"
set -- $(folded_share nofp.folded '.;\[truncated\]')
[ "$1" -eq 0 ] && ok "nofp: [truncated] only ever comes first" || fail "nofp: $1 samples have [truncated] past the first frame"
# Rooted at _start: the program's own or, for a sample taken while the dynamic
# loader still runs (start-up is slower under the sanitizers), ld.so's, or its
# _dl_start_user, the outermost frame while ld.so runs the constructors (72 of
# 2,863 samples of 60 runs of spin_ms 1 at 20 kHz were rooted there).  A sample taken
# while execve replaced the recorder's child with the program is the calling program's
# one frame, execve, complete (e2e 58; the record summary counts it apart).
set -- $(folded_share nofp.folded "^(_start|_dl_start_user|execve)(;|\$)|^\\[truncated\\];")
[ "$1" -eq "$2" ] && ok "nofp: every stack is either rooted at _start (or the execve frame) or starts with [truncated]" ||
	fail "nofp: $(($2 - $1)) samples are neither rooted nor marked truncated: $(grep -Ev '^(_start|_dl_start_user|execve)(;| )|^\[truncated\];' nofp.folded | head -n 2 | cut -c1-300 | tr '\n' '|')"
set -- $(folded_share nofp.folded '(^|;)main;')
info "nofp: stacks reaching main $1 / $2 = $(pct "$1" "$2")%"
finish
