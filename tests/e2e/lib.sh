# SPDX-License-Identifier: MIT
# Shared helpers for the end-to-end tests: paths, a temp dir per test, result lines,
# and parsers for stackpulse's report, folded and dump output.  Sourced, POSIX sh.
#
# Result protocol (read by tests/e2e/run): every check prints one line starting with
# "ok: ", "FAIL: " or "skip: "; figures for people go on lines starting with "# ".

set -u

E2E_DIR=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$E2E_DIR/../.." && pwd)
WORKLOADS=$REPO/tests/workloads

# The binary under test, made absolute because tests cd into their temp dir.
SP=${STACKPULSE:-./stackpulse}
case $SP in
/*) ;;
*/*) SP=$(cd "$(dirname "$SP")" 2>/dev/null && pwd)/$(basename "$SP") ;;
*) SP=$(command -v "$SP" 2>/dev/null || echo "$SP") ;;
esac

FAILED=0
BG_PIDS=

ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; FAILED=1; }
skip() { echo "skip: $*"; }
info() { echo "# $*"; }

# Skip the rest of this test (it cannot run here) with a reason.
skip_all() {
	skip "$*"
	exit 0
}

# End the test: the exit status tells the runner whether anything failed.
finish() {
	exit "$FAILED"
}

cleanup() {
	for p in $BG_PIDS; do
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	[ -n "${TMP:-}" ] && rm -rf "$TMP"
}

TMP=$(mktemp -d "${TMPDIR:-/tmp}/stackpulse-e2e.XXXXXX") || {
	echo "FAIL: cannot create a temporary directory"
	exit 1
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
cd "$TMP" || exit 1
# Decompressed debug-file copies go to the test's own directory, not the user's cache.
STACKPULSE_CACHE_DIR=$TMP/cache
export STACKPULSE_CACHE_DIR

# Remember a background process so it is killed (by its pid) when the test ends.
track_pid() {
	BG_PIDS="$BG_PIDS $1"
}

# Print "1" when the check "$1 -ge $2" holds for decimal numbers given as strings.
num_ge() {
	awk -v a="$1" -v b="$2" 'BEGIN { print ((a + 0 >= b + 0) ? 1 : 0) }'
}

# Percentage with two decimals: pct MATCHED TOTAL.
pct() {
	awk -v m="$1" -v t="$2" 'BEGIN { if (t + 0 == 0) print "0.00"; else printf "%.2f\n", 100 * m / t }'
}

# share_at_least [LABEL:] MIN MATCHED TOTAL WHAT: the check that MATCHED of TOTAL
# (samples, most often) is at least MIN percent.  Prints one result line,
#   ok: LABEL: 99.60% of WHAT (1992 / 2000, needs >= 95%)
# or the same as a FAIL line, "only 80.00% of WHAT ...".  No TOTAL (0 or empty) fails.
# Returns 1 on failure, so the caller can show more (the other stacks) after it.
share_at_least() {
	sal_label=
	case $1 in *:) sal_label="$1 " && shift ;; esac
	sal_pct=$(pct "${2:-0}" "${3:-0}")
	sal_counts="(${2:-0} / ${3:-0}, needs >= $1%)"
	if [ "${3:-0}" -gt 0 ] && [ "$(num_ge "$sal_pct" "$1")" = 1 ]; then
		ok "$sal_label$sal_pct% of $4 $sal_counts"
	else
		fail "${sal_label}only $sal_pct% of $4 $sal_counts"
		return 1
	fi
}

# --- preconditions -------------------------------------------------------------

# The binary is the product under test: missing is a failure, not a skip.
need_stackpulse() {
	if [ ! -x "$SP" ]; then
		fail "stackpulse binary '$SP' not found or not executable (build it with make, or set STACKPULSE)"
		exit 1
	fi
}

# need_workload NAME: set WL to the workload's path; missing is a build failure.
need_workload() {
	WL=$WORKLOADS/$1
	if [ ! -x "$WL" ]; then
		fail "workload '$1' not built (run make workloads)"
		exit 1
	fi
}

# need_cmd NAME [PURPOSE]: skip the test when a tool it compares with is missing.
need_cmd() {
	command -v "$1" >/dev/null 2>&1 || skip_all "'$1' not found in PATH${2:+ (needed for $2)}"
}

# Recording needs perf_event_open on other tasks: root, CAP_PERFMON, or a low paranoid level.
need_perf_events() {
	if [ ! -e /proc/sys/kernel/perf_event_paranoid ]; then
		skip_all "kernel has no perf events (/proc/sys/kernel/perf_event_paranoid missing)"
	fi
	paranoid=$(cat /proc/sys/kernel/perf_event_paranoid)
	# Level 2 still lets an unprivileged user sample user space of its own processes,
	# which is all recording needs; Debian's level 3 denies every unprivileged use.
	if [ "$(id -u)" != 0 ] && [ "$paranoid" -gt 2 ]; then
		skip_all "perf_event_open not permitted: not root and perf_event_paranoid=$paranoid"
	fi
}

# wait_grep ERE FILE [TENTHS]: wait until FILE has a line matching ERE (at most TENTHS
# tenths of a second, 100 unless given); the status says whether it came.
wait_grep() {
	w=0
	while ! grep -Eq "$1" "$2" 2>/dev/null && [ $w -lt "${3:-100}" ]; do
		sleep 0.1
		w=$((w + 1))
	done
	grep -Eq "$1" "$2" 2>/dev/null
}

# Run a command with a time limit when timeout(1) exists (a hang must not stall CI).
with_timeout() {
	limit=$1
	shift
	if command -v timeout >/dev/null 2>&1; then
		timeout -k 5 "$limit" "$@"
	else
		"$@"
	fi
}

# need_rusage_run: build scripts/rusage-run and set RU to it (RU OUT COMMAND... writes
# the command's wall_s, user_s, sys_s, maxrss_kib and status to OUT); a failed build
# fails the test.  ru_field OUT NAME prints one of those figures.
need_rusage_run() {
	need_cmd make "building scripts/rusage-run"
	with_timeout 300 make -s -C "$REPO" scripts/rusage-run >build.out 2>&1 ||
		{ fail "make scripts/rusage-run failed: $(tail -n 5 build.out)"; finish; }
	RU=$REPO/scripts/rusage-run
}
ru_field() { sed -n "s/.*$2=\([0-9.]*\).*/\1/p" "$1"; }

# --- running stackpulse --------------------------------------------------------

# jit_record SPOOL OUT [COMMAND-PREFIX...]: record jit_perfmap -t 1 ($JIT) into SPOOL, its
# output in OUT; MAP is the perf map it left, removed when the test ends.  Fails the
# test when there is no map.
MAPS=
jit_record() {
	spool=$1
	out=$2
	shift 2
	sp_record "$spool" -F 999 -- "$@" "$JIT" -t 1 >"$out" || { fail "record of jit_perfmap exited $?"; finish; }
	MAP=$(sed -n 's/^jit_perfmap: perf map //p' "$out")
	[ -z "$MAPS" ] && trap 'for m in $MAPS; do rm -f "$m"; done; cleanup' EXIT
	MAPS="$MAPS $MAP"
	[ -f "$MAP" ] || { fail "jit_perfmap left no perf map '$MAP'"; finish; }
}

# traced COMMAND...: COMMAND under strace's eyes.  LeakSanitizer cannot run under
# ptrace (a sanitizer build then aborts at exit), so leak checking is off there.
traced() {
	(
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
		export ASAN_OPTIONS
		"$@"
	)
}

# sp_record SPOOL [RECORD OPTIONS...] -- COMMAND...: record into SPOOL, stderr kept in
# record.err; returns record's exit status.
sp_record() {
	spool=$1
	shift
	with_timeout 120 "$SP" record -o "$spool" "$@" 2>record.err
}

# --- parsing -------------------------------------------------------------------

# folded_share FILE ERE: print "MATCHED TOTAL", the sample counts of folded stacks in
# FILE whose stack (the line without its trailing count) matches the ERE.  The ERE
# comes through the environment so awk does not reinterpret its backslashes.
folded_share() {
	SHARE_RE=$2 awk '
		/^[ \t]*$/ { next }
		{
			n = $NF
			if (n !~ /^[0-9]+$/) { bad++; next }
			s = $0
			sub(/[ \t]+[0-9]+[ \t]*$/, "", s)
			total += n
			if (s ~ ENVIRON["SHARE_RE"]) matched += n
		}
		END { printf "%d %d\n", matched, total }
	' "$1"
}

# leaf_share FOLDED LEAF-ERE WHOLE-ERE: "MATCHED TOTAL" over the stacks holding LEAF-ERE,
# MATCHED those also matching WHOLE-ERE.
leaf_share() {
	LEAF=$2 WHOLE=$3 awk '{
		n = $NF; s = $0; sub(/[ \t]+[0-9]+[ \t]*$/, "", s)
		if (s ~ ENVIRON["LEAF"]) { t += n; if (s ~ ENVIRON["WHOLE"]) c += n }
	} END { printf "%d %d\n", c, t }' "$1"
}

# find_python VERSION: an ELF pythonVERSION with -X perf support, from PATH or pyenv.
find_python() {
	for cand in $(command -v "python$1" 2>/dev/null) "$HOME"/.pyenv/versions/*/bin/python"$1"; do
		[ -x "$cand" ] || continue
		[ "$(head -c 4 "$cand" | od -An -c | tr -d ' ')" = '177ELF' ] || continue
		probe=$(sh -c 'echo $$; exec "$@" 2>/dev/null' sh "$cand" -X perf -c \
			'import sys; print("active" if sys.is_stack_trampoline_active() else "off")')
		set -- $probe
		# The probe's own map, removed now: find_python runs in a command
		# substitution, where MAPS (removed at exit) would not keep it.  A map left
		# behind is old when a later process gets the same pid, and makes that
		# process's map look stale (a node run lost its JIT names that way).
		[ -n "${1:-}" ] && rm -f "/tmp/perf-$1.map"
		[ "${2:-}" = active ] || continue
		echo "$cand"
		return 0
	done
}

# perf_g_share NAME LEAF-ERE WHOLE-ERE COMMAND...: "MATCHED TOTAL" of perf -g's samples
# holding LEAF-ERE, and of those the ones whose stack (root first, ';'-joined) matches
# WHOLE-ERE; nothing when perf cannot record here.  perf's frame-pointer walk ends where
# a caller keeps no frame pointer (glibc's __libc_start_call_main), so its WHOLE-ERE
# does not ask for _start.
perf_g_share() {
	name=$1 leaf=$2 whole=$3
	shift 3
	with_timeout 120 perf record -q -g -F 999 -o "$name.data" -- "$@" >/dev/null 2>&1 || return 0
	perf script -i "$name.data" -F ip,sym 2>/dev/null | LEAF=$leaf WHOLE=$whole awk '
		BEGIN { RS = ""; FS = "\n" }
		{
			s = ""
			for (i = 1; i <= NF; i++) {
				f = $i
				sub(/^[ \t]*[0-9a-f]+ /, "", f)
				s = s == "" ? f : f ";" s
			}
			if (s ~ ENVIRON["LEAF"]) { n++; if (s ~ ENVIRON["WHOLE"]) c++ }
		}
		END { printf "%d %d\n", c, n }'
}

# folded_top FILE N: the N heaviest stacks of a folded file, "count stack" per line.
folded_top() {
	awk '{ n = $NF; s = $0; sub(/[ \t]+[0-9]+[ \t]*$/, "", s); c[s] += n }
	     END { for (s in c) print c[s], s }' "$1" | sort -rn | head -n "$2"
}

# folded_self FILE: leaf function self counts, "count share% name" per line, heaviest first.
folded_self() {
	awk '{ n = $NF; s = $0; sub(/[ \t]+[0-9]+[ \t]*$/, "", s); k = split(s, f, ";")
	       self[f[k]] += n; total += n }
	     END { for (x in self) printf "%d %.2f %s\n", self[x], 100 * self[x] / total, x }' "$1" |
		sort -rn
}

# summary_number FILE WORD: the count printed next to WORD in a summary (record's
# stderr, or a dump summary line): accepts "WORD=N", "WORD: N", "WORD N",
# "WORD written N" (one word between), "N WORD".
summary_number() {
	WORD=$2 awk '
		BEGIN { w = tolower(ENVIRON["WORD"]) }
		{
			line = tolower($0)
			nf = split(line, t, /[ \t,;()]+/)
			for (i = 1; i <= nf; i++) {
				if (t[i] ~ ("^" w "[=:]") ) {
					v = t[i]; sub(/^[^=:]*[=:]/, "", v)
					if (v ~ /^[0-9]+$/) { print v; exit }
					if (v == "" && t[i + 1] ~ /^[0-9]+$/) { print t[i + 1]; exit }
				}
				if (t[i] == w && i > 1 && t[i - 1] ~ /^[0-9]+$/) { print t[i - 1]; exit }
				if (t[i] == w && t[i + 1] ~ /^[0-9]+$/) { print t[i + 1]; exit }
				if (t[i] == w && t[i + 2] ~ /^[0-9]+$/) { print t[i + 2]; exit }
			}
		}
	' "$1"
}

# dump_field LINE-KIND KEY FILE: the values of KEY= on dump lines of LINE-KIND.
dump_field() {
	KIND=$1 KEY=$2 awk '
		$1 == ENVIRON["KIND"] {
			for (i = 2; i <= NF; i++)
				if (index($i, ENVIRON["KEY"] "=") == 1) { print substr($i, length(ENVIRON["KEY"]) + 2); break }
		}
	' "$3"
}

# report_top_function FILE: the Function column of the first row under the flat
# table's "Self%" header (columns: Self% Total% Samples Function Module).
report_top_function() {
	awk '
		/Self%/ && /Total%/ { intable = 1; next }
		intable && /^[ \t]*[-=]*[ \t]*$/ { next }
		intable { print $4; exit }
	' "$1"
}

# Sum of the counts in a folded file.
folded_total() {
	awk '{ t += $NF } END { print t + 0 }' "$1"
}

# pid_samples DUMP: "pid samples" for every pid with samples.
pid_samples() {
	awk '
		function val(k,   i) { for (i = 2; i <= NF; i++) if (index($i, k "=") == 1) return substr($i, length(k) + 2); return "" }
		$1 == "thread" { pid[val("index")] = val("pid") }
		$1 == "sample" { n[pid[val("thread")]]++ }
		END { for (p in n) print p, n[p] }' "$1"
}

# --- load tests ------------------------------------------------------------------

# record_peak_mib ERRFILE: the recorder's peak memory from record's summary ("N MiB peak").
record_peak_mib() {
	sed -n 's/.* \([0-9][0-9.]*\) MiB peak.*/\1/p' "$1" | head -n 1
}

# honest_counts NAME SPOOL ERRFILE: record's summary (samples written, lost), the
# spool's summary trailer and the records in the spool agree; prints the figures.
honest_counts() {
	with_timeout 120 "$SP" dump "$2" >"$2.counts.dump" 2>/dev/null
	said_written=$(sed -n 's/.* \([0-9][0-9]*\) samples written.*/\1/p' "$3" | head -n 1)
	said_lost=$(sed -n 's/.*sample events), \([0-9][0-9]*\) lost.*/\1/p' "$3" | head -n 1)
	in_spool=$(grep -c '^sample ' "$2.counts.dump")
	lost_records=$(awk '$1 == "lost" { sub(/^count=/, "", $2); n += $2 } END { print n + 0 }' "$2.counts.dump")
	trailer_samples=$(dump_field summary samples "$2.counts.dump")
	trailer_lost=$(dump_field summary lost_events "$2.counts.dump")
	info "$1: record says ${said_written:-?} written, ${said_lost:-?} lost; the spool holds $in_spool samples and $lost_records lost in lost records; its trailer says ${trailer_samples:-?} and ${trailer_lost:-?}"
	[ "$said_written" = "$in_spool" ] && [ "$trailer_samples" = "$in_spool" ] &&
		ok "$1: samples written ($in_spool) = samples in the spool = the trailer's count" ||
		fail "$1: samples: record says ${said_written:-?}, spool holds $in_spool, trailer ${trailer_samples:-?}"
	[ "$said_lost" = "$lost_records" ] && [ "$trailer_lost" = "$lost_records" ] &&
		ok "$1: lost samples reported ($lost_records) = the spool's lost records = the trailer's count" ||
		fail "$1: lost: record says ${said_lost:-?}, lost records $lost_records, trailer ${trailer_lost:-?}"
}
