# SPDX-License-Identifier: MIT
# An exec replaces the process's modules: a command that execs another program is
# recorded with the new program's stacks complete, and the spool marks the exec.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload chain4
need_cmd sh "a command that execs the workload"

# The launched command is sh; sh then replaces itself with chain4 (a second exec).
sp_record exec.spool -F 999 -- sh -c "exec '$WL' -t 1"
rc=$?
[ "$rc" -eq 0 ] && ok "record of 'sh -c exec chain4' exits 0" || fail "record exited $rc: $(cat record.err)"

"$SP" dump exec.spool >dump.txt 2>dump.err || fail "dump failed: $(cat dump.err)"
execs=$(grep -c '^exec ' dump.txt)
if [ "$execs" -ge 1 ]; then
	ok "dump shows $execs exec marker(s)"
else
	fail "dump shows no exec marker"
fi
# Both images' modules were recorded for the one pid, sh's and chain4's.
if grep -q '^module .*path=".*/sh"\|^module .*path=".*dash"' dump.txt &&
	grep -q '^module .*path=".*chain4"' dump.txt; then
	ok "modules of both the shell and chain4 are recorded"
else
	fail "expected modules of sh and chain4 in the dump"
fi

"$SP" report --format=folded exec.spool >folded.txt 2>report.err || fail "report failed: $(cat report.err)"
set -- $(folded_share folded.txt '^_start;__libc_start_main[^;]*;__libc_start_call_main;main;level1;level2;level3;level4$')
share_at_least 95 "$1" "$2" "the samples after the exec carry chain4's chain (resolved against the new image)"
finish
