# SPDX-License-Identifier: MIT
# Load: 500 short-lived processes, four at a time, recorded with inheritance: forker
# forks 500 children that exec spin_ms (5 ms of CPU each), then 500 that only fork
# (child_work, 5 ms each).  Recording must not crash, must sample most of the
# children, and keep its counters honest.  Prints the pids sampled, lost samples and
# the recorder's peak memory.
# e2e: alone (a load test: it counts lost samples)
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload spin_ms
SPIN=$WL
need_workload forker
FORKER=$WL
N=500

# load_run NAME FORKER-ARGS...: record forker with N children; checks and figures.
load_run() {
	name=$1
	shift
	start=$(date +%s)
	with_timeout 90 "$SP" record -F 999 -o "$name.spool" -- "$FORKER" -n $N -j 4 -P "$@" \
		>"$name.out" 2>"$name.err"
	rc=$?
	secs=$(($(date +%s) - start))
	sed 's/^/# /' "$name.err" | head -n 8
	[ $rc -eq 0 ] && ok "$name: record of $N processes exits 0 (in $secs s)" ||
		fail "$name: record of $N processes exited $rc after $secs s"
	[ $secs -le 90 ] && ok "$name: recording took $secs s (bound 90 s)" || fail "$name: recording took $secs s"
	children=$(grep -c '^child ' "$name.out")
	with_timeout 60 "$SP" dump "$name.spool" >"$name.dump" 2>/dev/null
	pid_samples "$name.dump" >"$name.pids"
	sampled=$(awk 'NR == FNR { if ($1 == "child") kid[$2] = 1; next } ($1 in kid) { n++ } END { print n + 0 }' \
		"$name.out" "$name.pids")
	info "$name: $sampled of $children children sampled ($(wc -l <"$name.pids") pids with samples in all); peak memory $(record_peak_mib "$name.err") MiB"
	[ "$children" -eq $N ] && ok "$name: the workload started $N children" || fail "$name: the workload started $children children"
	[ "$sampled" -ge $((N * 6 / 10)) ] && ok "$name: most children were sampled ($sampled of $N, >= 60%)" ||
		fail "$name: only $sampled of $N children were sampled"
	honest_counts "$name" "$name.spool" "$name.err"
}

load_run exec -x "$SPIN" 5
with_timeout 60 "$SP" report --format=folded exec.spool >exec.folded 2>/dev/null
# Each child spins 5 CPU-ms in spin_outer > spin_leaf: N x 5 ms at 999 Hz is about
# 2,500 samples there, whatever fork and exec cost around them on this machine.
expect=$((N * 5 * 999 / 1000))
set -- $(folded_share exec.folded 'spin_outer;spin_leaf')
info "exec: spin_outer;spin_leaf in $1 of $2 samples ($(pct "$1" "$2")%); $N x 5 CPU-ms at 999 Hz is about $expect"
[ "$1" -ge $((expect * 8 / 10)) ] && ok "exec: the exec'd children's frames are symbolized (spin_outer;spin_leaf in $1 samples, >= 80% of $expect)" ||
	fail "exec: spin_outer;spin_leaf in only $1 samples (of $2); expected about $expect"
load_run fork -m 5
finish
