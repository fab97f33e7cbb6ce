# SPDX-License-Identifier: MIT
# Record's summary says how to get names where a runtime's functions will have none:
# Python run without -X perf, Java without a perf map, and not when the map is there.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
PYPROG=$REPO/tests/workloads/py_chain.py

# hint_of ERRFILE: the summary's hint, on one line
hint_of() {
	awk '/^  hint: / { h = 1; print; next } h && /^        / { print; next } { h = 0 }' "$1" | tr -s ' \n' ' '
}

# The pid a command ran as, so its perf map can be removed at the end.
forget_map() {
	MAPS="$MAPS /tmp/perf-$1.map"
}
MAPS=
trap 'for m in $MAPS; do rm -f "$m"; done; cleanup' EXIT

# python3 (any version) without -X perf: the Python hint, naming the process.
if command -v python3 >/dev/null 2>&1; then
	sp_record py3.spool -- python3 "$PYPROG" >/dev/null ||
		fail "record of python3 exited $?: $(head -c 300 record.err)"
	h=$(hint_of record.err)
	info "python3 $(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])'): ${h:-no hint}"
	case $h in *"Python functions have no names (no perf map)"*"-X perf"*"(pid "[0-9]*")"*)
		ok "python3 without -X perf: record's summary gives the -X perf hint" ;;
	*) fail "python3 without -X perf: no hint in the summary: $(tail -n 4 record.err | tr '\n' '|')" ;; esac
	# report's header gives the same words
	"$SP" report py3.spool >py3.txt 2>/dev/null
	grep -q '^Hint: *Python functions have no names (no perf map)' py3.txt &&
		ok "report's header has the same hint" || fail "report's header: no hint: $(sed -n 1,16p py3.txt | tr '\n' '|')"
	# A map an earlier process left under the pid python3 gets (last written an hour
	# ago, before python3's exec) does not hide the hint: such maps are made for the
	# next pids, which kernel.ns_last_pid hands out.
	base=$(($(cat /proc/sys/kernel/ns_last_pid 2>/dev/null || echo 0) + 300))
	if [ -w /proc/sys/kernel/ns_last_pid ] && [ $((base + 60)) -lt "$(cat /proc/sys/kernel/pid_max)" ]; then
		made=
		for pid in $(seq $base $((base + 60))); do
			m=/tmp/perf-$pid.map
			[ -e "$m" ] && continue
			printf '1000 10 stale_fn\n' >"$m" && touch -d '1 hour ago' "$m" && made="$made $m "
		done
		MAPS="$MAPS $made"
		echo $((base - 1)) >/proc/sys/kernel/ns_last_pid
		sp_record stale.spool -- sh -c 'echo $$ >stale.pid; exec python3 "$1"' sh "$PYPROG" >/dev/null ||
			fail "record of python3 (stale maps) exited $?: $(head -c 300 record.err)"
		pid=$(cat stale.pid 2>/dev/null)
		case $made in
		*" /tmp/perf-$pid.map "*)
			grep -q '^  hint: Python functions have no names' record.err &&
				ok "an hour-old perf-$pid.map left by an earlier process does not hide the hint" ||
				fail "a stale perf-$pid.map hid the hint: $(tail -n 3 record.err | tr '\n' '|')" ;;
		*) skip "python3 ran as pid '$pid', which had no stale map made ($base-$((base + 60))): other processes took those pids" ;;
		esac
	else
		skip "kernel.ns_last_pid not writable (or pids near pid_max): the stale-map case not checked"
	fi
else
	skip "python3 not found: the hint for Python not checked"
fi

PY=$(find_python 3.12)
if [ -n "$PY" ]; then
	sp_record py12.spool -- "$PY" "$PYPROG" >/dev/null ||
		fail "record of $PY exited $?: $(head -c 300 record.err)"
	grep -q '^  hint: Python functions have no names' record.err &&
		ok "python3.12 without -X perf: the hint" || fail "python3.12 without -X perf: no hint: $(tail -n 3 record.err | tr '\n' '|')"
	sp_record pyperf.spool -- sh -c 'echo $$ >py.pid; exec "$@"' sh "$PY" -X perf "$PYPROG" >/dev/null ||
		fail "record of $PY -X perf exited $?: $(head -c 300 record.err)"
	forget_map "$(cat py.pid)"
	grep -q 'hint:' record.err && fail "python3.12 -X perf got a hint: $(hint_of record.err)" ||
		ok "python3.12 -X perf: no hint (its perf map names the functions)"
else
	skip "python3.12 with -X perf not found (pyenv): the perf-map case not checked"
fi

# Java: JIT code without a perf map gets the JVM hint; with -XX:+DumpPerfMapAtExit none.
if command -v java >/dev/null 2>&1 && command -v javac >/dev/null 2>&1; then
	cat >Hot.java <<'EOF2'
public class Hot {
	static long leafJ(long n) { long x = 0; for (long i = 0; i < n; i++) x = x * 31 + i; return x; }
	public static void main(String[] a) {
		long end = System.currentTimeMillis() + 1500, t = 0;
		while (System.currentTimeMillis() < end) t += leafJ(100000);
		System.out.println(t & 1);
	}
}
EOF2
	if with_timeout 120 javac Hot.java 2>javac.err; then
		sp_record j.spool -- java -cp . Hot >/dev/null || fail "record of java exited $?: $(head -c 300 record.err)"
		h=$(hint_of record.err)
		info "java: ${h:-no hint}"
		case $h in *"Java's JIT code has no names"*"DumpPerfMapAtExit"*"perf-map agent"*)
			ok "java without a perf map: the JVM hint" ;;
		*) fail "java without a perf map: no JVM hint: $(tail -n 4 record.err | tr '\n' '|')" ;; esac
		"$SP" report j.spool >j.txt 2>/dev/null
		grep -q "^Hint: *Java's JIT code has no names" j.txt && ok "report's header has the JVM hint too" ||
			fail "report's header: no JVM hint: $(sed -n '/Self%/,+2p' j.txt | tr '\n' '|')"
		sp_record jmap.spool -- sh -c 'echo $$ >j.pid; exec "$@"' sh java \
			-XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit -cp . Hot >/dev/null ||
			fail "record of java -XX:+DumpPerfMapAtExit exited $?: $(head -c 300 record.err)"
		forget_map "$(cat j.pid)"
		grep -q 'hint:' record.err && fail "java with its perf map got a hint: $(hint_of record.err)" ||
			ok "java -XX:+DumpPerfMapAtExit: no hint"
	else
		skip "java: javac failed: $(head -c 200 javac.err)"
	fi
else
	skip "java and javac not found in PATH (Debian openjdk-17-jdk-headless): the JVM hint not checked"
fi

# A C program: no hint.
need_workload chain4
sp_record c.spool -- "$WL" -t 1 >/dev/null || fail "record of chain4 exited $?"
grep -q 'hint:' record.err && fail "a C program got a naming hint: $(hint_of record.err)" ||
	ok "a C program gets no naming hint"
finish
