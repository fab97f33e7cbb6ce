# SPDX-License-Identifier: MIT
# Errors at the command line's bounds: --width states the range it
# accepts, a pid list over the limit is named by its count and not echoed back, and
# -p of a kernel thread says why it cannot be recorded, before any event is opened.
. "$(dirname "$0")/lib.sh"
need_stackpulse

# run WHAT COMMAND...: run with stdout and stderr kept in out.txt and err.txt.
run() {
	what=$1
	shift
	with_timeout 30 "$@" >out.txt 2>err.txt
	status=$?
}

# expect WHAT STATUS FIXED-STRING: the last run exited STATUS and said FIXED-STRING
# in a first line of at most 200 bytes (an argument is never echoed whole).
expect() {
	n=$(head -n 1 err.txt | wc -c)
	if [ "$status" -ne "$2" ]; then
		fail "$1: exit $status, expected $2 (stderr: $(head -c 300 err.txt))"
	elif ! grep -qF -- "$3" err.txt; then
		fail "$1: stderr lacks '$3': $(head -c 300 err.txt)"
	elif [ "$n" -gt 200 ]; then
		fail "$1: a message of $n bytes: $(head -c 200 err.txt)..."
	else
		ok "$1: exit $status, '$(head -n 1 err.txt | cut -c 1-120)'"
	fi
}

# --- report --width: the error states 80 to 1000, whatever the value ----------------

# Before, a value that was no number from 1 to 1000000 was told that range.
for w in 0 2000000 99999999999999999999 abc -5; do
	run "--width $w" "$SP" report --width "$w" none.spool
	expect "report --width $w" 2 "invalid width '$w': expected a number from 80 to 1000"
done

# --- report --pid: over 1024 pids, the count and the limit, not the list -------------

many=$(seq -s, 1 1100)
run "--pid x1100" "$SP" report --pid "$many" none.spool
expect "report --pid with 1100 pids" 2 "too many pids: 1100 given, at most 1024"
run "--pid x1000 --pid x100" "$SP" report --pid "$(seq -s, 1 1000)" --pid "$(seq -s, 1001 1100)" \
	none.spool
expect "report --pid with 1000 and 100 pids" 2 "too many pids: 1100 given, at most 1024"
run "--tid x2000" "$SP" report --tid "$(seq -s, 1 2000)" none.spool
expect "report --tid with 2000 tids" 2 "too many tids: 2000 given, at most 1024"

# A malformed list is echoed cut at 60 characters.
cut60="1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,...'"
bad="$(seq -s, 1 1000)x"
run "--pid bad" "$SP" report --pid "$bad" none.spool
expect "report --pid with a bad list of 1000" 2 "invalid pid list '$cut60"
run "-p bad" "$SP" record -o never.spool -p "$bad"
expect "record -p with a bad list of 1000" 2 "invalid process id list '$cut60"

# --- record -p KTHREAD: said, exit 1, no spool ----------------------------------------

# The first process with PF_KTHREAD (0x00200000) in /proc/PID/stat's flags, the
# seventh field after comm (which may hold spaces and parentheses).
kthread=
for f in /proc/2/stat /proc/[0-9]*/stat; do
	line=$(cat "$f" 2>/dev/null) || continue
	# shellcheck disable=SC2086 # the fields after comm, split on purpose
	set -- ${line##*) }
	[ $# -ge 7 ] && [ $(($7 & 0x200000)) -ne 0 ] || continue
	kthread=${line%% *}
	break
done
if [ -z "$kthread" ]; then
	skip "record -p of a kernel thread: none visible in this pid namespace"
else
	info "kernel thread: pid $kthread ($(cat /proc/"$kthread"/comm 2>/dev/null))"
	run "-p kthread" "$SP" record -o kthread.spool -d 1 -p "$kthread"
	expect "record -p $kthread (a kernel thread)" 1 \
		"cannot record pid $kthread: it is a kernel thread"
	run "-p self,kthread" "$SP" record -o kthread.spool -d 1 -p "$$,$kthread"
	expect "record -p $$,$kthread (a kernel thread second)" 1 \
		"cannot record pid $kthread: it is a kernel thread"
	[ -e kthread.spool ] && fail "record -p of a kernel thread left a spool" ||
		ok "record -p of a kernel thread left no spool"
fi

# -h is help, as in perf, among the leading options only (a launched command's -h is its own).
for sub in record report dump symbolize; do
	run "$sub -h" "$SP" $sub -h
	[ "$status" = 0 ] && grep -q "^Usage: stackpulse $sub" out.txt &&
		ok "$sub -h prints the help" || fail "$sub -h: exit $status: $(head -c 200 err.txt)"
done
run "record -- sh -c -h" "$SP" record -o h.spool -- sh -c 'echo "arg:$0"' -h
[ "$status" = 0 ] && grep -q "arg:-h" out.txt && ! grep -q "^Usage:" out.txt &&
	ok "record -- COMMAND -h passes -h to the command" ||
	fail "record -- sh -c ... -h: exit $status: $(head -c 200 out.txt) $(head -c 200 err.txt)"
run "record --stop-attach without -p" "$SP" record --stop-attach -- true
expect "record --stop-attach without -p" 2 "--stop-attach goes with -p"
run "record -p with a trailing comma" "$SP" record -p "$$,"
expect "record -p $$, (a trailing comma)" 2 "invalid process id list"
# symbolize -o - would write a file named '-': refused, it writes spool files only.
"$SP" record -q -o tiny.spool -- true >/dev/null 2>&1 || "$SP" record -o tiny.spool -- true >/dev/null 2>&1
run "symbolize -o -" "$SP" symbolize -o - tiny.spool
expect "symbolize -o -" 2 "symbolize writes a spool file, not standard output"
[ -e ./- ] && fail "symbolize -o - wrote a file named '-'" || ok "symbolize -o - wrote no file named '-'"

finish
