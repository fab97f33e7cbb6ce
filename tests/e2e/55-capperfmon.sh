# SPDX-License-Identifier: MIT
# record -p needs CAP_PERFMON alone (it used to stop the target, which
# takes CAP_KILL for another user's process).  A user with no capability but
# CAP_PERFMON (ambient, and the only one left in its bounding set) records a chain4 of
# its own, then one of another user, with kernel.perf_event_paranoid as it is here
# (never changed): each spool's stacks reach main;level1;...;level4, kernel-mode time
# is sampled, -k gives kernel frames, and strace sees no signal sent, no ptrace, no
# read of the target's memory and no call refused (EPERM, EACCES).  Without the
# capability, the documented refusals: another user's process is refused naming
# CAP_PERFMON; one's own, under perf_event_paranoid 2, is recorded user-only with a
# warning naming perf_event_paranoid and CAP_PERFMON, and refused with both named
# above 2 (Debian's 3).
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload chain4
CHAIN4=$WL
need_workload syscall_loop
SYSLOOP=$WL
[ "$(id -u)" = 0 ] || skip_all "needs root to run the recorder as another user with one capability"
id nobody >/dev/null 2>&1 || skip_all "no user 'nobody' to record as"
need_cmd setpriv "dropping to one user with CAP_PERFMON alone"
need_cmd strace "seeing what the recorder asks of the kernel"
# CAP_PERFMON is capability 38 (Linux 5.8).
last=$(cat /proc/sys/kernel/cap_last_cap 2>/dev/null || echo 0)
[ "$last" -ge 38 ] || skip_all "the kernel does not know CAP_PERFMON (cap_last_cap is $last, CAP_PERFMON is 38; Linux 5.8+)"
PARANOID=$(cat /proc/sys/kernel/perf_event_paranoid)

NOBODY_GROUP=$(id -gn nobody)
# A second user for the other-user case: the first uid with no passwd entry.
OTHER=65533
while getent passwd "$OTHER" >/dev/null 2>&1 || [ "$OTHER" = "$(id -u nobody)" ]; do
	OTHER=$((OTHER - 1))
done
AS_NOBODY="setpriv --reuid=nobody --regid=$NOBODY_GROUP --clear-groups"
AS_OTHER="setpriv --reuid=$OTHER --regid=$OTHER --clear-groups"
WITH_PERFMON="--inh-caps=-all,+perfmon --ambient-caps=-all,+perfmon --bounding-set=-all,+perfmon"
# shellcheck disable=SC2086 # option lists, split on purpose
$AS_NOBODY $WITH_PERFMON sh -c 'grep -E "^Cap(Eff|Amb|Bnd)" /proc/self/status' >caps.txt 2>caps.err ||
	skip_all "setpriv cannot give nobody CAP_PERFMON alone: $(head -c 200 caps.err)"
# 0x4000000000 is bit 38, CAP_PERFMON, alone.
if [ "$(grep -c '0000004000000000' caps.txt)" != 3 ]; then
	fail "the recorder's capabilities are not CAP_PERFMON alone: $(tr '\n\t' '  ' <caps.txt)"
	finish
fi
info "as nobody with CAP_PERFMON: $(tr '\n\t' '  ' <caps.txt); perf_event_paranoid=$PARANOID"

# The programs, readable by both users: nobody's spools in its own directory.
chmod 0755 "$TMP"
mkdir bin nobody other && cp "$SP" bin/stackpulse && cp "$CHAIN4" bin/chain4 &&
	cp "$SYSLOOP" bin/syscall_loop && chmod 0755 bin bin/* && chown nobody nobody &&
	chown "$OTHER" other || {
	fail "cannot set up the directories"
	finish
}
SPC=$TMP/bin/stackpulse
CHAIN=';main;level1;level2;level3;level4$'

# start_target AS-PREFIX...: chain4 for 30 s of CPU time as that user; sets pid.
start_target() {
	"$@" "$TMP/bin/chain4" -t 30 >/dev/null 2>&1 &
	pid=$!
	track_pid $pid
	sleep 0.3
}

# stop_target: end the target started last.
stop_target() {
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
}

# check_chain NAME SPOOL: report the spool (as root) and check its stacks reach level4.
check_chain() {
	with_timeout 60 "$SP" report --format=folded "$2" >"$1.folded" 2>"$1.report.err"
	set -- "$1" $(folded_share "$1.folded" "$CHAIN")
	share_at_least "$1:" 90 "$2" "$3" "the samples are main;level1;level2;level3;level4" ||
		info "$1: top stacks: $(folded_top "$1.folded" 2 | tr '\n' '|')"
}

# check_trace NAME TRACE TARGET: the recorder sent no signal (signal 0, which only asks
# whether a process exists, aside), used no ptrace, read no memory of TARGET, and no
# call failed with EPERM or EACCES.
check_trace() {
	if [ ! -s "$2" ]; then
		fail "$1: no trace '$2'"
		return
	fi
	sig=$(grep -E '^[0-9]+ +(kill|tkill|tgkill|rt_sigqueueinfo|rt_tgsigqueueinfo|pidfd_send_signal)\(' "$2" |
		grep -v ', 0) ' | head -n 2)
	[ -z "$sig" ] && ok "$1: no signal sent" || fail "$1: the recorder sent a signal: $sig"
	pt=$(grep -E '^[0-9]+ +(ptrace|process_vm_readv|process_vm_writev)\(|/proc/'"$3"'/mem' "$2" | head -n 2)
	[ -z "$pt" ] && ok "$1: no ptrace, no read of the target's memory" ||
		fail "$1: the recorder reached into the target: $pt"
	denied=$(grep -E '= -1 (EPERM|EACCES)' "$2" | head -n 3)
	[ -z "$denied" ] && ok "$1: no call refused with EPERM or EACCES" ||
		fail "$1: calls refused: $(echo "$denied" | cut -c 1-200 | tr '\n' '|')"
}

# --- CAP_PERFMON alone, a process of one's own -------------------------------------------

start_target $AS_NOBODY
# shellcheck disable=SC2086
traced with_timeout 60 $AS_NOBODY $WITH_PERFMON strace -f -o "$TMP/nobody/own.trace" \
	"$SPC" record -p $pid -d 2 -F 499 -o "$TMP/nobody/own.spool" 2>own.err
rc=$?
state=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d ' ' -f 1)
stop_target
sed -n 1,3p own.err | sed 's/^/# own: /'
[ $rc = 0 ] && ok "CAP_PERFMON alone: record -p of nobody's own chain4 exits 0" ||
	fail "CAP_PERFMON alone, own process: record -p exited $rc: $(head -c 300 own.err)"
case $state in
R | S) ok "the target runs on (state $state)" ;;
*) fail "the target's state after record -p: '${state:-gone}'" ;;
esac
if [ $rc = 0 ]; then
	check_chain own nobody/own.spool
	grep -q 'kernel-mode sampling denied' own.err &&
		fail "CAP_PERFMON alone: kernel-mode sampling was denied: $(grep -m 1 denied own.err)" ||
		ok "CAP_PERFMON alone: kernel-mode time is sampled (no 'kernel-mode sampling denied')"
fi
check_trace "CAP_PERFMON alone, own process" nobody/own.trace $pid

# -k: kernel frames, as root gets them.
$AS_NOBODY "$TMP/bin/syscall_loop" -t 30 >/dev/null 2>&1 &
pid=$!
track_pid $pid
sleep 0.3
# shellcheck disable=SC2086
with_timeout 60 $AS_NOBODY $WITH_PERFMON "$SPC" record -k -p $pid -d 1 -F 499 \
	-o "$TMP/nobody/kernel.spool" 2>kernel.err
rc=$?
stop_target
with_timeout 60 "$SP" dump nobody/kernel.spool >kernel.dump 2>/dev/null
enabled=$(dump_field summary kernel_enabled kernel.dump)
kframes=$(grep -c '^frame .*mode=kernel' kernel.dump)
info "record -k with CAP_PERFMON: exit $rc, kernel_enabled=${enabled:-?}, $kframes distinct kernel frames"
[ $rc = 0 ] && [ "$enabled" = 1 ] && [ "$kframes" -gt 0 ] &&
	ok "CAP_PERFMON alone: record -k -p gives kernel frames ($kframes distinct)" ||
	fail "CAP_PERFMON alone: record -k -p exit $rc, kernel_enabled=${enabled:-?}, $kframes kernel frames: $(head -c 300 kernel.err)"

# --- CAP_PERFMON alone, another user's process ------------------------------------------

start_target $AS_OTHER
# shellcheck disable=SC2086
traced with_timeout 60 $AS_NOBODY $WITH_PERFMON strace -f -o "$TMP/nobody/other.trace" \
	"$SPC" record -p $pid -d 2 -F 499 -o "$TMP/nobody/other.spool" 2>other.err
rc=$?
state=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d ' ' -f 1)
[ $rc = 0 ] && ok "CAP_PERFMON alone: record -p of another user's (uid $OTHER) chain4 exits 0" ||
	fail "CAP_PERFMON alone, another user's process: record -p exited $rc: $(head -c 300 other.err)"
case $state in
R | S) ok "the other user's target runs on (state $state)" ;;
*) fail "the other user's target's state after record -p: '${state:-gone}'" ;;
esac
[ $rc = 0 ] && check_chain other nobody/other.spool
check_trace "CAP_PERFMON alone, another user's process" nobody/other.trace $pid

# Without the capability: refused, saying what would do.
with_timeout 60 $AS_NOBODY "$SPC" record -p $pid -d 1 -o "$TMP/nobody/refused.spool" 2>refused.err
rc=$?
stop_target
want="cannot record pid $pid: it belongs to another user (uid $OTHER); record it as that user, as root, or with CAP_PERFMON"
[ $rc = 1 ] && grep -qF "$want" refused.err &&
	ok "no capability, another user's process: exit 1, '$(head -n 1 refused.err | cut -c 1-150)'" ||
	fail "no capability, another user's process: exit $rc, $(head -c 300 refused.err)"
[ -e nobody/refused.spool ] && fail "the refused recording left a spool" ||
	ok "the refused recording left no spool"

# --- no capability, a process of one's own: depends on perf_event_paranoid ------------

start_target $AS_NOBODY
with_timeout 60 $AS_NOBODY "$SPC" record -p $pid -d 1 -F 499 -o "$TMP/nobody/nocap.spool" 2>nocap.err
rc=$?
stop_target
if [ "$PARANOID" -ge 3 ]; then
	[ $rc = 1 ] && grep -q 'perf_event_paranoid' nocap.err && grep -q 'CAP_PERFMON' nocap.err &&
		ok "no capability, perf_event_paranoid=$PARANOID: exit 1, '$(head -n 1 nocap.err | cut -c 1-150)'" ||
		fail "no capability, perf_event_paranoid=$PARANOID: exit $rc, $(head -c 300 nocap.err)"
elif [ "$PARANOID" = 2 ]; then
	# Level 2 lets a user sample the user space of its own processes, not the kernel.
	msg=$(grep -m 1 'kernel-mode sampling denied' nocap.err)
	if [ $rc = 0 ] && echo "$msg" | grep -q 'perf_event_paranoid is 2' &&
		echo "$msg" | grep -q 'CAP_PERFMON'; then
		ok "no capability, perf_event_paranoid=2: recorded user-only, warning '$(echo "$msg" | cut -c 1-150)'"
	else
		fail "no capability, perf_event_paranoid=2: exit $rc, no warning naming perf_event_paranoid and CAP_PERFMON: $(head -c 300 nocap.err)"
	fi
	[ $rc = 0 ] && check_chain nocap nobody/nocap.spool
else
	skip "no capability, own process: perf_event_paranoid=$PARANOID lets every user sample the kernel, nothing is refused"
fi
finish
