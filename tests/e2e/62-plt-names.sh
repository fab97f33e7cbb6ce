# SPDX-License-Identifier: MIT
# PLT entries are named NAME@plt, as perf names them: a program calling
# a one-line library function through its PLT, dynamically linked (.plt, JUMP_SLOT) and a
# static one calling strlen through its IPLT (IRELATIVE: named after the indirect
# function, where perf shows *ABS*+0xADDRESS@plt).  A sample lands on the PLT entry's
# one jmp only through the timer's skid (from none to a few in a hundred), so the
# programs run 3 s, and a run where none landed says so and names nothing.
# Then the other return address at a function's first byte: a signal restorer's (Go's
# runtime.sigreturn, which the kernel "calls" the handler from): less one, it lies in the
# padding before the function, and is named after the restorer, never left an address.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
CC=${CC:-cc}
command -v "$CC" >/dev/null 2>&1 || skip_all "no C compiler ($CC) to build the PLT programs"

cat >tiny.c <<'EOF2'
int tiny(int x) { return x + 1; }
EOF2
cat >calls.c <<'EOF2'
#include <string.h>
#include <time.h>
int tiny(int);
static const char *volatile text = "";
__attribute__((noinline)) long plt_work(long n)
{
	long s = 0;
	for (long i = 0; i < n; i++)
		s += STATIC_BUILD ? (long)strlen(text) : tiny((int)i);
	return s;
}
int main(void)
{
	struct timespec t0, t;
	long s = 0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		s += plt_work(100000);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - t0.tv_sec < 3);
	return s == 3;
}
EOF2
"$CC" -O2 -shared -fPIC -o libtiny.so tiny.c 2>cc.err &&
	"$CC" -O2 -g -DSTATIC_BUILD=0 -o calls calls.c -L. -ltiny -Wl,-rpath,"$TMP" 2>>cc.err ||
	{ fail "cannot build the dynamic PLT program: $(head -c 300 cc.err)"; finish; }

sp_record dyn.spool -F 999 -- ./calls >/dev/null || { fail "record of calls exited $?: $(head -c 300 record.err)"; finish; }
with_timeout 60 "$SP" report --format=folded dyn.spool >dyn.folded 2>/dev/null
set -- $(folded_share dyn.folded ';plt_work;tiny@plt$')
named=$1 total=$2
set -- $(folded_share dyn.folded ';plt_work;calls\+0x[0-9a-f]+$')
unnamed=$1
ref=
if with_timeout 120 perf record -q -F 999 -o p.data -- ./calls >/dev/null 2>&1; then
	# perf 6.1 names this lazily bound PLT after the nearest symbol before it (_init).
	ref=$(perf report -i p.data --stdio --sort sym 2>/dev/null |
		awk '/\[\.\] (tiny@plt|_init)$/ { printf "%s%s %s", sep, $1, $3; sep = ", " }')
fi
info "calls: $named of $total samples in tiny's PLT entry named tiny@plt, $unnamed in plt_work's callees left as addresses${ref:+; perf report: $ref}"
# A sample lands on the entry's one jmp only through the timer's skid: on a quiet
# machine a run may have none, and then there is nothing to name.
if [ "$named" -eq 0 ] && [ "$unnamed" -eq 0 ]; then
	skip "no sample landed on tiny's PLT entry this run ($total samples): nothing to name"
else
	[ "$named" -gt 0 ] && [ "$unnamed" -eq 0 ] &&
		ok "the PLT entry is named tiny@plt ($named samples), none left as an address" ||
		fail "$named samples named tiny@plt, $unnamed under plt_work stay addresses: $(grep 'calls+0x' dyn.folded | head -n 2 | tr '\n' ' ')"
fi

if "$CC" -O2 -g -static -DSTATIC_BUILD=1 -o calls_static calls.c 2>cc.err; then
	sp_record st.spool -F 999 -- ./calls_static >/dev/null || fail "record of calls_static exited $?"
	with_timeout 60 "$SP" report --format=folded st.spool >st.folded 2>/dev/null
	set -- $(folded_share st.folded ';plt_work;strlen@plt$')
	named=$1
	set -- $(folded_share st.folded ';plt_work;calls_static\+0x[0-9a-f]+$')
	info "calls_static: $named samples in the IPLT entry named strlen@plt, $1 left as addresses"
	if [ "$named" -eq 0 ] && [ "$1" -eq 0 ]; then
		skip "no sample landed on the static binary's IPLT entry this run: nothing to name"
	else
		[ "$named" -gt 0 ] && [ "$1" -eq 0 ] && ok "the static binary's IPLT entry is named strlen@plt" ||
			fail "IPLT: $named samples named strlen@plt, $1 addresses: $(folded_top st.folded 3 | tr '\n' ' ')"
	fi
else
	skip "no static libc to link calls_static (Debian package libc6-dev): $(head -c 200 cc.err)"
fi

# --- Go's signal restorer -----------------------------------------------------------
if ! command -v go >/dev/null 2>&1; then
	skip "go not found (Debian package golang-go): the signal restorer is not checked"
elif ! (cp "$WORKLOADS/go_signals.go" main.go && GOCACHE=$PWD/gocache GOPATH=$PWD/gopath GO111MODULE=off \
	with_timeout 300 go build -o go_signals main.go) 2>go.err; then
	fail "cannot build go_signals: $(head -c 300 go.err)"
else
	sp_record gs.spool -F 999 -- ./go_signals >/dev/null || fail "record of go_signals exited $?"
	with_timeout 60 "$SP" report --format=folded gs.spool >gs.folded 2>/dev/null
	# The handler's caller: the frame right under runtime.sigtramp.abi0 (folded: before it).
	set -- $(folded_share gs.folded ';runtime\.sigtramp[^;]*(;|$)')
	under=$1
	set -- $(folded_share gs.folded '(^|;)runtime\.sigreturn[^;]*;runtime\.sigtramp')
	named=$1
	set -- $(folded_share gs.folded '(^|;)go_signals\+0x[0-9a-f]+;runtime\.sigtramp')
	info "go_signals: $under samples in the signal handler, $named with runtime.sigreturn as its caller, $1 with an address"
	if [ "$under" -eq 0 ]; then
		skip "no sample landed in Go's signal handler this run"
	else
		[ "$1" -eq 0 ] && [ "$named" -gt 0 ] &&
			ok "the signal handler's caller is named runtime.sigreturn ($named samples), none an address" ||
			fail "the handler's caller: $named named runtime.sigreturn, $1 left an address: $(grep 'sigtramp' gs.folded | head -n 2 | cut -c1-200 | tr '\n' ' ')"
	fi
fi
finish
