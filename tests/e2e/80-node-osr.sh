# SPDX-License-Identifier: MIT
# Node attached after on-stack replacement: a top-level for (;;) loop
# calling three small functions is compiled by V8 while it runs (on-stack replacement),
# the functions inlined into it ("JS:* busy.js:1:1").  That code keeps rbp's value in its
# lowest stack slot, which read as a frame record just pushed and cut every stack at
# the leaf.  Attached with record -p after 1 s: >= 99% of the samples reach the root
# (_start, or a thread's start), beside perf record -g on the same process.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_cmd node "the Node.js workload (Debian package nodejs)"

cat >busy.js <<'EOF2'
function leafJs(n) { let x = 0; for (let i = 0; i < n; i++) x = (x * 31 + i) | 0; return x; }
function midJs(n) { return leafJs(n) ^ 1; }
function outerJs(n) { return midJs(n) ^ 2; }
for (;;) outerJs(1000);
EOF2
info "node $(node --version)"

# attach SPOOL-OR-DATA TOOL: start the script, attach TOOL (sp or perf) to it after 1 s
# for 3 s; the script's perf map is removed at the end (NODE_MAPS).
attach() {
	node --perf-basic-prof --interpreted-frames-native-stack busy.js &
	np=$!
	track_pid "$np"
	NODE_MAPS="${NODE_MAPS:-} /tmp/perf-$np.map"
	sleep 1
	if [ "$2" = perf ]; then
		with_timeout 60 perf record -q -g -F 999 -p "$np" -o "$1" -- sleep 3 >/dev/null 2>&1
	else
		sp_record "$1" -F 999 -p "$np" -d 3
	fi
	st=$?
	kill "$np" 2>/dev/null
	wait "$np" 2>/dev/null
	return $st
}

attach osr.spool sp || fail "record -p exited $?: $(head -c 300 record.err)"
with_timeout 60 "$SP" report --format=folded osr.spool >osr.folded 2>/dev/null ||
	fail "report exited $?"
set -- $(folded_share osr.folded '^(_start|__clone3?|start_thread);')
rooted=$1 total=$2
set -- $(folded_share osr.folded 'JS:\* [^;]*busy\.js:1:1$')
osr=$1
info "stackpulse: $rooted of $total samples reach the root; $osr in the replaced loop's code"
[ "$osr" -gt 0 ] && ok "samples in the code on-stack replacement made ($osr)" ||
	info "no sample in code on-stack replacement made: this node did not replace the loop here"
share_at_least "rooted:" 99 "$rooted" "$total" "samples reach the root" ||
	info "top stacks: $(folded_top osr.folded 3 | tr '\n' ' ' | cut -c 1-600)"

if attach osr.data perf; then
	set -- $(perf script -i osr.data -F ip,sym 2>/dev/null |
		awk 'BEGIN { RS = "" } { n++; if ($0 ~ /(__libc_start_call_main|_start|__clone3?|start_thread)$/) r++ }
		     END { print r + 0, n + 0 }')
	info "perf record -g on the same script: $1 of $2 samples reach the root ($(pct "$1" "$2")%; its frame-pointer walk ends at __libc_start_call_main)"
fi
# The maps node wrote, once the reports have read them.
for m in ${NODE_MAPS:-}; do rm -f "$m"; done
finish
