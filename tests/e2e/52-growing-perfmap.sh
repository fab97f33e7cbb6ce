# SPDX-License-Identifier: MIT
# A perf map that keeps growing must not starve the recorder.  The target's
# anonymous code is named by none of its map's lines, so the recorder looks at the
# map again and again; the map is 200,000 lines and grows a line a millisecond.
# Each re-read parsed it whole: the recorder spent 2.7 s of CPU in a 3 s recording
# and lost 63% of the samples.  A re-read now waits nine times as long as the last
# one took, so the map gets at most a tenth of the recorder.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_cmd python3 "growing the perf map"
need_workload jit_perfmap
JIT=$WL

cat >grow.py <<'EOF'
import sys, time
path, secs = sys.argv[1], float(sys.argv[2])
with open(path, "w") as f:
    for i in range(200000):
        f.write("%x 10 junk_%d\n" % (0x100000000 + i * 16, i))
end = time.time() + secs
i = 200000
with open(path, "a") as f:
    while time.time() < end:
        f.write("%x 10 junk_%d\n" % (0x100000000 + i * 16, i))
        f.flush()
        i += 1
        time.sleep(0.001)
EOF

"$JIT" -t 8 >jit.out &
jpid=$!
track_pid $jpid
i=0
while [ $i -lt 50 ] && ! grep -q 'perf map' jit.out; do
	sleep 0.1
	i=$((i + 1))
done
MAP=$(sed -n 's/^jit_perfmap: perf map //p' jit.out)
[ -f "$MAP" ] || { fail "jit_perfmap left no perf map"; finish; }
trap 'rm -f "$MAP"; cleanup' EXIT
python3 grow.py "$MAP" 7 &
gpid=$!
track_pid $gpid
sleep 1.5
with_timeout 60 "$SP" record -p $jpid -d 4 -o grow.spool >/dev/null 2>grow.err
rc=$?
sed -n 1,3p grow.err | sed 's/^/# /'
written=$(summary_number grow.err written)
lost=$(sed -n 's/.*sample events), \([0-9][0-9]*\) lost.*/\1/p' grow.err | head -n 1)
cpu=$(sed -n 's/.*recorder CPU \([0-9.]*\) s.*/\1/p' grow.err | head -n 1)
info "a growing 200,000-line perf map: ${written:-?} written, ${lost:-?} lost, recorder CPU ${cpu:-?} s in 4 s"
[ $rc = 0 ] && [ -n "$cpu" ] && [ "$(num_ge 2 "$cpu")" = 1 ] &&
	ok "the recorder keeps up: ${cpu} s of CPU in a 4 s recording (bound 2 s)" ||
	fail "the recorder spent ${cpu:-?} s of CPU in 4 s (exit $rc): $(head -c 300 grow.err)"
finish
