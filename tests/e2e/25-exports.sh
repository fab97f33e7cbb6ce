# SPDX-License-Identifier: MIT
# report --format=pprof|speedscope|perf-script: each read back by the tools that import
# it (go tool pprof; ajv with speedscope's published schema; the speedscope app itself in
# headless Chromium for the JSON and the perf-script text), on a recording of chain4,
# whose hot function level4 must top each export.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload chain4

sp_record p.spool -F 999 -- "$WL" -t 1 >/dev/null || { fail "record failed: $(head -c 300 record.err)"; finish; }
samples=$(summary_number record.err samples)
info "recorded $samples samples"

for f in pprof speedscope perf-script; do
	with_timeout 60 "$SP" report --format=$f -o "out.$f" p.spool 2>"err.$f"
	st=$?
	if [ $st -eq 0 ] && [ -s "out.$f" ]; then
		ok "report --format=$f -o writes a file"
	else
		fail "report --format=$f exited $st: $(head -c 300 "err.$f")"
	fi
	with_timeout 60 "$SP" report --format=$f p.spool >"again.$f" 2>/dev/null
	cmp -s "out.$f" "again.$f" && ok "$f: the same spool gives the same bytes (-o and stdout alike)" ||
		fail "$f: two exports of one spool differ"
done

with_timeout 30 "$SP" report --format=svgz p.spool >/dev/null 2>err.txt
st=$?
[ $st -eq 2 ] && grep -q "perf-script" err.txt && ok "an unknown format is a usage error naming the formats" ||
	fail "--format=svgz exited $st: $(head -c 200 err.txt)"

# Spools cut anywhere (a recording killed mid-write): every export still works, no crash.
size=$(wc -c <p.spool)
crashes=0
for frac in 3 20 50 80 97; do
	head -c $((size * frac / 100)) p.spool >cut.spool
	for f in pprof speedscope perf-script; do
		with_timeout 60 "$SP" report --format=$f -o cut.out cut.spool 2>/dev/null
		st=$?
		[ $st -le 1 ] || { crashes=$((crashes + 1)); info "cut at $frac%, $f: status $st"; }
	done
done
[ $crashes -eq 0 ] && ok "exports of spools cut at 3..97% end with status 0 or 1" ||
	fail "$crashes exports of cut spools crashed or hung"

# --- pprof --------------------------------------------------------------------------

magic=$(od -An -tx1 -N2 out.pprof | tr -d ' ')
[ "$magic" = 1f8b ] && ok "pprof output is gzip" || fail "pprof output starts with '$magic', not gzip's 1f8b"
if command -v gzip >/dev/null 2>&1; then
	gzip -t <out.pprof && ok "pprof gzip stream is intact (gzip -t)" || fail "gzip -t rejects the pprof output"
fi

if command -v go >/dev/null 2>&1 && go tool pprof -h >/dev/null 2>&1; then
	with_timeout 120 go tool pprof -top out.pprof >top.txt 2>top.err
	st=$?
	top=$(awk '/flat%/ && /cum%/ { t = 1; next }
		   t { sub(/^ *[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +/, ""); print; exit }' top.txt)
	if [ $st -eq 0 ] && [ "$top" = level4 ]; then
		ok "go tool pprof -top lists level4 first"
	else
		fail "go tool pprof -top (status $st) lists '$top' first: $(head -c 400 top.err) $(head -n 12 top.txt)"
	fi
	with_timeout 120 go tool pprof -raw out.pprof >raw.txt 2>raw.err
	# -raw: "Samples:", the value names, then "COUNT NANOS: LOCATION-IDS" and label lines.
	total=$(awk '/^Samples:/ { s = 1; next } /^Locations/ { s = 0 }
		     s && $2 ~ /^[0-9]+:$/ { n += $1 } END { print n + 0 }' raw.txt)
	if [ -n "$samples" ] && [ "$total" -eq "$samples" ]; then
		ok "pprof sample counts add up to the $samples samples recorded"
	else
		fail "pprof sample counts add up to $total, record wrote ${samples:-?}"
	fi
	grep -q 'samples/count cpu/nanoseconds' raw.txt && grep -q '^PeriodType: cpu nanoseconds' raw.txt &&
		ok "pprof sample types samples/count, cpu/nanoseconds; period type cpu/nanoseconds" ||
		fail "pprof types wrong: $(head -n 8 raw.txt)"
	grep -Eq 'pid:\[[0-9]+\] tid:\[[0-9]+\]' raw.txt && grep -q 'thread:\[chain4\]' raw.txt &&
		ok "pprof samples carry pid, tid and thread labels" || fail "pprof labels missing: $(sed -n '/^Samples/,/^Locations/p' raw.txt | head -n 6)"
	grep -Eq '^[0-9]+: 0x[0-9a-f]+/0x[0-9a-f]+/0x[0-9a-f]+ .*chain4 [0-9a-f]{40}' raw.txt &&
		ok "pprof maps chain4 with its build-id" || fail "no chain4 mapping with a build-id: $(sed -n '/^Mappings/,$p' raw.txt | head -n 4)"
else
	skip "'go' not found or without 'go tool pprof' (Debian golang-go): pprof not read back"
fi

# --- speedscope -----------------------------------------------------------------------

if command -v python3 >/dev/null 2>&1; then
	python3 - out.speedscope >ss.txt 2>&1 <<'EOF'
import json, sys
from collections import Counter
try:
    d = json.load(open(sys.argv[1], encoding="utf-8"))
    assert d["$schema"] == "https://www.speedscope.app/file-format-schema.json", "schema URL"
    frames = d["shared"]["frames"]
    assert all(isinstance(f.get("name"), str) for f in frames), "frame without a name"
    assert d["profiles"], "no profiles"
    leaf, n = Counter(), 0
    for p in d["profiles"]:
        assert p["type"] == "sampled" and p["unit"] == "nanoseconds", "profile type or unit"
        assert len(p["samples"]) == len(p["weights"]), "samples and weights differ in length"
        assert p["endValue"] - p["startValue"] == sum(p["weights"]), "endValue - startValue != total weight"
        for s, w in zip(p["samples"], p["weights"]):
            assert all(isinstance(i, int) and 0 <= i < len(frames) for i in s), "frame index out of range"
            assert w > 0, "weight not positive"
            leaf[frames[s[-1]]["name"] if s else "[empty]"] += w
            n += 1
    assert 0 <= d.get("activeProfileIndex", 0) < len(d["profiles"]), "activeProfileIndex"
    print("OK", leaf.most_common(1)[0][0], n, len(d["profiles"]))
except Exception as e:
    print("ERR", repr(e))
EOF
	set -- $(cat ss.txt)
	if [ "${1:-}" = OK ] && [ "$2" = level4 ]; then
		ok "speedscope JSON parses, its structure holds, and its heaviest leaf is level4"
	else
		fail "speedscope check: $(head -c 300 ss.txt)"
	fi
	[ "${1:-}" = OK ] && [ -n "$samples" ] && [ "$3" -eq "$samples" ] &&
		ok "speedscope holds the $samples samples in $4 profile(s)" ||
		fail "speedscope holds ${3:-?} samples, record wrote ${samples:-?}"
else
	skip "python3 not found: speedscope JSON not parsed"
fi

# The real schema, the file-format-schema.json the speedscope package ships, checked by
# ajv; both pinned in tests/browser/package-lock.json and installed by scripts/install-deps.
nodedir=$REPO/tests/browser/node_modules
schema=$nodedir/speedscope/dist/release/file-format-schema.json
if ! command -v node >/dev/null 2>&1; then
	skip "node not found (Debian nodejs): speedscope JSON not checked against its schema"
elif [ ! -f "$schema" ] || [ ! -d "$nodedir/ajv" ]; then
	skip "ajv or speedscope not installed: run 'npm ci' in tests/browser (scripts/install-deps does)"
else
	cat >validate.js <<'EOF'
const Ajv = require('ajv');
const fs = require('fs');
const schema = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const data = JSON.parse(fs.readFileSync(process.argv[3], 'utf8'));
const ajv = new Ajv({strict: false, allErrors: true});
if (ajv.validate(schema, data)) {
	console.log('valid');
} else {
	console.log(JSON.stringify(ajv.errors).slice(0, 400));
	process.exit(1);
}
EOF
	out=$(NODE_PATH=$nodedir with_timeout 60 node validate.js "$schema" out.speedscope 2>&1)
	[ "$out" = valid ] && ok "speedscope JSON validates against speedscope's file-format-schema.json (ajv)" ||
		fail "speedscope schema validation: $out"
	# The check can fail: a profile without its required "unit" does not validate.
	sed 's/"unit":"nanoseconds",//' out.speedscope >broken.speedscope
	out=$(NODE_PATH=$nodedir with_timeout 60 node validate.js "$schema" broken.speedscope 2>&1)
	[ "$out" != valid ] && ok "the schema check rejects a profile without its unit" ||
		fail "the schema check accepts a speedscope file without units"
fi

# speedscope's own importer (the app the npm package ships, in headless Chromium) reads
# both the JSON and the perf-script text, and its Sandwich view by self time puts level4 first.
if ! command -v node >/dev/null 2>&1; then
	skip "node not found (Debian nodejs): exports not imported into speedscope"
elif [ ! -d "$nodedir/playwright-core" ] || [ ! -d "$nodedir/speedscope" ]; then
	skip "playwright-core or speedscope not installed: run 'npm ci' in tests/browser (scripts/install-deps does)"
else
	shots=$REPO/tests/e2e/out/25-exports
	mkdir -p "$shots"
	for f in speedscope perf-script; do
		(cd "$REPO/tests/browser" && with_timeout 180 node speedscope.mjs "$TMP/out.$f" level4 \
			"$shots/speedscope-$f.png") >app.txt 2>&1
		st=$?
		sed "s/^\\(ok\\|FAIL\\|skip\\): /\\1: $f: /" app.txt
		grep -q '^FAIL' app.txt || [ $st -eq 0 ] || fail "$f: the speedscope import test exited $st: $(tail -c 300 app.txt)"
	done
fi

# --- perf-script ------------------------------------------------------------------------

# Every sample header has the shape the importers match (speedscope's and stackcollapse-perf's):
# "COMM PID/TID SECONDS.MICROS: PERIOD EVENT:".
bad=$(awk '/^[^\t]/ && !/^[^ \t].*[ \t]+[0-9]+\/[0-9]+[ \t]+[0-9]+\.[0-9][0-9][0-9][0-9][0-9][0-9]:[ \t]+[0-9]+[ \t]+[a-z-]+:$/' out.perf-script | head -n 3)
[ -z "$bad" ] && ok "perf-script sample headers have perf's layout" || fail "perf-script headers not in perf's layout: $bad"
bad=$(awk '/^\t/ && !/^\t +[0-9a-f]+ .+ \([^ ]*\)$/' out.perf-script | head -n 3)
[ -z "$bad" ] && ok "perf-script frame lines are '\\tADDR SYMBOL (MODULE)'" || fail "perf-script frame lines: $bad"

# Fold the way stackcollapse-perf.pl does: strip +0xOFF, root first, one line per stack.
awk '
	function flush(   s, i) {
		if (!inside) return
		s = ""
		for (i = n; i >= 1; i--) s = s (s == "" ? "" : ";") f[i]
		if (s == "") s = "[empty]"
		count[s]++
		inside = 0; n = 0
	}
	/^$/ { flush(); next }
	/^[^\t]/ { flush(); inside = 1; next }
	/^\t/ {
		line = $0
		sub(/^[ \t]*[0-9a-f]+ /, "", line)
		sub(/ \([^ ]*\)$/, "", line)
		sub(/\+0x[0-9a-f]+$/, "", line)
		f[++n] = line
	}
	END { flush(); for (s in count) print s, count[s] }
' out.perf-script >ps.folded
top=$(folded_self ps.folded | head -n 1)
set -- $top
if [ "${3:-}" = level4 ]; then
	ok "perf-script folded like stackcollapse-perf: level4 is the top leaf ($2%)"
else
	fail "perf-script folded: top leaf is '${3:-}' ($top)"
fi
ps_total=$(folded_total ps.folded)
[ -n "$samples" ] && [ "$ps_total" -eq "$samples" ] && ok "perf-script holds the $samples samples recorded" ||
	fail "perf-script holds $ps_total samples, record wrote ${samples:-?}"
grep -Eq ';main;level1;level2;level3;level4 [0-9]+$' ps.folded &&
	ok "perf-script stacks fold to main;level1;level2;level3;level4" ||
	fail "no main..level4 stack in the folded perf-script: $(folded_top ps.folded 2 | tr '\n' ' ')"

# The folded view and the perf-script export agree on every stack's count.  perf
# script's text has no inline mark, so folded's "_[i]" annotations are set aside, and
# an address-only frame ("[unknown]" or "libc.so.6+0x262c0", a start-up sample in a
# function no symbol table names) loses its offset in the fold above, as
# stackcollapse-perf does, where folded keeps it.
with_timeout 60 "$SP" report --format=folded p.spool >folded.txt 2>/dev/null
set -- $(folded_self folded.txt | head -n 1)
[ "${3:-}" = level4 ] && ok "folded: level4 is the top leaf ($2%)" || fail "folded: top leaf is '${3:-}'"
refold() {
	awk '{ n = $NF; s = $0; sub(/ [0-9]+$/, "", s); c[s] += n } END { for (k in c) print k, c[k] }' | sort
}
sed -E 's/_\[i\]//g; s/\+0x[0-9a-f]+(;| )/\1/g' folded.txt | refold >a.txt
refold <ps.folded >b.txt
cmp -s a.txt b.txt && ok "perf-script folds to exactly report --format=folded" ||
	fail "perf-script and folded differ: $(diff a.txt b.txt | head -n 4 | tr '\n' ' ')"
finish
