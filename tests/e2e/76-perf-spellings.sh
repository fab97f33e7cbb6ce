# SPDX-License-Identifier: MIT
# perf's spellings: record -g, --call-graph=dwarf[,SIZE]|fp, -F max and
# -e EVENT:u/:k record what stackpulse's own spelling records; report -i/--input,
# --stdio, --children/--no-children, --sort=sym and dso,sym, -g caller|callee and
# --header give the same bytes as stackpulse's spelling; --stacks 0 hides the stacks;
# other perf options and sort keys (comm, pid, tid, dso) name what to type instead, with
# argp's usage line; a Python run without a perf map gets a hint.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload chain4
C4=$WORKLOADS/chain4

# the spool header's sampling fields, as dump prints them
meta() {
	"$SP" dump "$1" 2>/dev/null | sed -n '1s/.*\(frequency=[0-9]*\) .*\(stack_size=[0-9]*\) \(event=[^ ]*\).*/\1 \2 \3/p'
}

max=$(cat /proc/sys/kernel/perf_event_max_sample_rate 2>/dev/null)
sp_record own.spool -F 499 --stack-size 16384 -e cpu-clock -- "$C4" -t 1 >/dev/null ||
	{ fail "record with stackpulse's spelling exited $?: $(head -c 300 record.err)"; finish; }
sp_record perf.spool -g -F 499 --call-graph=dwarf,16384 -e cpu-clock:u -- "$C4" -t 1 >/dev/null ||
	{ fail "record -g --call-graph=dwarf,16384 -e cpu-clock:u exited $?: $(head -c 300 record.err)"; finish; }
[ -n "$(meta own.spool)" ] && [ "$(meta own.spool)" = "$(meta perf.spool)" ] &&
	ok "record -g --call-graph=dwarf,16384 -e cpu-clock:u records as --stack-size 16384 -e cpu-clock ($(meta perf.spool))" ||
	fail "perf's spelling recorded '$(meta perf.spool)', stackpulse's '$(meta own.spool)'"
sp_record fp.spool --call-graph fp -- "$C4" -t 1 >/dev/null && ok "record --call-graph fp runs" ||
	fail "record --call-graph fp exited $?: $(head -c 300 record.err)"
if [ -n "$max" ]; then
	sp_record max.spool -F max -d 0.3 -- "$C4" -t 1 >/dev/null
	case $(meta max.spool) in "frequency=$max "*) ok "record -F max samples at kernel.perf_event_max_sample_rate ($max Hz)" ;;
	*) fail "record -F max recorded '$(meta max.spool)', the limit is $max" ;; esac
fi
sp_record k.spool -e cpu-clock:k -- "$C4" -t 1 >/dev/null
"$SP" report k.spool 2>/dev/null | grep -q 'kernel frames on' && ok "-e cpu-clock:k adds kernel frames (as -k)" ||
	{ sp_record k2.spool -k -e cpu-clock -- "$C4" -t 1 >/dev/null
	  "$SP" report k2.spool 2>/dev/null | grep -q 'kernel frames on' && fail "-e cpu-clock:k did not add kernel frames" ||
		skip "kernel frames unavailable here (-k records none either)"; }

# report: byte-identical output
same() {
	label=$1
	shift
	"$SP" report "$@" >perf.out 2>&1
	if cmp -s own.out perf.out; then ok "report $label gives the same output"; else
		fail "report $label differs: $(diff own.out perf.out | head -n 4)"; fi
}
"$SP" report own.spool >own.out 2>&1
same "-i FILE" -i own.spool
same "--input=FILE --stdio --header" --input=own.spool --stdio --header
same "--no-children" --no-children own.spool
same "--sort=sym" --sort=sym own.spool
same "--sort dso,sym" --sort dso,sym own.spool
"$SP" report --sort=total own.spool >own.out 2>&1
same "--children" --children own.spool
"$SP" report --tree own.spool >own.out 2>&1
same "-g caller" -g caller own.spool
"$SP" report --inverted own.spool >own.out 2>&1
same "-g callee" -g callee own.spool

"$SP" report --stacks 0 own.spool >nostacks.txt 2>&1
rc=$?
[ "$rc" = 0 ] && ! grep -q 'Heaviest stacks' nostacks.txt && grep -q 'level4' nostacks.txt &&
	ok "report --stacks 0 hides the stacks section" || fail "report --stacks 0: exit $rc, $(tail -n 3 nostacks.txt)"

# perf's other options: a usage error that says what to type
for o in "--dsos=libc.so.6" "-S level4" "--comms=x" "-T" "--tui"; do
	"$SP" report $o own.spool >/dev/null 2>hint.err
	rc=$?
	[ "$rc" = 2 ] && grep -q "stackpulse spells this" hint.err && ok "report $o: $(head -n 1 hint.err | sed 's/.*spells this //')" ||
		fail "report $o: exit $rc, $(head -c 200 hint.err)"
done
# and its usage errors end as argp's own do
grep -q "^Try \`stackpulse report --help' or \`stackpulse report --usage'" hint.err &&
	ok "its usage error ends with argp's 'Try ... --help' or ... --usage'" ||
	fail "the usage error's last lines: $(tail -n 2 hint.err)"
# perf's sort keys without a table here name what stackpulse has instead
for k in comm:--group-by=process pid:--group-by=process tid:--group-by=thread dso:--module \
	comm,dso:--group-by=process; do
	"$SP" report --sort=${k%%:*} own.spool >/dev/null 2>hint.err
	rc=$?
	[ "$rc" = 2 ] && grep -q "stackpulse spells this ${k#*:}" hint.err &&
		grep -q "^Try \`stackpulse report --help'" hint.err &&
		ok "report --sort=${k%%:*}: $(head -n 1 hint.err | sed 's/.*spells this //')" ||
		fail "report --sort=${k%%:*}: exit $rc, $(head -c 300 hint.err)"
done
"$SP" record -t 1 >/dev/null 2>hint.err
[ $? = 2 ] && grep -q "spells this -p PID" hint.err && ok "record -t: points at -p PID" || fail "record -t: $(head -c 200 hint.err)"

# Hints where names are missing: a Python run without -X perf says to use it.
PY=$(find_python 3.12)
if [ -n "$PY" ]; then
	sp_record py.spool -- "$PY" -c 'sum(i * i for i in range(3000000))' >/dev/null
	"$SP" report py.spool >py.txt 2>/dev/null
	grep -q '^Hint: .*Python functions have no names' py.txt && grep -q -- '-X perf' py.txt &&
		ok "a Python run without a perf map gets a hint: -X perf" || fail "no Python hint: $(sed -n 1,14p py.txt)"
	"$SP" report --rows 3 own.spool 2>/dev/null | grep -q '^Hint:' && fail "a C program got a naming hint" ||
		ok "a C program gets no naming hint"
else
	skip "python3.12 with -X perf not found: the Python hint not checked"
fi
finish
