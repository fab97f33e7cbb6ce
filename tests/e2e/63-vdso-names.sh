# SPDX-License-Identifier: MIT
# vDSO frames are named: a program reading the clock in a loop spends
# most of its time in the vDSO; its frames there are named from the recording host's
# own vDSO image when its build-id proves it the recorded one (__vdso_clock_gettime),
# and symbolize stores those names.  Internal vDSO helpers that no symbol names stay
# [vdso]+0xOFFSET, as in perf.  Beside: perf report's names for the same program.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
CC=${CC:-cc}
command -v "$CC" >/dev/null 2>&1 || skip_all "no C compiler ($CC) to build the clock loop"

cat >clock.c <<'EOF2'
#include <time.h>
__attribute__((noinline)) long clock_work(long n)
{
	struct timespec t;
	long s = 0;
	for (long i = 0; i < n; i++) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		s += t.tv_nsec;
	}
	return s;
}
/* about 2 s at 25 ns a call */
int main(void)
{
	long s = 0;
	for (int k = 0; k < 1600; k++)
		s += clock_work(50000);
	return s == 3;
}
EOF2
"$CC" -O2 -g -o clock clock.c 2>cc.err || { fail "cannot build the clock loop: $(head -c 300 cc.err)"; finish; }
grep -q '\[vdso\]' /proc/self/maps || skip_all "this kernel maps no vDSO"

sp_record c.spool -F 999 -- ./clock >/dev/null || { fail "record of the clock loop exited $?: $(head -c 300 record.err)"; finish; }
with_timeout 60 "$SP" report --format=folded c.spool >c.folded 2>/dev/null
set -- $(folded_share c.folded ';clock_work;clock_gettime;\[vdso\]')
in_vdso=$1 total=$2
set -- $(folded_share c.folded ';clock_work;clock_gettime;__vdso_clock_gettime(;|$)')
named=$1
ref=
if with_timeout 120 perf record -q -F 999 -o p.data -- ./clock >/dev/null 2>&1; then
	ref=$(perf report -i p.data --stdio --sort dso,sym 2>/dev/null |
		awk '/\[vdso\]/ { t += $1; if (/__vdso_clock_gettime/) n += $1 }
		     END { printf "%.1f%% of samples in the vDSO, %.1f%% named __vdso_clock_gettime", t, n }')
fi
info "clock loop: $named of $total samples enter the vDSO through __vdso_clock_gettime, $in_vdso through an unnamed vDSO frame${ref:+; perf: $ref}"
share_at_least 90 "$named" "$total" "the samples name the vDSO entry __vdso_clock_gettime" ||
	info "top stacks: $(folded_top c.folded 3 | tr '\n' ' ')"
[ "$in_vdso" -eq 0 ] && ok "no vDSO entry frame is left as an address" ||
	fail "$in_vdso samples enter the vDSO through an address: $(grep 'clock_gettime;\[vdso\]' c.folded | head -n 2 | tr '\n' ' ')"

with_timeout 60 "$SP" symbolize -o s.spool c.spool >/dev/null 2>&1 || fail "symbolize exited $?"
with_timeout 60 "$SP" dump s.spool 2>/dev/null | grep -q '__vdso_clock_gettime' &&
	ok "symbolize stores the vDSO names in the spool" ||
	fail "the symbolized spool stores no __vdso_clock_gettime"
finish
