# SPDX-License-Identifier: MIT
# The odd frames of process creation: samples taken while execve
# replaces the image carry the old image's pc; they show the calling program's frame
# (glibc's execve), complete, never an unknown address or a truncated stack.  glibc's
# __vfork keeps its return address in rdi across the syscall (CFI register rule); its
# stacks reach main.  Beside stackpulse: perf record --call-graph dwarf's unknown frames.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload vfork_loop

VF=$(cd "$(dirname "$0")/../workloads" && pwd)/vfork_loop

# unknown_share FOLDED: "MATCHED TOTAL" of samples with a frame in no module
# ("[unknown]+0x..."; a stripped module's "dash+0x..." is named by its module).
unknown_share() {
	folded_share "$1" '(^|;)\[unknown\]'
}

sp_record vf.spool -F 999 -- "$VF" 2 >/dev/null || { fail "record of vfork_loop exited $?: $(head -c 300 record.err)"; finish; }
with_timeout 60 "$SP" report --format=folded vf.spool >vf.folded 2>/dev/null
set -- $(unknown_share vf.folded)
unknown=$1 total=$2
set -- $(folded_share vf.folded '^execve$')
exec_n=$1
# Samples taken after the address space changed but before the exec's record came
# are held until it comes; one cut short here is one the recorder could not tell.
set -- $(folded_share vf.folded '^\[truncated\];execve$')
early=$1
set -- $(folded_share vf.folded '^\[truncated\];')
trunc=$1
ref=
if with_timeout 120 perf record -q --call-graph dwarf -F 999 -o vf.data -- "$VF" 2 >/dev/null 2>&1; then
	ref=$(perf script -i vf.data -F ip,sym 2>/dev/null | awk 'BEGIN { RS = "" } { n++; if ($0 ~ /\[unknown\]/) u++ } END { printf "%d of %d", u, n }')
fi
info "vfork_loop: $total samples, $exec_n in execve alone, $early in execve cut short, $unknown with a frame in no module, $trunc truncated${ref:+; perf --call-graph dwarf: $ref samples with an [unknown] frame}"
[ "$total" -gt 0 ] && [ "$unknown" -eq 0 ] && ok "no sample of the exec loop has a frame in no module ($total samples)" ||
	fail "$unknown of $total samples have a frame in no module: $(grep -F '[unknown]' vf.folded | head -n 3 | tr '\n' ' ')"
[ "$exec_n" -gt 0 ] && ok "samples taken during execve show execve alone ($exec_n)" ||
	skip "no sample landed inside execve this time (the check needs one)"
grep -q 'taken while execve replaced the image' record.err &&
	ok "record's summary counts the samples taken while execve ran" ||
	{ [ "$exec_n" -gt 0 ] && fail "record's summary does not mention the execve samples: $(tail -n 4 record.err | tr '\n' ' ')"; }
# Start-up samples in ld.so and a forked child's first ones may end early; more is a failure.
[ "$(num_ge 5 "$(pct "$trunc" "$total")")" = 1 ] && ok "at most 5% of the stacks are truncated ($trunc of $total)" ||
	fail "$trunc of $total stacks are truncated: $(grep '^\[truncated\]' vf.folded | sort -t' ' -k2 -rn | head -n 3 | tr '\n' ' ')"

# __vfork: every stack through it is rooted at _start and reaches spawn_round.
set -- $(folded_share vf.folded '(^|;)__vfork$')
vf_n=$1
set -- $(folded_share vf.folded '^_start;__libc_start_main;__libc_start_call_main;main;spawn_round;__vfork$')
if [ "$vf_n" -gt 0 ]; then
	[ "$1" -eq "$vf_n" ] && ok "all $vf_n samples in __vfork reach main > spawn_round from _start" ||
		fail "only $1 of $vf_n samples in __vfork are rooted: $(grep '__vfork [0-9]*$' vf.folded | head -n 3 | tr '\n' ' ')"
else
	skip "no sample landed in __vfork this time"
fi

# A shell running short programs: the exec samples of every child are named too.
echo 'i=0; while [ $i -lt 300 ]; do /bin/true; i=$((i + 1)); done' >loop.sh
sp_record sh.spool -F 999 -- sh loop.sh >/dev/null || fail "record of the shell loop exited $?"
with_timeout 60 "$SP" report --format=folded sh.spool >sh.folded 2>/dev/null
set -- $(unknown_share sh.folded)
[ "$2" -gt 0 ] && [ "$1" -eq 0 ] && ok "a shell running 300 programs: no frame in no module ($2 samples)" ||
	fail "a shell running 300 programs: $1 of $2 samples have a frame in no module: $(grep -F '[unknown]' sh.folded | head -n 3 | tr '\n' ' ')"
finish
