# SPDX-License-Identifier: MIT
# report --format=flamegraph: a self-contained interactive SVG.  xmllint checks it is
# well-formed XML; its frames, read back, give exactly the folded view's stacks and
# chain4's hot function level4 as the widest leaf-level frame; --no-inline and --lines
# change it as they change the folded view; headless Chromium (tests/browser) zooms,
# searches and hovers it and saves a screenshot under tests/e2e/out/37-flamegraph/.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload chain4

shots=$REPO/tests/e2e/out/37-flamegraph
mkdir -p "$shots"

sp_record c.spool -F 999 -- "$WL" -t 2 >/dev/null || { fail "record failed: $(head -c 300 record.err)"; finish; }
samples=$(summary_number record.err samples)
info "recorded $samples samples of chain4"

with_timeout 60 "$SP" report --format=flamegraph -o c.svg c.spool 2>err.txt
st=$?
[ $st -eq 0 ] && [ -s c.svg ] && ok "report --format=flamegraph -o writes a file ($(wc -c <c.svg) bytes)" ||
	fail "report --format=flamegraph exited $st: $(head -c 300 err.txt)"
with_timeout 60 "$SP" report --format=flamegraph c.spool >again.svg 2>/dev/null
cmp -s c.svg again.svg && ok "the same spool gives the same bytes (-o and stdout alike)" ||
	fail "two flame graphs of one spool differ: $(cmp c.svg again.svg 2>&1 | head -c 200)"
cp c.svg "$shots/chain4.svg"

if command -v xmllint >/dev/null 2>&1; then
	xmllint --noout c.svg 2>xml.err && ok "xmllint: the SVG is well-formed XML" ||
		fail "xmllint rejects the SVG: $(head -c 400 xml.err)"
else
	skip "xmllint not found (Debian libxml2-utils): the SVG is not checked as XML"
fi

# Self-contained: no reference to anything outside the file.
ext=$(grep -Eo '(href|src)="[^"#][^"]*"|url\([^)#][^)]*\)|@import' c.svg | head -n 3)
[ -z "$ext" ] && ok "no external resource (href, src, url(), @import)" ||
	fail "the SVG refers to outside resources: $ext"
grep -q '<script' c.svg && grep -q '<style' c.svg && ok "script and style are inline" ||
	fail "the SVG has no inline script or style"

# Read the frames back: each frame's self samples (its count less its children's) give
# the folded stacks "root;...;leaf SELF"; the widest leaf-level frame is the hot function.
# Usage: svgfold SVG [lines] -> folded lines on stdout, "#hot NAME SELF TOTAL" on stderr.
cat >svgfold.py <<'EOF'
import sys
import xml.etree.ElementTree as ET
from collections import Counter
NS = "{http://www.w3.org/2000/svg}"
lines = len(sys.argv) > 2
frames = []
for g in ET.parse(sys.argv[1]).getroot().iter(NS + "g"):
    cls = (g.get("class") or "").split()
    if "f" not in cls:
        continue
    name = g.get("data-n")
    if lines and g.get("data-l"):
        name += ":" + g.get("data-l").rsplit(":", 1)[1]
    if "inline" in cls:
        name += "_[i]"
    frames.append((int(g.get("data-d")), int(g.get("data-s")), int(g.get("data-c")), name, cls[1]))
# Depth first, parents before children: a frame's parent is the last frame one level up.
path, self_of, out, total = [], [], Counter(), 0
def close(to):
    while len(path) > to:
        if self_of[-1] > 0 and len(path) > 1:
            out[";".join(path[1:])] += self_of[-1]
        path.pop(); self_of.pop()
for d, s, c, name, kind in frames:
    close(d)
    if len(path) != d:
        sys.exit("frame %s at depth %d has no parent" % (name, d))
    if self_of:
        self_of[-1] -= c
    path.append(name); self_of.append(c)
    if d == 0:
        total = c
close(0)
for k in sorted(out):
    print(k, out[k])
leaf = Counter()
for k, n in out.items():
    leaf[k.rsplit(";", 1)[-1]] += n
hot = leaf.most_common(1)[0] if leaf else ("-", 0)
print("#hot", hot[0], hot[1], total, file=sys.stderr)
EOF

if command -v python3 >/dev/null 2>&1; then
	refold() {
		sed 's/_\[i\]//g' | awk '{ n = $NF; s = $0; sub(/ [0-9]+$/, "", s); c[s] += n }
			END { for (k in c) print k, c[k] }' | sort
	}
	python3 svgfold.py c.svg >svg.folded 2>hot.txt
	set -- $(grep '^#hot' hot.txt)
	if [ "${2:-}" = level4 ]; then
		ok "the widest leaf-level frame is level4 ($3 of $4 samples)"
	else
		fail "the widest leaf-level frame is '${2:-}': $(head -c 300 hot.txt)"
	fi
	[ -n "$samples" ] && [ "${4:-0}" -eq "$samples" ] && ok "the root frame holds the $samples samples recorded" ||
		fail "the root frame holds ${4:-?} samples, record wrote ${samples:-?}"
	with_timeout 60 "$SP" report --format=folded c.spool 2>/dev/null | refold >folded.txt
	refold <svg.folded >svg.txt
	[ -s svg.txt ] && cmp -s folded.txt svg.txt && ok "the flame graph's stacks are exactly report --format=folded's" ||
		fail "flame graph and folded differ: $(diff folded.txt svg.txt | head -n 4 | tr '\n' ' ')"
	grep -q 'main;level1;level2;level3;level4 ' svg.txt && ok "main;level1;level2;level3;level4 is a stack of the graph" ||
		fail "no main..level4 stack in the graph: $(head -n 3 svg.txt | tr '\n' ' ')"
else
	skip "python3 not found: the SVG's frames are not read back"
fi

grep -q 'data-n="level4" data-m="chain4"' c.svg && ok "level4 is a frame, with its module chain4" ||
	fail "no level4 frame of chain4 in the SVG"
grep -q '<text class="head" xml:space="preserve" x="10" y="44">Command: ' c.svg &&
	grep -Eq "Samples: $samples \\(lost [0-9]+\\)   Truncated: [0-9.]+%" c.svg &&
	ok "the header shows the command, samples, lost and truncated share" ||
	fail "header missing: $(grep -m 2 'class="head"' c.svg | head -c 300)"

# Spools cut anywhere: still a well-formed SVG, or a clear error; never a crash.
size=$(wc -c <c.spool)
bad=0
for frac in 5 40 90; do
	head -c $((size * frac / 100)) c.spool >cut.spool
	with_timeout 60 "$SP" report --format=flamegraph -o cut.svg cut.spool 2>/dev/null
	st=$?
	if [ $st -gt 1 ]; then
		bad=$((bad + 1)); info "cut at $frac%: status $st"
	elif [ $st -eq 0 ] && command -v xmllint >/dev/null 2>&1 && ! xmllint --noout cut.svg 2>/dev/null; then
		bad=$((bad + 1)); info "cut at $frac%: not well-formed"
	fi
done
[ $bad -eq 0 ] && ok "flame graphs of spools cut at 5, 40, 90% are well-formed or a clean error" ||
	fail "$bad flame graphs of cut spools crashed or were malformed"

# --- inline frames: --no-inline and --lines as in the folded view ---------------------

if [ -x "$WORKLOADS/inline_chain" ] && command -v python3 >/dev/null 2>&1; then
	sp_record i.spool -F 999 -- "$WORKLOADS/inline_chain" -t 1 >/dev/null
	"$SP" report --format=flamegraph -o i.svg i.spool 2>/dev/null
	"$SP" report --format=flamegraph --no-inline -o ni.svg i.spool 2>/dev/null
	"$SP" report --format=flamegraph --lines -o li.svg i.spool 2>/dev/null
	grep -q 'class="f inline" [^>]*data-n="mix_inner"' i.svg &&
		ok "inlined mix_inner is a frame of kind inline" || fail "no inline mix_inner frame"
	! grep -q 'class="f inline"' ni.svg && ! grep -q 'data-n="mix_inner"' ni.svg &&
		grep -q 'data-n="hot_caller"' ni.svg &&
		ok "--no-inline: no inline frames, hot_caller holds their samples" ||
		fail "--no-inline still shows inline frames"
	for v in "i.svg" "ni.svg --no-inline" "li.svg --lines"; do
		set -- $v
		lines=
		[ "${2:-}" = --lines ] && lines=lines
		python3 svgfold.py "$1" $lines 2>/dev/null | refold >a.txt
		"$SP" report --format=folded ${2:-} i.spool 2>/dev/null | refold >b.txt
		[ -s a.txt ] && cmp -s a.txt b.txt && ok "flame graph ${2:-(default)} has the folded view's stacks" ||
			fail "flame graph ${2:-} and folded differ: $(diff a.txt b.txt | head -n 4 | tr '\n' ' ')"
	done
	grep -Eq 'data-n="mix_inner" data-m="inline_chain" data-l="inline_chain.c:[0-9]+"' li.svg &&
		ok "--lines: frames carry their source file and line" ||
		fail "--lines: no data-l on mix_inner: $(grep -o 'data-n="mix_inner"[^>]*' li.svg | head -n 2)"
else
	skip "inline_chain workload or python3 missing: --no-inline and --lines not checked"
fi

# --- in a browser ------------------------------------------------------------------------

# A branching profile (three system calls with kernel frames above them) so a zoom shows.
if [ -x "$WORKLOADS/syscall_loop" ]; then
	sp_record s.spool -k -F 999 -- "$WORKLOADS/syscall_loop" -t 1 >/dev/null
	"$SP" report --format=flamegraph -o s.svg s.spool 2>/dev/null
	cp s.svg "$shots/syscall_loop.svg"
	grep -q 'class="f kernel"' s.svg && ok "kernel frames are drawn as kind kernel" ||
		info "no kernel frames in the syscall_loop graph (kernel sampling denied?)"
fi

if ! command -v node >/dev/null 2>&1; then
	skip "node not found (Debian nodejs): the flame graph was not opened in a browser"
elif [ ! -d "$REPO/tests/browser/node_modules/playwright-core" ]; then
	skip "playwright-core not installed: run 'npm ci' in tests/browser (scripts/install-deps does)"
elif [ ! -s s.svg ]; then
	fail "no syscall_loop flame graph for the browser test"
else
	rm -f "$shots/flamegraph.png"
	(cd "$REPO/tests/browser" && with_timeout 180 node flamegraph.mjs "$TMP/s.svg" write_null get_pid \
		"$shots/flamegraph.png") >browser.txt 2>&1
	st=$?
	cat browser.txt
	grep -q '^FAIL' browser.txt || [ $st -eq 0 ] || fail "the browser test exited $st: $(tail -c 300 browser.txt)"
	if grep -q '^ok: screenshot saved' browser.txt; then
		[ -s "$shots/flamegraph.png" ] && [ "$(od -An -c -N4 "$shots/flamegraph.png" | tr -d ' ')" = '211PNG' ] &&
			ok "the screenshot is a PNG ($(wc -c <"$shots/flamegraph.png") bytes)" ||
			fail "no PNG screenshot at $shots/flamegraph.png"
	fi
	# The chain4 graph too (every frame spans the width there: nothing to zoom into).
	(cd "$REPO/tests/browser" && with_timeout 180 node flamegraph.mjs "$TMP/c.svg" - level4 \
		"$shots/chain4.png") >browser2.txt 2>&1
	st=$?
	sed 's/^\(ok\|FAIL\|skip\): /\1: chain4: /' browser2.txt
	grep -q '^FAIL' browser2.txt || [ $st -eq 0 ] || fail "the chain4 browser test exited $st: $(tail -c 300 browser2.txt)"
fi
finish
