# SPDX-License-Identifier: MIT
# Work that followed the product of two things a spool holds, not their sum:
#  - stored perf map lines (SYM_PERF_MAP records) were scanned whole for every
#    process whose map was made from them: 22,000 processes with a line each
#    (990 KB, tests/e2e/hostile-spool.py pmlines) cost report 0.6 s of CPU and
#    symbolize as much; now each process's lines are found through an index;
#  - report --follow (and top) walked every sampled stack whole: 71,000
#    distinct stacks 2,048 deep under one chain (1 MB, hostile-spool.py wide)
#    cost 8.9 s of CPU; now samples are counted per stack node and folded over
#    the prefix tree when a table is drawn (each node visited once);
#  - --follow --group-by=process looked each row's process name up through
#    every thread: 22,000 processes, 2.3 s of CPU;
#  - perf-script and speedscope wrote every sample's stack in full: 7 GB and
#    293 MB for the 1 MB wide spool; now at most 80 MiB of samples for a spool
#    under 1 MiB (off-CPU intervals of a time metric count too: hostile-spool.py
#    offwide), and the output says how many samples it left out; pprof
#    encoded 60,000 processes' 2,048-deep stacks (245 MB before gzip: 1.1 s of
#    CPU), now an eighth of that budget, with a comment on what it left out.
. "$(dirname "$0")/lib.sh"
SLOW=1
[ -n "${ASAN_OPTIONS:-}${UBSAN_OPTIONS:-}" ] && SLOW=4
need_stackpulse
need_cmd python3 "writing the hostile spools (tests/e2e/hostile-spool.py)"
need_rusage_run

# cpu_bounded LABEL MAX_S ARGS...: the command's own CPU (user + sys) within MAX_S
# (times SLOW under the sanitizers), its memory within 200 MB; prints the figures.
cpu_bounded() {
	label=$1 max=$2
	shift 2
	with_timeout 60 "$RU" c.ru "$@" >c.out 2>c.err
	cpu=$(awk -v u="$(ru_field c.ru user_s)" -v s="$(ru_field c.ru sys_s)" 'BEGIN { print u + s }')
	kib=$(ru_field c.ru maxrss_kib)
	bound=$(awk -v m="$max" -v k=$SLOW 'BEGIN { print m * k }')
	if [ "$(num_ge "$bound" "$cpu")" = 1 ] && [ -n "$kib" ] && [ "$kib" -lt $((200 * 1024 * SLOW)) ]; then
		ok "$label: $cpu s of CPU, $((kib / 1024)) MiB (bound $bound s)"
	else
		fail "$label: $cpu s of CPU, ${kib:-?} KiB (bounds $bound s, $((200 * SLOW)) MiB): $(head -c 200 c.err)"
	fi
}

python3 "$E2E_DIR/hostile-spool.py" pmlines pm.spool 22000 || { fail "hostile-spool.py pmlines failed"; finish; }
info "pm.spool: $(wc -c <pm.spool) bytes"
cpu_bounded "report, 22,000 processes with a stored perf map line each" 0.25 \
	"$SP" report --format=folded pm.spool
n=$(awk '/jit_fn/ { s += $NF } END { print s + 0 }' c.out)
[ "$n" -eq 22000 ] && ok "the stored lines name all $n processes' frames jit_fn" ||
	fail "the stored lines name $n frames of 22000: $(head -c 200 c.out)"
# A perf map file of the same pid found at report time (another machine's, or a later process's
# under a reused pid) does not replace the lines the spool stores for that pid.
mkdir -p maps
printf '600000 40 file_fn\n' >maps/perf-1000.map
"$SP" report --format=folded --perf-map-dir maps pm.spool >maps.out 2>/dev/null
grep -q file_fn maps.out && fail "a map file at report time renamed a stored line's frame: $(grep -m1 file_fn maps.out)" ||
	{ grep -q jit_fn maps.out && ok "the stored lines come before a perf map file of the same pid" ||
		fail "no jit_fn frame with a map file beside: $(head -c 200 maps.out)"; }
cpu_bounded "symbolize, the same spool" 0.25 "$SP" symbolize -o pm2.spool pm.spool
cpu_bounded "report --follow --group-by=process, the same spool" 0.5 \
	"$SP" report --follow --group-by=process pm.spool
grep -q 'jit_fn' c.out && ok "--group-by=process names the processes' jit_fn" ||
	fail "no jit_fn row: $(head -c 300 c.out)"

python3 "$E2E_DIR/hostile-spool.py" wide wide.spool || { fail "hostile-spool.py wide failed"; finish; }
info "wide.spool: $(wc -c <wide.spool) bytes"
cpu_bounded "report --follow, 71,000 sampled stacks 2,048 deep" 0.5 "$SP" report --follow wide.spool
# Every stack runs through both frames of the chain: each function 100% total, half the self
# (in every table printed).
rows=$(grep -c '^ *50\.0% *100\.0% *50\.0% *100\.0%  \[unknown\]+0x40[12]000' c.out)
[ "$rows" -ge 2 ] && ok "both functions of the chain: 100% total, 50% self" ||
	fail "the table is not the chain's: $(head -c 400 c.out)"

# The exports that write every sample's stack: at most 80 MiB of samples (and the
# last sample past it) for a spool under 1 MiB, and a word of what was left out.
for f in perf-script speedscope; do
	bytes=$(with_timeout 120 "$SP" report --format=$f wide.spool 2>/dev/null | wc -c)
	with_timeout 120 "$SP" report --format=$f wide.spool 2>/dev/null | tail -c 1000 >$f.tail
	[ "$bytes" -lt 100000000 ] && ok "$f: $bytes bytes of output (under 100 MB)" ||
		fail "$f: $bytes bytes of output"
done
grep -q '^# [0-9]* of 71409 samples left out: output stops past 80 MiB' perf-script.tail &&
	ok "perf-script says in a last comment how many samples it left out" ||
	fail "perf-script's end: $(tail -c 200 perf-script.tail)"
with_timeout 120 "$SP" report --format=speedscope wide.spool 2>/dev/null | head -c 600 >speedscope.head
grep -q '"name":"hostile \[[0-9]* of 71409 samples left out: output stops past 80 MiB' speedscope.head &&
	ok "speedscope's name says how many samples were left out" ||
	fail "speedscope's name: $(head -c 300 speedscope.head)"

# Off-CPU intervals count against the same budget (a time metric writes them as samples).
python3 "$E2E_DIR/hostile-spool.py" offwide offwide.spool || { fail "hostile-spool.py offwide failed"; finish; }
with_timeout 120 "$SP" report --format=perf-script --metric=wall offwide.spool 2>/dev/null |
	tail -c 1000 >perf-script.tail
with_timeout 120 "$SP" report --format=perf-script --metric=off-cpu offwide.spool 2>/dev/null |
	wc -c >perf-script.bytes
grep -q '^# [0-9]* of 30603 samples and [0-9]* of 30604 off-CPU intervals left out: output stops past 80 MiB' \
	perf-script.tail && [ "$(cat perf-script.bytes)" -lt 100000000 ] &&
	ok "perf-script: $(cat perf-script.bytes) bytes of intervals; with wall time it says how many samples and intervals it left out" ||
	fail "perf-script, wall time: $(cat perf-script.bytes) bytes, its end: $(tail -c 200 perf-script.tail)"
with_timeout 120 "$SP" report --format=speedscope --metric=off-cpu offwide.spool 2>/dev/null >offwide.json
bytes=$(wc -c <offwide.json)
grep -q '"name":"hostile \[[0-9]* of 30604 off-CPU intervals left out: output stops past 80 MiB' offwide.json &&
	[ "$bytes" -lt 100000000 ] &&
	ok "speedscope, off-CPU time: $bytes bytes of intervals, its name says how many were left out" ||
	fail "speedscope, off-CPU time: $bytes bytes, name: $(head -c 300 offwide.json)"
rm -f offwide.json

python3 "$E2E_DIR/hostile-spool.py" pids pids.spool 60000 || { fail "hostile-spool.py pids failed"; finish; }
cpu_bounded "report --format=pprof, 60,000 processes on a 2,048-deep stack" 0.5 \
	"$SP" report --format=pprof pids.spool
python3 -c 'import gzip, sys; sys.stdout.write(str(gzip.open(sys.argv[1]).read().count(b"samples left out: output stops past 10 MiB")))' \
	c.out >pprof.cut 2>&1
[ "$(cat pprof.cut)" = 1 ] && ok "pprof's comment says how many samples were left out" ||
	fail "pprof: no comment on what was left out: $(head -c 200 pprof.cut)"
finish
