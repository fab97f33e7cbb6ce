# SPDX-License-Identifier: MIT
# Exec chains and many short-lived processes: a program reached through nested shells
# (exec, or fork then exec) is recorded with complete stacks against its own image,
# and each of 100 short-lived children forked and exec'd during the recording has
# symbolized samples (no address-only frames in its chain).
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_cmd sh "nested exec chains"
need_workload chain4
CHAIN4=$WL
need_workload spin_ms
SPIN=$WL
need_workload forker
FORKER=$WL

ROOT='^_start;__libc_start_main[^;]*;__libc_start_call_main;main'
MIN=99
# A frame the symbolizer could only name by module and offset, or by address.
ADDR_ONLY='(^|;)[^;]*\+0x[0-9a-fA-F]+(;|$)|(^|;)0x[0-9a-fA-F]+(;|$)'

# nested NAME SCRIPT: record `sh -c SCRIPT`, which reaches chain4 -t 1 through shells,
# and check chain4's stacks.
nested() {
	name=$1
	sp_record "$name.spool" -F 999 -- sh -c "$2" >/dev/null
	rc=$?
	if [ $rc -ne 0 ]; then
		fail "$name: record exited $rc: $(head -c 300 record.err)"
		return
	fi
	ok "$name: record exits 0"
	with_timeout 60 "$SP" dump "$name.spool" >"$name.dump" 2>/dev/null
	info "$name: $(grep -c '^exec ' "$name.dump") exec markers, $(pid_samples "$name.dump" | wc -l) pids with samples"
	with_timeout 60 "$SP" report --format=folded "$name.spool" >"$name.folded" 2>"$name.err" ||
		{ fail "$name: report failed: $(head -c 300 "$name.err")"; return; }
	set -- $(folded_share "$name.folded" "$ROOT;level1;level2;level3;level4\$")
	full=$1
	set -- $(folded_share "$name.folded" ';level[1-4](;|$)')
	in_chain4=$1
	# chain4 -t 1 spins one CPU-second: about 1000 samples at 999 Hz.
	if [ "$in_chain4" -lt 500 ]; then
		fail "$name: only $in_chain4 samples in chain4 (expected about 1000: the exec'd program was not followed?)"
	elif ! share_at_least "$name:" $MIN "$full" "$in_chain4" "chain4's samples carry main > level1 > ... > level4"; then
		info "$name: other stacks:"
		folded_top "$name.folded" 100 | grep -v "level4\$" | head -n 5 | sed 's/^/#   /'
	fi
	set -- $(folded_share "$name.folded" "$ADDR_ONLY")
	info "$name: $1 of $2 samples have an address-only frame"
	bad=$(grep -E "$ADDR_ONLY" "$name.folded" | grep -c ';level[1-4]')
	[ "$bad" -eq 0 ] && ok "$name: no address-only frame in chain4's stacks" ||
		fail "$name: $bad chain4 stacks have address-only frames: $(grep -E "$ADDR_ONLY" "$name.folded" | grep ';level' | head -n 2)"
}

# sh execs sh, which execs chain4: three images in one pid.
nested exec-exec "sh -c \"exec '$CHAIN4' -t 1\""
# sh forks sh, which forks chain4 (the trailing commands keep the shells from exec'ing).
nested fork-fork "sh -c \"'$CHAIN4' -t 1; true\"; true"

# 100 children, 2 at a time, each exec'ing spin_ms for 20 CPU-ms.
NCHILD=100
sp_record many.spool -F 999 -- "$FORKER" -n $NCHILD -j 2 -P -x "$SPIN" 20 >many.out
rc=$?
sed 's/^/# record: /' record.err
if [ $rc -ne 0 ]; then
	fail "record of $NCHILD fork+exec children exited $rc: $(head -c 300 record.err)"
	finish
fi
ok "record of $NCHILD fork+exec children exits 0"
with_timeout 60 "$SP" dump many.spool >many.dump 2>/dev/null
pid_samples many.dump >pids.txt
awk '$1 == "child" { print $2 }' many.out | sort >children.txt
awk '{ print $1 }' pids.txt | sort >sampled.txt
with=$(comm -12 children.txt sampled.txt | wc -l)
info "children with samples: $with of $(wc -l <children.txt) (distinct pids with samples: $(wc -l <pids.txt))"
info "exec markers: $(grep -c '^exec ' many.dump)"
# Each child spins 20 CPU-ms: about 20 samples each at 999 Hz.
[ "$with" -ge 95 ] && ok "$with of $NCHILD short-lived children have samples (>= 95)" ||
	fail "only $with of $NCHILD short-lived children have samples"

with_timeout 60 "$SP" report --format=folded many.spool >many.folded 2>many.err ||
	fail "report of the children failed: $(head -c 300 many.err)"
folded_top many.folded 4 | sed 's/^/# top: /'
# Complete: rooted at main > spin_outer, whatever is under it (spin_leaf, or the clock
# syscall that ends each ~1 ms round: a share of the workload's own, not of unwinding).
set -- $(folded_share many.folded "$ROOT;spin_outer(;|\$)")
full=$1
set -- $(folded_share many.folded ';spin_(outer|leaf)(;|$)')
in_spin=$1
total=$2
info "children: $in_spin of $total samples are in spin_ms ($(pct "$in_spin" "$total")%)"
if [ "$in_spin" -eq 0 ]; then
	fail "no samples in spin_ms's functions (exec'd children not followed or not symbolized)"
elif ! share_at_least $MIN "$full" "$in_spin" "the children's spin_ms samples are complete (main;spin_outer[;...])"; then
	info "other stacks:"
	folded_top many.folded 100 | grep 'spin_' | grep -v 'main;spin_outer\(;\|$\)' | head -n 5 | sed 's/^/#   /'
fi
# Samples the children's pids got at all: their frames must all be named.
set -- $(folded_share many.folded "$ADDR_ONLY")
info "all processes: $1 of $2 samples have an address-only frame"
grep -E "$ADDR_ONLY" many.folded | sort -t' ' -k2 -rn | head -n 3 | sed 's/^/#   address-only: /'
bad=$(grep -E "$ADDR_ONLY" many.folded | grep -c ';spin_')
[ "$bad" -eq 0 ] && ok "no address-only frame in the children's spin_ms stacks" ||
	fail "$bad of the children's spin_ms stacks have address-only frames"
finish
