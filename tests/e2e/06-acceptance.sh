# SPDX-License-Identifier: MIT
# Acceptance: on each workload recorded at 999 Hz, at least 99% of the samples carry the
# whole expected chain, from the leaf through main down to the C library's start
# frames (or, on worker threads, to the thread start frames).  Prints the shares.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events

# Process root: _start -> __libc_start_main (any versioned or _impl name) ->
# __libc_start_call_main -> main.  Thread root: clone3 (or clone) -> start_thread.
ROOT='^_start;__libc_start_main[^;]*;__libc_start_call_main;main'
THREAD_ROOT='^(__GI_)?_*clone3?;start_thread'
MIN=99

# accept NAME ERE FOLDED: print the share of samples whose stack matches; require MIN%.
accept() {
	set -- "$1" "$2" "$3" $(folded_share "$3" "$2")
	# For the record: stacks that reach a root at all, whatever their leaf (samples
	# in qsort's own code or in thread setup are rooted but miss the expected leaf).
	rooted=$(folded_share "$3" "($ROOT|$THREAD_ROOT)(;|\$)")
	info "$1: rooted stacks (any leaf) ${rooted% *} / ${rooted#* } = $(pct ${rooted% *} ${rooted#* })%"
	if [ "$5" -lt 1000 ]; then
		fail "$1: only $5 samples (expected about 2000)"
	elif ! share_at_least "$1:" "$MIN" "$4" "$5" "the samples carry the whole chain"; then
		info "other stacks:"
		folded_top "$3" 100 | SHARE_RE=$2 awk '{ s = $0; sub(/^[0-9]+ /, "", s) } s !~ ENVIRON["SHARE_RE"]' |
			head -n 5 | sed 's/^/#   /'
	fi
}

# record_folded NAME ARGS...: record a workload at 999 Hz and fold its report.
record_folded() {
	name=$1
	shift
	need_workload "$name"
	if ! sp_record "$name.spool" -F 999 -- "$WL" "$@" >/dev/null; then
		fail "$name: record failed: $(head -c 300 record.err)"
		return 1
	fi
	sed "s/^/# $name record: /" record.err
	if ! with_timeout 60 "$SP" report --format=folded "$name.spool" >"$name.folded" 2>"$name.err"; then
		fail "$name: report --format=folded failed: $(head -c 300 "$name.err")"
		return 1
	fi
	folded_top "$name.folded" 3 | sed "s/^/# $name top: /"
}

if record_folded chain4 -t 2; then
	accept chain4 "$ROOT;level1;level2;level3;level4\$" chain4.folded
fi

# qsort: sort_many calls into the C library's qsort (named qsort, qsort_r, __qsort_r,
# __GI___qsort_r), whose merge-sort internals (msort_with_tmp, any depth) call back.
if record_folded qsort_cb -t 2; then
	accept qsort_cb "$ROOT;sort_many;[^;]*qsort[^;]*(;[^;]+)*;compare_slow\$" qsort_cb.folded
fi

# sighandler: the SIGPROF handler's samples continue through the signal trampoline
# (one frame, __restore_rt) into the interrupted spin_inner; the rest are in spin_inner
# (or, rarely, in the trampoline itself on its way back).
if record_folded sighandler -t 2; then
	accept sighandler "$ROOT;spin_outer;spin_inner(;__restore_rt|;[^;]+;on_signal(;handler_work)?)?\$" sighandler.folded
	set -- $(folded_share sighandler.folded ";on_signal(;handler_work)?\$") 
	in_handler=$1
	total=$2
	share_at_least sighandler: 50 "$in_handler" "$total" "the samples are in the signal handler"
	set -- $(folded_share sighandler.folded ";spin_inner;__restore_rt;on_signal(;handler_work)?\$")
	if [ "$in_handler" -gt 0 ] && [ "$1" -eq "$in_handler" ]; then
		ok "sighandler: every handler stack names the trampoline __restore_rt under on_signal"
	else
		tramp=$(grep -o 'spin_inner;[^;]*;on_signal' sighandler.folded | sort | uniq -c | sort -rn | head -n 3 | tr '\n' ' ')
		fail "sighandler: $1 of $in_handler handler stacks have spin_inner;__restore_rt;on_signal (seen: $tramp)"
	fi
fi

# threads: worker stacks root at the thread start frames; main only creates and joins.
if record_folded threads -n 3 -t 2; then
	accept threads "$THREAD_ROOT;worker;worker_step;worker_leaf\$" threads.folded
fi

finish
