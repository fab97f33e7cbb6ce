# SPDX-License-Identifier: MIT
# dump: one line per record; record kinds, references between records, sample count;
# dump --json read by python3's json module.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload threads

sp_record t.spool -F 999 -- "$WL" -n 2 -t 1 >/dev/null || { fail "record failed: $(head -c 300 record.err)"; finish; }
samples=$(summary_number record.err samples)

with_timeout 60 "$SP" dump t.spool >dump.txt 2>dump.err
st=$?
[ $st -eq 0 ] && ok "dump exits 0 ($(wc -l <dump.txt) lines)" || { fail "dump exited $st: $(head -c 300 dump.err)"; finish; }

for kind in meta module frame stack thread thread-name sample summary; do
	n=$(awk -v k="$kind" '$1 == k' dump.txt | wc -l)
	[ "$n" -gt 0 ] && ok "dump has $n '$kind' lines" || fail "dump has no '$kind' line"
done
[ "$(head -n 1 dump.txt | awk '{ print $1 }')" = meta ] && ok "dump starts with the meta line" ||
	fail "first dump line is not meta: $(head -n 1 dump.txt)"
[ "$(awk '$1 == "summary"' dump.txt | wc -l)" -eq 1 ] && ok "exactly one summary line" || fail "not exactly one summary line"
info "$(grep -m1 '^meta' dump.txt)"
info "$(grep -m1 '^summary' dump.txt)"

bad=$(awk '$1 == "thread" && !(/ index=[0-9]+/ && / pid=[0-9]+/ && / tid=[0-9]+/)' dump.txt | wc -l)
[ "$bad" -eq 0 ] && ok "thread lines carry index=, pid=, tid=" || fail "$bad thread lines lack index=/pid=/tid="
bad=$(awk '$1 == "stack" && !(/ id=[0-9]+/ && / parent=/ && / frame=[0-9]+/)' dump.txt | wc -l)
[ "$bad" -eq 0 ] && ok "stack lines carry id=, parent=, frame=" || fail "$bad stack lines lack id=/parent=/frame="
bad=$(awk '($1 == "module" || $1 == "frame") && !/ id=[0-9]+/' dump.txt | wc -l)
[ "$bad" -eq 0 ] && ok "module and frame lines carry id=" || fail "$bad module/frame lines lack id="

# Every sample line carries thread=, stack=, time_ns=.
bad=$(awk '$1 == "sample" && !(/ thread=[0-9]+/ && / stack=[0-9]+/ && / time_ns=[0-9]+/)' dump.txt | wc -l)
[ "$bad" -eq 0 ] && ok "sample lines carry thread=, stack=, time_ns=" || fail "$bad sample lines lack thread=/stack=/time_ns="

nsample=$(awk '$1 == "sample"' dump.txt | wc -l)
if [ -n "$samples" ]; then
	[ "$nsample" -eq "$samples" ] && ok "$nsample sample lines = $samples samples in record's summary" ||
		fail "$nsample sample lines, record's summary says $samples samples"
else
	fail "record's summary has no sample count to compare with"
fi
dsum=$(grep '^summary' dump.txt | summary_number /dev/stdin samples)
if [ -n "$dsum" ]; then
	[ "$nsample" -eq "$dsum" ] && ok "sample lines = samples in the dump's summary line ($dsum)" ||
		fail "$nsample sample lines, dump summary says $dsum"
fi

# References resolve: stack parents and frames, sample threads and stacks.
refs=$(awk '
	function val(k,   i) { for (i = 2; i <= NF; i++) if (index($i, k "=") == 1) return substr($i, length(k) + 2); return "" }
	$1 == "frame" { frames[val("id")] = 1 }
	$1 == "module" { modules[val("id")] = 1 }
	$1 == "stack" {
		p = val("parent"); f = val("frame")
		if (p != "" && p !~ /^(-|none|-1)$/ && !(p in stacks)) bad_parent++
		if (!(f in frames)) bad_frame++
		stacks[val("id")] = 1
	}
	$1 == "thread" { threads[val("index")] = 1 }
	$1 == "sample" {
		if (!(val("thread") in threads)) bad_thread++
		s = val("stack"); if (s !~ /^(-|none|-1)$/ && !(s in stacks)) bad_stack++
	}
	END { printf "%d %d %d %d\n", bad_parent, bad_frame, bad_thread, bad_stack }
' dump.txt)
set -- $refs
[ "$1" -eq 0 ] && ok "every stack parent is an earlier stack" || fail "$1 stack lines name an unknown parent"
[ "$2" -eq 0 ] && ok "every stack frame is a known frame" || fail "$2 stack lines name an unknown frame"
[ "$3" -eq 0 ] && ok "every sample thread is a known thread" || fail "$3 samples name an unknown thread"
[ "$4" -eq 0 ] && ok "every sample stack is a known stack" || fail "$4 samples name an unknown stack"

# Sample timestamps never go backwards... per thread (rings are merged in time order).
back=$(awk '
	function val(k,   i) { for (i = 2; i <= NF; i++) if (index($i, k "=") == 1) return substr($i, length(k) + 2); return "" }
	$1 == "sample" { t = val("thread"); ns = val("time_ns") + 0; if ((t in last) && ns < last[t]) b++; last[t] = ns }
	END { print b + 0 }' dump.txt)
[ "$back" -eq 0 ] && ok "sample times increase per thread" || fail "$back samples go back in time within their thread"

# Thread names from pthread_setname_np reach the spool.
grep '^thread-name' dump.txt | grep -q 'worker-0' && grep '^thread-name' dump.txt | grep -q 'worker-1' &&
	ok "thread-name lines carry worker-0 and worker-1" || fail "thread names worker-0/worker-1 missing: $(grep '^thread-name' dump.txt | head -n 3 | tr '\n' '|')"

# dump --json: JSON Lines that a real JSON parser reads, one object per text line.
with_timeout 60 "$SP" dump --json t.spool >dump.jsonl 2>json.err
st=$?
[ $st -eq 0 ] && ok "dump --json exits 0 ($(wc -l <dump.jsonl) lines)" || fail "dump --json exited $st: $(head -c 300 json.err)"
if command -v python3 >/dev/null 2>&1; then
	# Prints "parsed N", then one line per mismatch with the text dump.
	python3 - dump.jsonl dump.txt >json.check 2>&1 <<'PY'
import json, sys
objs, bad = [], 0
with open(sys.argv[1], encoding="utf-8") as f:
    for no, line in enumerate(f, 1):
        try:
            o = json.loads(line)
        except ValueError as e:
            print("line %d does not parse: %s" % (no, e)); bad += 1; continue
        if not isinstance(o, dict) or not isinstance(o.get("type"), str):
            print("line %d is not an object with a type" % no); bad += 1; continue
        objs.append(o)
kinds = [l.split(" ", 1)[0] for l in open(sys.argv[2], encoding="utf-8", errors="replace")]
print("parsed %d" % len(objs))
if bad == 0 and [o["type"] for o in objs] != kinds:
    print("record kinds differ from the text dump")
samples = [o for o in objs if o["type"] == "sample"]
stacks = {o["id"]: o for o in objs if o["type"] == "stack"}
frames = {o["id"]: o for o in objs if o["type"] == "frame"}
for o in samples:
    if not isinstance(o["time_ns"], int) or (o["stack"] is not None and o["stack"] not in stacks):
        print("sample with a bad time or stack: %r" % o); break
for o in frames.values():
    if not (o["abs"].startswith("0x") and int(o["abs"], 16) >= 0):
        print("frame address is not a hex string: %r" % o); break
summary = [o for o in objs if o["type"] == "summary"]
if len(summary) != 1 or summary[0]["samples"] != len(samples):
    print("summary samples differ from the sample objects")
PY
	parsed=$(sed -n 's/^parsed //p' json.check)
	if [ -n "$parsed" ] && [ "$(grep -vc '^parsed ' json.check)" -eq 0 ]; then
		ok "python3's json parses all $parsed lines; kinds, samples, stacks, addresses agree with the text dump"
	else
		fail "dump --json check: $(head -n 3 json.check | tr '\n' '|')"
	fi
else
	skip "python3 not found in PATH (needed to parse dump --json)"
fi
grep -q '"type":"thread-name".*"name":"worker-0"' dump.jsonl && ok "JSON thread-name objects carry worker-0" ||
	fail "no JSON thread-name object for worker-0"

# A truncated spool: the intact prefix, then a final object that says so.
size=$(wc -c <t.spool)
head -c $((size - 5)) t.spool >cut.spool
with_timeout 60 "$SP" dump --json cut.spool >cut.jsonl 2>cut.err
st=$?
last=$(tail -n 1 cut.jsonl)
case $last in
'{"type":"truncated","records":'*) [ $st -eq 0 ] && ok "truncated spool: exit 0, last object $last" || fail "dump --json of a truncated spool exited $st" ;;
*) fail "dump --json of a truncated spool ends with: $last (exit $st)" ;;
esac
grep -q "ends mid-record" cut.err && ok "truncated spool: warning on stderr" || fail "no truncation warning: $(head -c 200 cut.err)"

# dump of a missing spool: the usual error.
with_timeout 30 "$SP" dump x.spool >/dev/null 2>err.txt
st=$?
[ $st -eq 1 ] && grep -qF "stackpulse dump: cannot open spool 'x.spool'" err.txt && ok "dump on a missing spool: $(head -n 1 err.txt)" ||
	fail "dump on a missing spool exited $st: $(head -n 1 err.txt)"
finish
