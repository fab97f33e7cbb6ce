# SPDX-License-Identifier: MIT
# Python in a container: a process in its own PID and mount namespace
# with a private /tmp (unshare -p -f -m, a tmpfs on /tmp) writes its perf map as
# /tmp/perf-NSPID.map in that /tmp, which the host's /tmp does not have and which goes
# away with the container.  The recorder finds it through /proc/PID/root, keeps it open
# while the process lives, and stores the names of the frames it covers in the spool, so
# the report names the Python chain attached (-p) and launched alike.  Beside: perf -g.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_cmd unshare "making the container (Debian package util-linux)"
[ "$(id -u)" = 0 ] || skip_all "making a PID and mount namespace needs root here"
unshare -p -f -m true 2>/dev/null || skip_all "unshare -p -f -m is refused here (no namespaces)"
PY=$(find_python 3.12)
[ -n "$PY" ] || PY=$(find_python 3.13)
[ -n "$PY" ] || skip_all "no python3.12 or python3.13 with -X perf (pyenv install 3.12)"
info "$PY ($("$PY" --version 2>&1)) in unshare -p -f -m with a tmpfs on /tmp"

# The script goes into the container's own /tmp: ours (where this test runs) is hidden there.
sed 's/process_time() + 1.5/process_time() + float(sys.argv[1])/; s/^import time/import sys, time/' \
	"$WORKLOADS/py_chain.py" >chain.py
# inner.sh HOST-MNT-NS SCRIPT PYTHON SECONDS runs in the new namespaces; it refuses to
# mount anything unless its mount namespace is a new one (never the host's /tmp).
cat >inner.sh <<'EOF2'
[ "$(readlink /proc/self/ns/mnt)" != "$1" ] || { echo "inner.sh: not in a new mount namespace" >&2; exit 1; }
S=$(cat "$2") || exit 1
mount -t tmpfs none /tmp || exit 1
printf '%s\n' "$S" >/tmp/chain.py || exit 1
exec "$3" -X perf /tmp/chain.py "$4"
EOF2
HOST_NS=$(readlink /proc/self/ns/mnt)
# container SECONDS: run chain.py for SECONDS of CPU in a container.
container() {
	unshare -p -f -m --propagation private sh "$PWD/inner.sh" "$HOST_NS" "$PWD/chain.py" "$PY" "$1"
}
CHAIN='<module>;jit_py_f1;jit_py_f2;jit_py_f3;jit_py_f4;jit_py_leaf(;|$)'

# check LABEL FOLDED: the Python chain on >= 95% of the samples under jit_py_f1 (the
# hot loop), and jit_py_f1 named at all (without the map, no Python frame is named).
check() {
	set -- "$1" "$2" $(leaf_share "$2" ';jit_py_f1(;|$)' "$CHAIN") $(folded_total "$2")
	share_at_least "$1:" 50 "$4" "$5" "all samples are in jit_py_f1 (named at all)" &&
		share_at_least "$1:" 95 "$3" "$4" "jit_py_f1's samples carry <module>;jit_py_f1;..;jit_py_leaf" ||
		info "$1: top stacks: $(folded_top "$2" 2 | tr '\n' ' ' | cut -c1-400)"
}

# Launched: the container is the command; its /tmp is gone when the report runs.
sp_record launched.spool -F 999 -- unshare -p -f -m --propagation private \
	sh "$PWD/inner.sh" "$HOST_NS" "$PWD/chain.py" "$PY" 1.5 >/dev/null ||
	fail "record of the container exited $?: $(head -c 300 record.err)"
with_timeout 60 "$SP" report --format=folded launched.spool >launched.folded 2>launched.err
check launched launched.folded
grep -q 'of JIT or Python code named from the perf map of 1 process in containers' record.err &&
	ok "launched: the summary says the container's perf map named frames" ||
	fail "launched: the summary does not mention the container's perf map: $(tr '\n' ' ' <record.err | cut -c1-300)"

# Attached: the container runs first; record -p the Python process (unshare's child).
container 4 >/dev/null 2>&1 &
outer=$!
track_pid $outer
py=
for _ in 1 2 3 4 5 6 7 8 9 10; do
	sleep 0.2
	for c in $(pgrep -P $outer 2>/dev/null); do
		for g in $c $(pgrep -P $c 2>/dev/null); do
			case $(readlink /proc/$g/exe 2>/dev/null) in *python*) py=$g ;; esac
		done
	done
	[ -n "$py" ] && break
done
if [ -z "$py" ]; then
	fail "attached: the container's python process was not found under pid $outer"
else
	info "attached: host pid $py, $(grep NSpid /proc/$py/status | tr '\t' ' ')"
	with_timeout 60 "$SP" record -q -p "$py" -d 1.5 -o attached.spool >/dev/null 2>&1 ||
		fail "record -p of the container's python exited $?"
	kill $outer 2>/dev/null
	wait $outer 2>/dev/null
	with_timeout 60 "$SP" report --format=folded attached.spool >attached.folded 2>/dev/null
	check attached attached.folded
fi

# perf -g, launched the same way (its report runs after the container is gone).
if with_timeout 120 perf record -q -g -F 999 -o p.data -- unshare -p -f -m --propagation private \
	sh "$PWD/inner.sh" "$HOST_NS" "$PWD/chain.py" "$PY" 1.5 >/dev/null 2>&1; then
	info "perf -g: $(perf report -i p.data --stdio --no-children --sort sym -g none 2>/dev/null |
		awk '$1 ~ /%$/ { n++; if ($0 ~ /jit_py/) named += $1 } END { printf "%.1f%% of samples in functions named jit_py_*", named }')"
fi
finish
