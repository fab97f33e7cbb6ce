# SPDX-License-Identifier: MIT
# Continuous recording (docs/DESIGN.md, decision 13): record --segments writes complete
# segment spools, renamed into place when finished, and --retain deletes the oldest;
# report DIR reads them as one profile and --time picks the segments a window needs; a
# recorder killed with SIGKILL leaves every published segment whole.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload chain4
need_workload three_funcs

# folded_sum FILES...: every stack's count summed over folded files, sorted.
folded_sum() {
	cat "$@" | awk '{ n = $NF; s = $0; sub(/[ \t]+[0-9]+[ \t]*$/, "", s); a[s] += n }
		END { for (k in a) print k " " a[k] }' | sort
}
# published DIR: the final names of DIR's segments, oldest first.
published() {
	ls "$1" 2>/dev/null | grep -E '^stackpulse-[0-9]{8}T[0-9]{6}\.[0-9]{3}Z-[0-9]+\.spool$'
}
# whole SPOOL: "1" when SPOOL reads to its end and has its summary trailer.
whole() {
	"$SP" dump "$1" 2>/dev/null | awk '/^summary / { s = 1 } /^truncated/ { t = 1 }
		END { print (s && !t) ? 1 : 0 }'
}
# epoch NAME: a segment name's start as seconds since the epoch (ms precision).
epoch() {
	t=$(echo "$1" | sed -E 's/^stackpulse-([0-9]{4})([0-9]{2})([0-9]{2})T([0-9]{2})([0-9]{2})([0-9]{2})\.([0-9]{3})Z-.*/\1-\2-\3T\4:\5:\6.\7Z/')
	date -u -d "$t" +%s.%3N
}
iso() {
	date -u -d "@$1" +%Y-%m-%dT%H:%M:%S.%3NZ
}

# 1. Segments of 1 s kept for 4 s over 7 s of a busy program: never more than 5 final
#    names (4 s of ended segments and the one just published), each whole when it appears.
"$SP" record --segments segs --segment 1 --retain 4s -d 7 -- "$WORKLOADS/chain4" -t 60 \
	>/dev/null 2>record.err &
rec=$!
track_pid "$rec"
most=0
bad=
checked=" "
while kill -0 "$rec" 2>/dev/null; do
	names=$(published segs)
	n=$(echo "$names" | grep -c . || true)
	[ "$n" -gt "$most" ] && most=$n
	for f in $names; do
		case $checked in *" $f "*) continue ;; esac
		# retention may delete it first: only a file still there counts
		w=$(whole "segs/$f")
		[ "$w" = 1 ] || [ ! -e "segs/$f" ] || bad="$bad $f"
		checked="$checked$f "
	done
	sleep 0.2
done
wait "$rec"
rc=$?
[ "$rc" = 0 ] && ok "record --segments exited 0" || fail "record --segments exited $rc: $(head -c 300 record.err)"
[ "$most" -le 5 ] && ok "at most $most segments there at once while recording (retention keeps 5)" ||
	fail "$most segments there at once: retention of 4 s with 1 s segments keeps 5"
seen=$(echo "$checked" | wc -w)
[ "$seen" -ge 5 ] && ok "$seen segments published over 7 s" || fail "only $seen segments published over 7 s"
[ -z "$bad" ] && ok "every segment under a final name was whole when it appeared ($seen checked)" ||
	fail "segments under a final name without their trailer:$bad"
ls -a segs | grep -q '\.partial$' && fail "a partial file is left after a clean end: $(ls -a segs)" ||
	ok "no partial file left after the recording ended"
grep -q 'segments: .* deleted by --retain' record.err && ok "the summary counts the segments" ||
	fail "no segment line in record's summary: $(tail -3 record.err)"

# 2. report DIR is the union of its segments.
names=$(published segs)
n=$(echo "$names" | grep -c .)
for f in $names; do "$SP" report --format=folded "segs/$f" >"$f.folded" 2>/dev/null; done
folded_sum ./*.folded >union.txt
"$SP" report --format=folded segs >dir.raw 2>dir.err || fail "report DIR exited $?: $(head -c 300 dir.err)"
folded_sum dir.raw >dir.txt
total=$(awk '{ t += $NF } END { print t + 0 }' dir.txt)
if [ "$total" -gt 0 ] && cmp -s union.txt dir.txt; then
	ok "report DIR equals the sum of its $n segments' folded stacks ($total samples)"
else
	fail "report DIR ($total samples) differs from the sum of its $n segments: $(diff union.txt dir.txt | head -5)"
fi
set -- $(folded_share dir.raw ';level4$')
share_at_least "report DIR:" 95 "$1" "$2" "samples in level4"

# 2b. dump DIR: each segment, oldest first, under a line naming it, then what dump of
# that file prints; --json the same as JSON Lines.
"$SP" dump segs >dir.dump 2>dump.err || fail "dump DIR exited $?: $(head -c 300 dump.err)"
: >want.dump
for f in $names; do printf 'segment name="%s"\n' "$f" >>want.dump; "$SP" dump "segs/$f" >>want.dump; done
got=$(grep -c '^segment name=' dir.dump)
if [ "$got" = "$n" ] && cmp -s want.dump dir.dump; then
	ok "dump DIR prints its $n segments in order, each under a 'segment name=' line, as dump of each file"
else
	fail "dump DIR: $got segment lines for $n segments: $(diff want.dump dir.dump | head -5)"
fi
"$SP" dump --json segs >dir.jsonl 2>/dev/null
jn=$(grep -c '^{"type":"segment","name":"stackpulse-[0-9T.Z-]*\.spool"}$' dir.jsonl)
[ "$jn" = "$n" ] && [ "$(wc -l <dir.jsonl)" = "$(wc -l <dir.dump)" ] &&
	ok "dump --json DIR: a {\"type\":\"segment\"} line before each of the $n segments, a line per text line" ||
	fail "dump --json DIR: $jn segment lines for $n segments, $(wc -l <dir.jsonl) vs $(wc -l <dir.dump) lines"
mkdir nosegs
"$SP" dump nosegs >/dev/null 2>nosegs.err && fail "dump of a directory without segments exited 0" ||
	{ grep -q 'without segments: give a spool file' nosegs.err &&
		ok "dump of a directory without segments says to give a spool file" ||
		fail "dump of an empty directory: $(cat nosegs.err)"; }

# 3. --time over the second and third segments (wall clock) reads just those two.
set -- $names
if [ $# -ge 4 ]; then
	s2=$(epoch "$2") s4=$(epoch "$4")
	from=$(iso "$(awk -v t="$s2" 'BEGIN { printf "%.3f", t + 0.002 }')")
	to=$(iso "$s4")
	"$SP" report --format=folded --time "$from,$to" segs >win.raw 2>win.err ||
		fail "report --time exited $?: $(head -c 300 win.err)"
	grep -q "read 2 of the $n segments" win.err && ok "--time $from,$to read 2 of the $n segments" ||
		fail "--time $from,$to: $(cat win.err)"
	"$SP" report --time "$from,$to" segs 2>/dev/null | grep -q "^Filters: *time $from to $to (2 of $n segments read)" &&
		ok "the header gives the window in UTC and the segments read" ||
		fail "header: $("$SP" report --time "$from,$to" segs 2>&1 | grep -A1 '^Filters')"
	folded_sum "$2.folded" "$3.folded" >two.txt
	want=$(awk '{ t += $NF } END { print t + 0 }' two.txt)
	got=$(awk '{ t += $NF } END { print t + 0 }' win.raw)
	info "--time window: $got samples, the two segments hold $want"
	[ "$got" -le "$want" ] && [ "$(num_ge "$got" "$(awk -v w="$want" 'BEGIN { print w * 0.9 }')")" = 1 ] &&
		ok "--time's samples are those of its two segments ($got of $want)" ||
		fail "--time gave $got samples, its two segments hold $want"
	# A window before every segment: a note, no sample, exit 0, as for a spool.
	early=$(iso "$(awk -v t="$(epoch "$1")" 'BEGIN { printf "%.3f", t - 100 }')")
	late=$(iso "$(awk -v t="$(epoch "$1")" 'BEGIN { printf "%.3f", t - 50 }')")
	"$SP" report --time "$early,$late" segs >none.out 2>none.err
	rc=$?
	[ "$rc" = 0 ] && grep -q "none of the $n segments of 'segs' lies in the --time window" none.err &&
		! grep -q 'cannot read' none.err && grep -q '^No samples\.' none.out &&
		ok "a window missing every segment: one note, No samples., exit 0" ||
		fail "a window missing every segment exited $rc: $(cat none.err; tail -2 none.out)"
else
	fail "only $# segments left to choose a window from"
fi

# 4. A restart goes on in the same directory; SIGKILL mid-segment leaves the published
#    segments whole and the partial one named and read as far as it goes.
last=$(published segs | tail -1 | sed -E 's/.*-0*([0-9]+)\.spool$/\1/')
"$SP" record --segments segs --segment 1 -- "$WORKLOADS/chain4" -t 60 >/dev/null 2>kill.err &
rec=$!
track_pid "$rec"
i=0
while [ "$(published segs | wc -l)" -lt $((n + 2)) ] && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
sleep 0.3
kids=$(pgrep -P "$rec")
kill -KILL "$rec"
wait "$rec" 2>/dev/null
for k in $kids; do kill -KILL "$k" 2>/dev/null; done
first=$(published segs | sed -E 's/.*-0*([0-9]+)\.spool$/\1/' | awk -v l="$last" '$1 > l' | head -1)
[ -n "$first" ] && [ "$first" -eq $((last + 1)) ] && ok "the restart went on with segment $first after $last" ||
	fail "the restart's first segment is '$first', expected $((last + 1))"
broken=
for f in $(published segs); do [ "$(whole "segs/$f")" = 1 ] || broken="$broken $f"; done
[ -z "$broken" ] && ok "after SIGKILL every published segment is whole" || fail "after SIGKILL, not whole:$broken"
partial=$(ls -a segs | grep '^\.stackpulse-.*\.partial$')
[ -n "$partial" ] && ok "the segment being written is left as '$partial'" ||
	fail "no partial segment after SIGKILL: $(ls -a segs)"
"$SP" report --format=folded segs >killed.raw 2>killed.err || fail "report DIR after SIGKILL exited $?: $(head -c 300 killed.err)"
grep -q "cut short" killed.err && ok "report names the cut segment: $(grep 'cut short' killed.err | head -1 | cut -c1-120)" ||
	fail "report did not name the partial segment: $(cat killed.err)"
# The cut segment has no trailer: the counters count its records, as the samples shown do.
"$SP" report segs >killed.txt 2>/dev/null
shown=$(sed -n 's/^Samples: *\([0-9]*\).*/\1/p' killed.txt)
written=$(sed -n 's/^Counters: .* \([0-9]*\) written.*/\1/p' killed.txt)
[ -n "$shown" ] && [ "$shown" = "$written" ] && ok "with a cut segment, Counters' $written written match the $shown samples shown" ||
	fail "Samples '$shown' and Counters' written '$written' differ: $(grep -E '^(Samples|Counters)' killed.txt | tr '\n' ' ')"
# ... and a later recording's retention deletes it once it is past the retention, as a
# published one (no recorder holds its lock any more); the recording's own partial stays.
sleep 1.2
"$SP" record -q --segments segs --segment 1 --retain 1s -d 3 -- "$WORKLOADS/chain4" -t 60 >/dev/null 2>retain2.err
[ ! -e "segs/$partial" ] && ok "a later recording's retention deleted the killed one's '$partial'" ||
	fail "'$partial' is still there after a recording with --retain 1s: $(ls -a segs | tr '\n' ' ')"

# 5. report --follow DIR follows each segment as it is written, then the next.
"$SP" record --segments fseg --segment 1 -d 3 -q -- "$WORKLOADS/chain4" -t 60 >/dev/null 2>&1 &
track_pid $!
i=0
while ! ls -a fseg 2>/dev/null | grep -q '\.partial$' && [ $i -lt 100 ]; do
	sleep 0.05
	i=$((i + 1))
done
with_timeout 30 "$SP" report --follow=0.3 --rows 2 fseg >follow.out 2>follow.err
rc=$?
followed=$(sed -n 's/^--- fseg\/\(stackpulse-[^:/]*\.spool\): .*/\1/p' follow.out | sort -u | wc -l)
[ "$rc" = 0 ] && [ "$followed" -ge 2 ] && ok "report --follow DIR followed $followed segments in turn" ||
	fail "report --follow DIR exited $rc after $followed segments: $(head -c 300 follow.err)"
# Headers name a segment as published, say when it is finished, and the end once, at the end.
grep '^--- ' follow.out | grep -q 'partial' && fail "a header names a partial file: $(grep -m1 partial follow.out)" ||
	ok "headers name segments by their published names"
finished=$(grep -c '(segment finished) ---$' follow.out)
over=$(grep -c '(recording over) ---$' follow.out)
[ "$finished" -ge $((followed - 1)) ] && [ "$over" = 1 ] && grep '^--- ' follow.out | tail -1 | grep -q '(recording over)' &&
	ok "'segment finished' $finished times, 'recording over' once, at the end" ||
	fail "'segment finished' $finished times, 'recording over' $over times over $followed segments"
# A stop just after a rotation publishes no segment of nothing (-d 3 with 1 s segments).
empty=""
for f in $(published fseg); do
	"$SP" report --format=folded "fseg/$f" 2>/dev/null | awk '{ n += $NF } END { exit n > 0 ? 1 : 0 }' &&
		empty="$empty $f"
done
[ -z "$empty" ] && ok "every published segment holds samples ($(published fseg | wc -l))" ||
	fail "published with no sample:$empty"
# 6. Copies of a program without a build-id are one module in each segment and in DIR: a
# segment names a copy's first by the id that first has in that segment.
if command -v objcopy >/dev/null 2>&1 &&
	objcopy --remove-section .note.gnu.build-id "$WORKLOADS/three_funcs" nobid1 2>/dev/null; then
	cp nobid1 nobid2
	mkdir -m 700 cseg
	"$SP" record --segments cseg --segment 1 -q -- sh -c "./nobid1 -n 1500 & sleep 0.3; ./nobid2 -n 1500 & wait" \
		>/dev/null 2>cseg.err || fail "record --segments of two copies exited $?: $(head -c 300 cseg.err)"
	"$SP" report --format=folded cseg >cseg.folded 2>cseg.rerr ||
		fail "report DIR of two copies exited $?: $(head -c 300 cseg.rerr)"
	one=$(grep 'compute_hash' cseg.folded | awk '{ n += $NF } END { print n + 0 }')
	all=$(awk '{ n += $NF } END { print n + 0 }' cseg.folded)
	rows=$("$SP" report --rows 20 --stacks 0 cseg 2>/dev/null | grep -c ' compute_hash ')
	[ "$rows" = 1 ] && ok "the two copies' compute_hash is one row in report DIR" ||
		fail "compute_hash shows in $rows rows of report DIR"
	share_at_least 25 "$one" "$all" "DIR's samples in compute_hash"
	n=$(published cseg | wc -l)
	[ "$n" -ge 2 ] && ok "the copies ran across $n segments" || info "the copies fit in $n segment"
else
	skip "objcopy cannot remove the build-id here: copies without one not checked"
fi
# 7. An unprivileged user's --segments into root's directory (mode 755) is refused before the
# command starts, as a directory it may not write, not as perf events it may not open.
rootdir=$(mktemp -d /tmp/sp-e2e85-XXXXXX) && chmod 755 "$rootdir"
as_nobody=""
if setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; then
	as_nobody="setpriv --reuid=65534 --regid=65534 --clear-groups"
fi
if [ -z "$as_nobody" ] || [ "$(id -u)" != 0 ] || ! $as_nobody "$SP" --help >/dev/null 2>&1; then
	skip "no way to run stackpulse as uid 65534 here (setpriv, root): unwritable directory not checked"
else
	(cd / && $as_nobody "$SP" record --segments "$rootdir" --segment 1 -- /bin/sh -c 'echo started') \
		>nobody.out 2>nobody.err
	rc=$?
	[ "$rc" != 0 ] && grep -q "cannot record segments into '$rootdir': Permission denied: choose a directory you may write" nobody.err &&
		! grep -q 'perf events' nobody.err && ! grep -q started nobody.out &&
		ok "an unwritable segment directory is refused as such, before the command starts" ||
		fail "record --segments into root's 755 directory as nobody exited $rc: $(head -c 300 nobody.err)"
	[ -z "$(ls -A "$rootdir")" ] && ok "nothing was left in it" || fail "left in it: $(ls -A "$rootdir")"
fi
rmdir "$rootdir" 2>/dev/null
finish
