# SPDX-License-Identifier: MIT
# Children forked without exec are followed by default and start with a copy of their
# parent's modules: their samples are symbolized and rooted at main.  --no-inherit
# records the launched process alone.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload forker

ROOT='^_start;__libc_start_main[^;]*;__libc_start_call_main;main'
# forker's static spawn() is inlined into main: its inline frame may sit between.
SPAWN='(;spawn_\[i\])?'
N=4
MIN=99

# samples_of PID: the samples of PID in pids.txt (0 when it has none).
samples_of() {
	awk -v p="$1" '$1 == p { n = $2 } END { print n + 0 }' pids.txt
}

# forker: N children spin 400 CPU-ms each in child_work > child_leaf, while the parent
# spins 200 CPU-ms in parent_work > parent_leaf, then reaps them.
sp_record fork.spool -F 999 -- "$WL" -n $N -m 400 -p 200 -P >fork.out
rc=$?
sed 's/^/# record: /' record.err
if [ $rc -ne 0 ]; then
	fail "record of forker exited $rc: $(head -c 300 record.err)"
	finish
fi
ok "record of forker (-n $N) exits 0"
parent=$(awk '$1 == "pid" { print $2 }' fork.out)
children=$(awk '$1 == "child" { print $2 }' fork.out)

with_timeout 60 "$SP" dump fork.spool >dump.txt 2>dump.err || { fail "dump failed: $(head -c 300 dump.err)"; finish; }
pid_samples dump.txt >pids.txt
psamples=$(samples_of "$parent")
info "parent pid $parent: $psamples samples"
with=0
csamples=0
for c in $children; do
	n=$(samples_of "$c")
	info "child pid $c: $n samples"
	[ "$n" -gt 0 ] && with=$((with + 1))
	csamples=$((csamples + n))
done
[ "$with" -ge $N ] && ok "samples from all $with forked children (>= $N distinct pids)" ||
	fail "only $with of $N forked children have samples (not followed across fork?)"

# Forked children inherit their parent's name (perf reports names only at exec).
with_timeout 60 "$SP" report --group-by=process fork.spool >byproc.txt 2>/dev/null
unnamed=$(grep -c '^== Process [0-9]* (\[unknown\])' byproc.txt)
named=$(grep -c '^== Process [0-9]* (forker)' byproc.txt)
[ "$unnamed" = 0 ] && [ "$named" -ge "$N" ] &&
	ok "every process is named forker ($named sections), none [unknown]" ||
	fail "process names: $named forker, $unnamed [unknown]: $(grep '^==' byproc.txt | head -3 | tr '\n' '|')"
with_timeout 60 "$SP" report --format=folded fork.spool >fork.folded 2>report.err ||
	fail "report --format=folded failed: $(head -c 300 report.err)"
folded_top fork.folded 4 | sed 's/^/# top: /'
set -- $(folded_share fork.folded "$ROOT$SPAWN;child_work(;|\$)")
if [ "$csamples" -eq 0 ]; then
	fail "no child samples to check"
elif ! share_at_least $MIN "$1" "$csamples" "the children's samples are rooted at main > child_work"; then
	info "other stacks:"
	folded_top fork.folded 100 | grep -v ';parent_' | grep -v ';child_work\(;\|$\)' | head -n 5 | sed 's/^/#   /'
fi
set -- $(folded_share fork.folded "$ROOT;parent_work;parent_leaf\$")
info "parent: complete stacks (main;parent_work;parent_leaf) $1 / $psamples parent samples = $(pct "$1" "$psamples")%"

# -p follows forks too: attach to a shell that, a second later, execs forker.
: >att.out
sh -c "sleep 1; exec '$WL' -n $N -m 400 -p 200 -P >att.out" &
spid=$!
track_pid $spid
with_timeout 60 "$SP" record -p $spid -F 999 -o att.spool >/dev/null 2>att.err
rc=$?
sed 's/^/# record -p: /' att.err
if [ $rc -ne 0 ]; then
	fail "record -p of a shell that execs forker exited $rc: $(head -c 300 att.err)"
else
	with_timeout 60 "$SP" dump att.spool >att.txt 2>/dev/null
	pid_samples att.txt >pids.txt
	with=0
	csamples=0
	for c in $(awk '$1 == "child" { print $2 }' att.out); do
		n=$(samples_of "$c")
		[ "$n" -gt 0 ] && with=$((with + 1))
		csamples=$((csamples + n))
	done
	info "record -p: $with children with samples, $csamples child samples, parent $(samples_of "$spid")"
	[ "$with" -ge $N ] && ok "record -p: samples from all $with children forked while attached" ||
		fail "record -p: only $with of $N children forked while attached have samples"
	with_timeout 60 "$SP" report --format=folded att.spool >att.folded 2>/dev/null
	set -- $(folded_share att.folded "$ROOT$SPAWN;child_work(;|\$)")
	share_at_least "record -p:" $MIN "$1" "$csamples" "the children's samples are complete (main > child_work)"
fi

# --no-inherit: only the launched process is sampled; its children are not followed.
sp_record noinh.spool -F 999 --no-inherit -- "$WL" -n $N -m 400 -p 200 -P >noinh.out
rc=$?
if [ $rc -ne 0 ]; then
	fail "record --no-inherit exited $rc: $(head -c 300 record.err)"
	finish
fi
ok "record --no-inherit exits 0"
sed 's/^/# record --no-inherit: /' record.err
with_timeout 60 "$SP" dump noinh.spool >noinh.txt 2>dump.err || { fail "dump failed: $(head -c 300 dump.err)"; finish; }
pid_samples noinh.txt >pids.txt
parent=$(awk '$1 == "pid" { print $2 }' noinh.out)
psamples=$(samples_of "$parent")
csamples=0
for c in $(awk '$1 == "child" { print $2 }' noinh.out); do
	csamples=$((csamples + $(samples_of "$c")))
done
info "--no-inherit: parent $psamples samples, children $csamples samples"
[ "$csamples" -eq 0 ] && ok "--no-inherit: no samples from the forked children" ||
	fail "--no-inherit: $csamples samples from forked children"
# The parent's 200 CPU-ms at 999 Hz: expect about 200 samples; ask for a fair part.
[ "$psamples" -ge 100 ] && ok "--no-inherit: the launched process itself is sampled ($psamples samples)" ||
	fail "--no-inherit: only $psamples samples from the launched process"
finish
