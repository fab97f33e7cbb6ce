# SPDX-License-Identifier: MIT
# Anyone can write /tmp/perf-PID.map for any pid: a perf map names a process's code
# only when it belongs to the process's user or root (docs/DESIGN.md, decision 9).  The spool
# records each process's effective uid (OWNER records); report refuses another
# user's map, says so, and leaves the frames as addresses.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload jit_perfmap
JIT=$WL
[ "$(id -u)" = 0 ] || skip_all "recording another user's process and giving files away need root"
id nobody >/dev/null 2>&1 || skip_all "no user 'nobody'"

# --- a root process whose map another user wrote ----------------------------------------
jit_record root.spool root.out
pid=$(basename "$MAP" .map)
pid=${pid#perf-}
"$SP" dump root.spool >root.dump 2>/dev/null
grep -q "^owner pid=$pid uid=0 " root.dump && ok "the spool records the process's owner (uid 0)" ||
	fail "no owner record for pid $pid: $(grep '^owner' root.dump | head -n 3 | tr '\n' '|')"
"$SP" report --format=folded root.spool >own.folded 2>own.err
grep -q ';jit_hot_loop' own.folded && ok "root's own map names its JIT code" ||
	fail "root's own map did not name jit_hot_loop: $(head -c 300 own.err)"
chown nobody "$MAP"
"$SP" report --format=folded root.spool >planted.folded 2>planted.err
if grep -q ';jit_hot_loop' planted.folded; then
	fail "a map owned by nobody named a root process's code"
else
	ok "a map owned by another user does not name a root process's code"
fi
grep -q "perf map.*ignored: owned by neither the process's user nor root" planted.err &&
	ok "report says why: $(grep 'owned by neither' planted.err | head -c 120)" ||
	fail "no warning for the foreign map: $(head -c 300 planted.err)"

# --- another user's process, recorded by root: its own map is believed -------------------
if ! command -v setpriv >/dev/null 2>&1; then
	skip "a process of nobody: setpriv (util-linux) not found"
else
	cp "$JIT" ./jit && chmod 0755 . ./jit
	if ! setpriv --reuid=nobody --regid=nogroup --clear-groups ./jit -h >/dev/null 2>&1 &&
		! setpriv --reuid=nobody --regid=nogroup --clear-groups test -x ./jit; then
		skip "nobody cannot run a program from $PWD"
	else
		JIT=$PWD/jit
		jit_record nobody.spool nobody.out setpriv --reuid=nobody --regid=nogroup --clear-groups
		pid2=$(basename "$MAP" .map)
		pid2=${pid2#perf-}
		uid=$(id -u nobody)
		"$SP" dump nobody.spool 2>/dev/null | grep -q "^owner pid=$pid2 uid=$uid " &&
			ok "the spool records nobody ($uid) as the owner after setpriv's exec" ||
			fail "no owner record pid=$pid2 uid=$uid: $("$SP" dump nobody.spool 2>/dev/null | grep '^owner' | tr '\n' '|')"
		"$SP" report --format=folded nobody.spool >nobody.folded 2>nobody.err
		grep -q ';jit_hot_loop' nobody.folded && ok "nobody's own map names nobody's JIT code" ||
			fail "nobody's own map did not name jit_hot_loop: $(head -c 300 nobody.err)"
	fi
fi
finish
