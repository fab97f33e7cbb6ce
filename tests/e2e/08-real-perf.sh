# SPDX-License-Identifier: MIT
# Real input: programs no one here wrote (Debian's python3 running a busy loop, and
# xz -9 with a 1 MiB dictionary compressing generated text), recorded at the same time by stackpulse and by
# perf (--all-user --call-graph dwarf -F 999: user space only, as stackpulse records,
# so both tools' shares are of the same kind of samples).  Both tools' top-5 are printed; the top
# function must be the same and its self share agree within 5 percentage points.
# e2e: alone (its shares are compared with perf's on the same busy CPUs)
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_cmd perf "the side-by-side reference"
MAXDIFF=5

perf stat -e cpu-clock true >/dev/null 2>perf-probe.err ||
	skip_all "perf cannot count cpu-clock here: $(head -n 1 perf-probe.err)"

# perf_top5 DATA SORT: perf's self shares, "share name" per line (user and kernel).
perf_top5() {
	perf report -i "$1" --stdio --no-children --sort "$2" -g none 2>/dev/null |
		awk '/^#/ || NF < 2 { next }
		     $1 ~ /%$/ { p = $1; sub(/%$/, "", p); $1 = ""; sub(/^ +/, ""); sub(/^\[[.k]\] +/, ""); print p, $0 }' |
		head -n 5
}

# sp_top5 FOLDED: stackpulse's self shares from the folded leaves, "share name" per line.
sp_top5() {
	folded_self "$1" | awk '{ print $2, $3 }' | head -n 5
}

# sp_module_self DUMP: self shares per module (the leaf frame's module file name),
# "share name" per line, from dump's sample -> stack -> frame -> module references.
sp_module_self() {
	awk '
		function val(k,   i) { for (i = 2; i <= NF; i++) if (index($i, k "=") == 1) return substr($i, length(k) + 2); return "" }
		$1 == "module" { p = val("path"); gsub(/"/, "", p); sub(/.*\//, "", p); mod[val("id")] = p }
		$1 == "frame" { fmod[val("id")] = val("module") }
		$1 == "stack" { sframe[val("id")] = val("frame") }
		$1 == "sample" {
			m = fmod[sframe[val("stack")]]
			name = (m in mod) ? mod[m] : "[unknown]"
			c[name]++; total++
		}
		END { for (n in c) printf "%.2f %s\n", 100 * c[n] / total, n }
	' "$1" | sort -rn
}

# Normalize unnamed code on "share name" lines: "MODULE+0x00ab" and "0x00ab" -> "0xab".
unnamed_to_addr() {
	sed -E 's/ ([^ ]*\+)?0x0*([0-9a-f]+)$/ 0x\2/'
}

# compare LABEL SP_TOP PERF_TOP: same top name, shares within MAXDIFF points.
compare() {
	echo "$2" | sed "s/^/# $1 stackpulse top-5 (self%): /"
	echo "$3" | sed "s/^/# $1 perf top-5 (self%): /"
	set -- "$1" $(echo "$2" | head -n 1) $(echo "$3" | head -n 1)
	# $2 sp share, $3 sp name, $4 perf share, $5 perf name
	if [ "${3:-}" = "${5:-}" ] && [ -n "${3:-}" ]; then
		ok "$1: both tools' top entry is $3"
	else
		fail "$1: top entry differs: stackpulse '${3:-}' vs perf '${5:-}'"
		return
	fi
	diff=$(awk -v a="$2" -v b="$4" 'BEGIN { d = a - b; if (d < 0) d = -d; printf "%.2f", d }')
	info "$1: $3 self share stackpulse $2% vs perf $4% (difference $diff points)"
	[ "$(num_ge "$MAXDIFF" "$diff")" = 1 ] && ok "$1: self shares agree within $MAXDIFF points ($diff)" ||
		fail "$1: self shares differ by $diff points (> $MAXDIFF)"
}

# record_both NAME SECONDS COMMAND...: run COMMAND in the background and attach both
# tools to it at once for SECONDS (stackpulse record -p -d, perf record -p -- sleep),
# so both sample the same stretch of the same run: sequential runs differ by more
# than the tolerance on this shared machine (cache and frequency effects of other load).
# Leaves NAME.folded, NAME.spool, NAME.data; returns non-zero after printing a FAIL.
record_both() {
	name=$1
	secs=$2
	shift 2
	"$@" >/dev/null 2>"$name.cmd.err" &
	cmd=$!
	track_pid $cmd
	sleep 0.5
	if ! kill -0 $cmd 2>/dev/null; then
		fail "$name: the command ended at once: $(head -c 300 "$name.cmd.err")"
		return 1
	fi
	with_timeout 120 "$SP" record -p $cmd -F 999 -d "$secs" -o "$name.spool" >/dev/null 2>"$name.sp.err" &
	sp=$!
	with_timeout 120 perf record -q -o "$name.data" --all-user --call-graph dwarf -F 999 -p $cmd -- sleep "$secs" \
		>/dev/null 2>"$name.perf.err"
	pst=$?
	wait $sp
	sst=$?
	still=0
	kill -0 $cmd 2>/dev/null && still=1
	kill -KILL $cmd 2>/dev/null
	if [ $sst -ne 0 ]; then
		fail "$name: stackpulse record -p exited $sst: $(head -c 300 "$name.sp.err")"
		return 1
	fi
	if [ $pst -ne 0 ]; then
		fail "$name: perf record -p exited $pst: $(head -c 300 "$name.perf.err")"
		return 1
	fi
	[ $still = 1 ] || info "$name: note: the command ended before the window closed"
	if ! with_timeout 120 "$SP" report --format=folded "$name.spool" >"$name.folded" 2>"$name.rep.err"; then
		fail "$name: stackpulse report failed: $(head -c 300 "$name.rep.err")"
		return 1
	fi
	# Rooted in the C library's start frames.  Debian's xz is stripped, so its _start
	# is unnamed ("xz+0x3ac0"); python's main tail-calls Py_BytesMain, so no frame
	# named main need appear.
	root='^[^;]+;__libc_start_main[^;]*;__libc_start_call_main;'
	set -- $(folded_share "$name.folded" "$root")
	info "$name: stackpulse: $1 of $2 samples rooted at _start;__libc_start_main;__libc_start_call_main ($(pct "$1" "$2")%), same ${secs}s window"
	# perf script prints one blank-line-separated block per sample, root frame last.
	set -- $(perf script -i "$name.data" -F ip,sym 2>/dev/null |
		awk 'BEGIN { RS = "" } { n++; if ($0 ~ /__libc_start_call_main/) r++ } END { print r + 0, n + 0 }')
	info "$name: perf: $1 of $2 samples reach __libc_start_call_main ($(pct "$1" "$2")%)"
	return 0
}

# --- Debian's python3 (not a pyenv shim: the first ELF python3 on PATH) -------------
PY=
oldifs=$IFS
IFS=:
for d in $PATH; do
	if [ -x "$d/python3" ] && [ "$(head -c 4 "$d/python3" | od -An -c | tr -d ' ')" = '177ELF' ]; then
		PY=$d/python3
		break
	fi
done
IFS=$oldifs
if [ -z "$PY" ]; then
	skip "no python3 executable (ELF, not a wrapper script) on PATH"
else
	cat >busy.py <<'PYEOF'
def f(n):
    s = 0
    for i in range(n):
        s += i * i % 7
    return s
while True:
    f(200000)
PYEOF
	info "python: $PY ($("$PY" --version 2>&1)) running a busy loop"
	if record_both python3 4 "$PY" busy.py; then
		compare python3 "$(sp_top5 python3.folded)" "$(perf_top5 python3.data sym)"
	fi
fi

# --- xz -9 on generated text --------------------------------------------------------
# With a 1 MiB dictionary, full within the half second before both tools attach: -9's
# own 64 MiB dictionary fills for the whole run, and the hottest instruction's share
# drifts with it (24% to 40% over 10 s here), so a window started a second later (the
# sanitized build's slower start) would differ by more than the tolerance.
if ! command -v xz >/dev/null 2>&1; then
	skip "xz not found in PATH"
else
	mb=${E2E_XZ_MB:-32}
	awk -v n=$((mb * 26000)) 'BEGIN { srand(1); for (i = 0; i < n; i++)
		printf "%d line %x the quick %s fox jumps %d\n", i, int(rand() * 1e9), (rand() < 0.5 ? "brown" : "red"), int(rand() * 1000) }' >in.txt
	info "xz: $(command -v xz) -9 -T1 --lzma2=preset=9,dict=1MiB compressing $(wc -c <in.txt) bytes (both tools attach for 6 s)"
	if record_both xz 6 xz -9 -T1 --lzma2=preset=9,dict=1MiB -c in.txt; then
		ptop=$(perf_top5 xz.data sym)
		if echo "$ptop" | head -n 1 | grep -q ' 0x[0-9a-f]*$'; then
			# Debian strips liblzma's local symbols: without a debug file both tools name
			# its code by address, one entry per instruction.  Compare perf's hottest
			# address, then self shares per module.
			echo "$ptop" | unnamed_to_addr | sed 's/^/# xz perf top-5 addresses (self%): /'
			sp_top5 xz.folded | unnamed_to_addr | sed 's/^/# xz stackpulse top-5 addresses (self%): /'
			set -- $(echo "$ptop" | unnamed_to_addr | head -n 1)
			sp_share=$(folded_self xz.folded | awk '{ print $2, $3 }' | unnamed_to_addr |
				awk -v a="$2" '$2 == a { print $1; found = 1; exit } END { if (!found) print 0 }')
			diff=$(awk -v a="$1" -v b="$sp_share" 'BEGIN { d = a - b; if (d < 0) d = -d; printf "%.2f", d }')
			info "xz: hottest address $2: perf $1% vs stackpulse $sp_share% (difference $diff points)"
			[ "$(num_ge "$MAXDIFF" "$diff")" = 1 ] && ok "xz: perf's hottest address $2 has the same self share within $MAXDIFF points ($diff)" ||
				fail "xz: perf's hottest address $2: perf $1% vs stackpulse $sp_share%"
			info "xz: liblzma has no symbols here: comparing self shares per module instead"
			if with_timeout 120 "$SP" dump xz.spool >xz.dump 2>/dev/null; then
				compare "xz (modules)" "$(sp_module_self xz.dump | head -n 5)" "$(perf_top5 xz.data dso)"
			else
				fail "xz: stackpulse dump failed"
			fi
		else
			compare xz "$(sp_top5 xz.folded)" "$ptop"
		fi
	fi
fi
finish
