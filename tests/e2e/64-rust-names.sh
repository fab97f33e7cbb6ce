# SPDX-License-Identifier: MIT
# Rust names are demangled, as rustfilt and perf print them: the
# legacy scheme without its hash ("rust_names::dm::work", closures "{{closure}}"), the v0
# scheme with its generic arguments and closures ("rust_names::dm::work::<u32>",
# "{closure#0}", crate disambiguators hidden).  Inline frames are named by their DWARF
# linkage names, demangled the same way, so they are qualified like out-of-line ones
# ("core::num::<impl u64>::wrapping_add", not "wrapping_add"; Rust's standard library
# has v0 names).  --no-demangle keeps the raw symbols.
# Beside: perf report's names for the same programs.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_cmd rustc "building the Rust workload (Debian package rustc)"

SRC=$WORKLOADS/rust_names.rs
rustc -C opt-level=1 -g -o rn_legacy "$SRC" 2>rustc.err ||
	{ fail "rustc cannot build $SRC (legacy mangling): $(head -c 300 rustc.err)"; finish; }
if ! rustc -C opt-level=1 -g -C symbol-mangling-version=v0 -o rn_v0 "$SRC" 2>rustc.err; then
	skip "$(rustc --version) takes no -C symbol-mangling-version=v0: $(head -n 1 rustc.err)"
fi
info "$(rustc --version)"

# check MANGLING CHAIN-ERE RAW-ERE: record the program, its samples must carry CHAIN-ERE
# (>= 95%), no name may keep a legacy hash or a mangled prefix, and --no-demangle shows RAW-ERE.
check() {
	m=$1 chain=$2 raw=$3
	[ -x "rn_$m" ] || return 0
	sp_record "$m.spool" -F 999 -- "./rn_$m" 1.5 >/dev/null ||
		{ fail "$m: record exited $?: $(head -c 300 record.err)"; return; }
	with_timeout 60 "$SP" report --format=folded "$m.spool" >"$m.folded" 2>/dev/null ||
		{ fail "$m: report exited $?"; return; }
	set -- $(folded_share "$m.folded" "$chain")
	ref=
	if with_timeout 120 perf record -q -F 999 -g -o "$m.data" -- "./rn_$m" 1.5 >/dev/null 2>&1; then
		ref=$(perf report -i "$m.data" --stdio --no-children --sort sym -g none 2>/dev/null |
			awk '$1 ~ /%$/ { $2 = ""; print; exit }')
	fi
	info "$m: $1 of $2 samples carry the chain${ref:+; perf's top entry: $ref}"
	share_at_least "$m mangling:" 95 "$1" "$2" "the samples name the chain in Rust's spelling" ||
		info "$m mangling: top stacks: $(folded_top "$m.folded" 2 | tr '\n' ' ')"
	bad=$(tr ';' '\n' <"$m.folded" | grep -E '::h[0-9a-f]{16}($| )|^_R[A-Za-z0-9_]|^_ZN' | head -n 3 | tr '\n' ' ')
	[ -z "$bad" ] && ok "$m mangling: no name keeps its hash or its mangled form" ||
		fail "$m mangling: names left mangled: $bad"
	# Rust's inline frames without their path: generic or closure names, and those seen
	# bare before (C library frames, tcache_init, have no path to give).
	bare=$(grep ';main;' "$m.folded" | sed 's/.*;main;//; s/ [0-9]*$//' | tr ';' '\n' |
		grep '_\[i\]$' | grep -v '::' |
		grep -E '[<{]|^(init|wrapping_[a-z]+|call_once|catch_unwind|do_call|try|get_stack_start|install_main_guard[a-z_]*|stack_start_aligned)_\[i\]$' |
		sort -u | head -n 3 | tr '\n' ' ')
	[ -z "$bare" ] && ok "$m mangling: Rust's inline frames under main are qualified (crate::...::f)" ||
		fail "$m mangling: inline frames without their path: $bare"
	with_timeout 60 "$SP" report --no-demangle --format=folded "$m.spool" >"$m.raw" 2>/dev/null
	grep -Eq "$raw" "$m.raw" && ok "$m mangling: --no-demangle shows the raw symbols" ||
		fail "$m mangling: --no-demangle shows no $raw: $(folded_top "$m.raw" 1)"
}

check legacy ';rust_names::main;rust_names::dm::outer;rust_names::dm::outer::\{\{closure\}\};rust_names::dm::work(;|$)' \
	'_ZN10rust_names2dm4work17h[0-9a-f]{16}E'
check v0 ';rust_names::main;rust_names::dm::outer;rust_names::dm::outer::\{closure#0\};rust_names::dm::work::<u32>(;|$)' \
	'_RINvNtC[A-Za-z0-9_]*10rust_names2dm4work'
finish
