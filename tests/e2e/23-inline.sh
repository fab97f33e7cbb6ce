# SPDX-License-Identifier: MIT
# Inline frames and source lines from DWARF: the inline_chain workload's hot loop is
# mix_inner, inlined into mix_outer, inlined into hot_caller.  The report shows both
# inlined functions as frames of their own above hot_caller, marked inline, with their
# file:line under --lines; --no-inline folds them back into hot_caller.  Then a C++
# program (when g++ is installed): inlined member functions are demangled too.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload inline_chain

SRC=$REPO/tests/workloads/inline_chain.c
ROOT='^_start;__libc_start_main[^;]*;__libc_start_call_main;main'

sp_record ic.spool -F 999 -- "$WL" -t 1 >ic.out || {
	fail "record of inline_chain exited $?: $(head -c 300 record.err)"
	finish
}
with_timeout 60 "$SP" report --format=folded ic.spool >ic.folded 2>ic.err ||
	fail "report --format=folded exited $?: $(head -c 300 ic.err)"
folded_top ic.folded 2 | sed 's/^/# top: /'

# The chain, root first: hot_caller, then what was inlined into it, innermost last.
set -- $(folded_share ic.folded "$ROOT;hot_caller;mix_outer_\\[i\\];mix_inner_\\[i\\]\$")
share_at_least 90 "$1" "$2" "the samples end in main;hot_caller;mix_outer_[i];mix_inner_[i]"
grep -q 'hot_caller_\[i\]' ic.folded && fail "hot_caller, a real function, is marked inline" ||
	ok "hot_caller itself is not marked inline"

with_timeout 60 "$SP" report ic.spool >ic.txt 2>/dev/null
top=$(awk '/Self%/ && /Total%/ { t = 1; next } t { print; exit }' ic.txt)
info "top row: $top"
echo "$top" | grep -Eq ' mix_inner \[inline\] +inline_chain$' &&
	ok "the text table's top function is mix_inner, marked [inline]" ||
	fail "the top row is not 'mix_inner [inline]': $top"
# The heaviest stack, leaf first: the inlined functions above the function holding them.
awk '/^Heaviest stacks/ { h = 1 } h && /^    [^ ]/ { print }' ic.txt | head -n 3 >ic.stack
if [ "$(sed 's/^ *//' ic.stack | tr '\n' '|')" = \
	"mix_inner [inline] (inline_chain)|mix_outer [inline] (inline_chain)|hot_caller (inline_chain)|" ]; then
	ok "the heaviest stack lists mix_inner [inline], mix_outer [inline], hot_caller"
else
	fail "the heaviest stack starts: $(tr '\n' '|' <ic.stack)"
fi

# --lines: the lines come from the source.  mix_inner's sample lines are in its loop;
# mix_outer's is its call of mix_inner, hot_caller's its call of mix_outer.
inner_first=$(grep -n 'ALWAYS_INLINE unsigned long mix_inner' "$SRC" | cut -d: -f1)
outer_call=$(grep -n 'x = mix_inner(x' "$SRC" | cut -d: -f1)
caller_call=$(grep -n 'x = mix_outer(x);' "$SRC" | cut -d: -f1)
info "source lines: mix_inner from $inner_first, mix_outer calls it at $outer_call, hot_caller calls that at $caller_call"
with_timeout 60 "$SP" report --format=folded --lines ic.spool >lines.folded 2>/dev/null
folded_top lines.folded 1 | sed 's/^/# --lines top: /'
set -- $(folded_share lines.folded ";main:[0-9]+;hot_caller:$caller_call;mix_outer:${outer_call}_\\[i\\];mix_inner:[0-9]+_\\[i\\]\$")
share_at_least "--lines folded:" 90 "$1" "$2" "the samples end in hot_caller:$caller_call;mix_outer:${outer_call}_[i];mix_inner:N_[i]"
bad=$(grep -oE 'mix_inner:[0-9]+' lines.folded | cut -d: -f2 | sort -u |
	awk -v lo="$inner_first" -v hi="$outer_call" '$1 <= lo || $1 >= hi' | tr '\n' ' ')
[ -z "$bad" ] && ok "every mix_inner line is inside mix_inner ($(grep -oE 'mix_inner:[0-9]+' lines.folded | sort -u | tr '\n' ' '))" ||
	fail "mix_inner lines outside its body: $bad"
# 160 columns: a stray sample with a long module name (ld-linux-x86-64.so.2) would
# narrow the function column of an 80-column table and cut these names.
with_timeout 60 "$SP" report --lines --width=160 ic.spool >lines.txt 2>/dev/null
grep -Eq "^ +mix_inner \[inline\] \(inline_chain\.c:[0-9]+\) \(inline_chain\)$" lines.txt &&
	grep -q "^ *mix_outer \[inline\] (inline_chain.c:$outer_call) (inline_chain)$" lines.txt &&
	grep -q "^ *hot_caller (inline_chain.c:$caller_call) (inline_chain)$" lines.txt &&
	ok "--lines text: stacks show 'function (inline_chain.c:LINE)', inline frames marked" ||
	fail "--lines text stacks lack the file:line frames: $(grep -m 3 inline_chain.c lines.txt | tr '\n' '|')"
grep -Eq '^ +[0-9.]+% +[0-9.]+% +[0-9]+  mix_inner \[inline\] \(inline_chain\.c:[0-9]+\) +inline_chain$' lines.txt &&
	ok "--lines text: table rows are 'mix_inner [inline] (inline_chain.c:LINE)'" ||
	fail "--lines text table has no 'mix_inner [inline] (inline_chain.c:LINE)' row"

# --no-inline: today's view, one frame per address, named from the symbol table.
with_timeout 60 "$SP" report --format=folded --no-inline ic.spool >noinl.folded 2>/dev/null
set -- $(folded_share noinl.folded "$ROOT;hot_caller\$")
! grep -q '_\[i\]' noinl.folded && ! grep -q mix_ noinl.folded && ok "--no-inline: no inline frames" ||
	fail "--no-inline still shows inline frames: $(folded_top noinl.folded 1)"
share_at_least --no-inline: 90 "$1" "$2" "the samples end in main;hot_caller" ||
	info "--no-inline top stack: $(folded_top noinl.folded 1)"
with_timeout 60 "$SP" report --no-inline ic.spool >noinl.txt 2>/dev/null
! grep -q '\[inline\]' noinl.txt && [ "$(report_top_function noinl.txt)" = hot_caller ] &&
	ok "--no-inline text: hot_caller is the top function, nothing marked [inline]" ||
	fail "--no-inline text: top function '$(report_top_function noinl.txt)'"
with_timeout 60 "$SP" report --format=folded --no-inline --lines ic.spool >noinl-lines.folded 2>/dev/null
set -- $(folded_share noinl-lines.folded ";hot_caller:$caller_call\$")
share_at_least "--no-inline --lines:" 90 "$1" "$2" "the samples end in hot_caller:$caller_call, the line where the inlined code sits" ||
	info "--no-inline --lines top stack: $(folded_top noinl-lines.folded 1)"

# --- C++: inlined member functions are demangled like symbols -------------------------
if ! command -v g++ >/dev/null 2>&1; then
	skip "g++ not found: C++ inline names not checked"
	finish
fi
cat >mixer.cc <<'EOF'
#include <cstdio>
#include <ctime>
namespace demo {
struct Mixer {
	unsigned long x;
	__attribute__((always_inline)) inline void step(unsigned long k)
	{
		for (int i = 0; i < 4096; i++) {
			x = x * 6364136223846793005UL + k;
			__asm__ __volatile__("" : "+r"(x));
		}
	}
};
__attribute__((noinline)) unsigned long churn(Mixer &m, double secs)
{
	timespec t0, t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
	do {
		m.step(1442695040888963407UL);
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	return m.x;
}
}
int main()
{
	demo::Mixer m{42};
	std::printf("mixer: %lx\n", demo::churn(m, 0.7) & 0xff);
	return 0;
}
EOF
if ! g++ -O2 -g -o mixer mixer.cc 2>gxx.err; then
	fail "g++ cannot build the C++ check: $(head -c 300 gxx.err)"
	finish
fi
sp_record cxx.spool -F 999 -- ./mixer >/dev/null || { fail "record of mixer exited $?"; finish; }
with_timeout 60 "$SP" report --format=folded cxx.spool >cxx.folded 2>/dev/null
set -- $(folded_share cxx.folded ';demo::churn\(demo::Mixer&, double\);demo::Mixer::step\(unsigned long\)_\[i\]$')
share_at_least C++: 50 "$1" "$2" "the samples end in demo::churn;demo::Mixer::step(unsigned long)_[i] (inlined, demangled)" ||
	info "C++ top stack: $(folded_top cxx.folded 1)"
with_timeout 60 "$SP" report --format=folded --no-demangle cxx.spool >raw.folded 2>/dev/null
grep -q ';_ZN4demo5churnERNS_5MixerEd;_ZN4demo5Mixer4stepEm_\[i\] ' raw.folded &&
	ok "C++ with --no-demangle: the inline frame keeps its linkage name _ZN4demo5Mixer4stepEm" ||
	fail "C++ with --no-demangle: no _ZN4demo5Mixer4stepEm_[i] frame: $(folded_top raw.folded 1)"
finish
