# SPDX-License-Identifier: MIT
# Kernel frames named from kallsyms: a -k recording of a system-call-heavy program
# reports entry_SYSCALL_64 / do_syscall_64 / *sys_* names in [kernel.kallsyms], from
# /proc/kallsyms or from a saved copy (--kallsyms); a copy with every address 0
# (kernel.kptr_restrict) and --no-kernel-symbols leave [kernel]+0x addresses.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload syscall_loop

if [ "$(id -u)" != 0 ] && [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -ge 2 ]; then
	skip_all "this user may not sample the kernel (perf_event_paranoid=$(cat /proc/sys/kernel/perf_event_paranoid))"
fi
if [ ! -r /proc/kallsyms ]; then
	skip_all "/proc/kallsyms is not readable"
fi
cp /proc/kallsyms saved.kallsyms
if ! awk '$1 !~ /^0+$/ { found = 1; exit } END { exit !found }' saved.kallsyms; then
	skip_all "/proc/kallsyms shows every address as 0 to this user (kernel.kptr_restrict=$(cat /proc/sys/kernel/kptr_restrict 2>/dev/null))"
fi

sp_record k.spool -k -F 999 -- "$WL" -t 1 >/dev/null || {
	fail "record -k exited $?: $(head -c 300 record.err)"
	finish
}
ok "record -k of syscall_loop exits 0"

# kernel_share FOLDED ERE: "MATCHED TOTAL" over the samples with a kernel frame, known
# as the stacks that go on past the C library's system call wrappers.
NAMED='(^|;)(entry_SYSCALL[^;]*|do_syscall_64|[^;]*sys_[^;]*)(;|$)'

start=$(date +%s%N)
with_timeout 60 "$SP" report --format=folded k.spool >named.folded 2>named.err
st=$?
end=$(date +%s%N)
[ $st -eq 0 ] && ok "report of the -k spool exits 0" || fail "report exited $st: $(head -c 300 named.err)"
with_timeout 60 "$SP" report --format=folded --no-kernel-symbols k.spool >addr.folded 2>/dev/null
end2=$(date +%s%N)
info "report --format=folded: $(( (end - start) / 1000000 )) ms with kernel symbols, $(( (end2 - end) / 1000000 )) ms without ($(wc -l <saved.kallsyms) kallsyms lines)"
folded_top named.folded 3 | sed 's/^/# top: /'

set -- $(folded_share addr.folded '\[kernel\]\+0x')
kernel=$1 total=$2
info "samples with kernel frames: $kernel of $total"
[ "$kernel" -gt 0 ] && ok "--no-kernel-symbols: $kernel samples show [kernel]+0x frames" ||
	fail "--no-kernel-symbols: no sample shows a [kernel]+0x frame"
if grep -qE 'entry_SYSCALL|do_syscall_64' addr.folded; then
	fail "--no-kernel-symbols still names kernel functions"
else
	ok "--no-kernel-symbols names no kernel function"
fi

set -- $(folded_share named.folded "$NAMED")
share_at_least 90 "$1" "$kernel" "the kernel stacks name a system call entry (entry_SYSCALL / do_syscall_64 / *sys_*)"
set -- $(folded_share named.folded '\[kernel\]\+0x')
left=$(pct "$1" "$kernel")
info "samples still holding an unnamed kernel frame: $1 ($left%)"
[ "$(num_ge 5 "$left")" = 1 ] && ok "$left% of the kernel stacks keep an unnamed kernel frame (<= 5%)" ||
	fail "$left% of the kernel stacks keep an unnamed kernel frame"
grep -q 'do_syscall_64' named.folded && ok "do_syscall_64 appears in the folded stacks" ||
	fail "do_syscall_64 is missing from the folded stacks"
if [ -s named.err ]; then
	fail "report warned: $(head -c 300 named.err)"
else
	ok "no warning about kernel symbols"
fi

with_timeout 60 "$SP" report k.spool >named.txt 2>/dev/null
grep -qF '[kernel.kallsyms]' named.txt && ok "the text report's Module column says [kernel.kallsyms]" ||
	fail "no [kernel.kallsyms] module in the text report"

# A copy saved at recording time names the same frames.
with_timeout 60 "$SP" report --format=folded --kallsyms saved.kallsyms k.spool >saved.folded 2>saved.err
cmp -s saved.folded named.folded && ok "--kallsyms with a saved copy gives the same folded stacks" ||
	fail "--kallsyms saved copy differs from /proc/kallsyms: $(diff saved.folded named.folded | head -n 4)"

# kernel.kptr_restrict as an unprivileged reader sees it: every address 0.
sed 's/^[0-9a-fA-F]*/0000000000000000/' saved.kallsyms >zero.kallsyms
with_timeout 60 "$SP" report --format=folded --kallsyms zero.kallsyms k.spool >zero.folded 2>zero.err
st=$?
[ $st -eq 0 ] && ok "report with an all-zero kallsyms exits 0" || fail "report with an all-zero kallsyms exited $st"
cmp -s zero.folded addr.folded && ok "an all-zero kallsyms leaves every kernel frame as an address" ||
	fail "an all-zero kallsyms named something: $(diff zero.folded addr.folded | head -n 4)"
grep -q 'kptr_restrict' zero.err && ok "stderr names kernel.kptr_restrict: $(head -n 1 zero.err)" ||
	fail "no kptr_restrict warning: '$(head -c 300 zero.err)'"

with_timeout 60 "$SP" report --format=folded --kallsyms missing.kallsyms k.spool >missing.folded 2>missing.err
st=$?
[ $st -eq 0 ] && cmp -s missing.folded addr.folded && grep -q "missing.kallsyms" missing.err &&
	ok "a missing --kallsyms file: addresses and a warning naming it" ||
	fail "missing --kallsyms: status $st, warning '$(head -c 200 missing.err)'"
finish
