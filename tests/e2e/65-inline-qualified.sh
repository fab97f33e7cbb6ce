# SPDX-License-Identifier: MIT
# Inline frames are named like their out-of-line selves: a lambda that
# std::sort inlines is app::Sorter::run(...)::{lambda(int, int)#1}::operator()(int, int)
# const, with its enclosing function and namespace, and the std:: helpers keep their
# namespace (std::__unguarded_partition<...>), from DWARF's linkage names, built by g++
# and by clang++.  Beside: how perf names the same inline frames (perf script, dwarf).
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events

SRC=$WORKLOADS/lambda_sort.cc
built=0
for cxx in g++ clang++; do
	if ! command -v $cxx >/dev/null 2>&1; then
		skip "$cxx not found: its build is not checked"
		continue
	fi
	$cxx -O2 -g -o "sort_$cxx" "$SRC" 2>cc.err || { fail "$cxx cannot build $SRC: $(head -c 300 cc.err)"; continue; }
	built=1
	sp_record "$cxx.spool" -F 999 -- "./sort_$cxx" 1.5 >/dev/null || { fail "$cxx: record exited $?"; continue; }
	with_timeout 60 "$SP" report --format=folded "$cxx.spool" >"$cxx.folded" 2>/dev/null ||
		{ fail "$cxx: report exited $?"; continue; }
	set -- $(folded_share "$cxx.folded" ';app::Sorter::run\(std::vector<int, std::allocator<int> ?>&\)_\[i\];.*;app::Sorter::run\(std::vector<int, std::allocator<int> ?>&\)::\{lambda\(int, int\)#1\}::operator\(\)\(int, int\) const_\[i\]')
	lambda=$1 total=$2
	set -- $(folded_share "$cxx.folded" 'std::sort<')
	info "$cxx: $lambda of $total samples in the lambda, named with its function and namespace; $1 under std::sort"
	[ "$lambda" -gt 0 ] && ok "$cxx: the inlined lambda is app::Sorter::run(...)::{lambda(int, int)#1}::operator() ($lambda samples)" ||
		fail "$cxx: no sample names the qualified lambda: $(folded_top "$cxx.folded" 2 | tr '\n' ' ' | cut -c1-600)"
	# Templates and operator() live in a namespace or a class here (std::, app::, the
	# lambda's); C functions (atof) are global and have no scope to show.
	bare=$(grep ';main;' "$cxx.folded" | sed 's/.*;main;//; s/ [0-9]*$//' | tr ';' '\n' |
		grep '_\[i\]$' | grep -v '::' | grep -E '[<{]|operator' | sort -u | head -n 3 | tr '\n' ' ')
	[ -z "$bare" ] && ok "$cxx: every template and operator() inline frame under main is qualified" ||
		fail "$cxx: inline frames without their scope: $bare"
	if [ $cxx = g++ ] && with_timeout 120 perf record -q -F 999 --call-graph dwarf -o p.data -- "./sort_$cxx" 1 >/dev/null 2>&1; then
		info "perf script's inline frames for the same build: $(perf script -i p.data -F ip,sym 2>/dev/null |
			grep -m 1 'lambda' | sed 's/^[[:space:]]*[0-9a-f]* //' | cut -c1-160)"
	fi
done
[ $built = 1 ] || skip "no C++ compiler built the workload"
finish
