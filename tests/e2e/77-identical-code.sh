# SPDX-License-Identifier: MIT
# Identical code is one function: 20 byte-identical copies of a program run
# from 20 paths under other names (as go test and cargo test run test binaries) give
# one row for the hot function, not 20; a copy under another name diffs per function
# against the original, with a notice.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload three_funcs
TF=$WL

# live_rows FILE: the compute_hash rows of the last table top --batch or report --follow
# printed in FILE (self, total in the window, self, total since the start, function, module).
live_rows() {
	awk '/^--- / { n = 0; t = 0; next } /Self%  *Total%/ { t = 1; next }
		t && $5 == "compute_hash" { rows[++n] = $0 } END { for (i = 1; i <= n; i++) print rows[i] }' "$1"
}
# live_check LABEL FILE: its last table holds compute_hash in one row with >= 90% since the start.
live_check() {
	rows=$(live_rows "$2")
	n=$(echo "$rows" | grep -c compute_hash)
	self=$(echo "$rows" | awk 'NR == 1 { sub(/%/, "", $3); print $3 }')
	[ "$n" = 1 ] && [ "$(num_ge "${self:-0}" 90)" = 1 ] &&
		ok "$1: compute_hash is one row with $self% since the start (>= 90%)" ||
		fail "$1: compute_hash is $n rows, the first ${self:-no}%: $(sed -n '/Self%/,$p' "$2" | tail -n 6)"
}

# The copies share the original's build-id; names and directories all differ.
cmd=
for i in $(seq 1 20); do
	mkdir -p "run$i"
	cp "$TF" "run$i/suite_$i.test"
	cmd="$cmd ./run$i/suite_$i.test -n 12 -x 60;"
done
sp_record copies.spool -F 999 -- sh -c "$cmd" >/dev/null ||
	{ fail "record of 20 copies exited $?: $(head -c 300 record.err)"; finish; }
"$SP" report --rows 5 copies.spool >copies.txt 2>&1
# table rows: self, total, samples, function, module
rows=$(awk '/Self%  *Total%/ { t = 1; next } t && NF == 0 { exit } t && $4 == "compute_hash"' copies.txt)
n=$(echo "$rows" | grep -c compute_hash)
self=$(echo "$rows" | awk 'NR == 1 { sub(/%/, "", $1); print $1 }')
info "compute_hash rows: $n; $(echo "$rows" | head -n 2 | tr -s ' ')"
[ "$n" = 1 ] && ok "compute_hash of 20 copies is one row" || fail "compute_hash is $n rows: $(sed -n '/Self%/,/^$/p' copies.txt | head -8)"
[ "$(num_ge "${self:-0}" 90)" = 1 ] && ok "it holds $self% of the samples (>= 90%)" ||
	fail "compute_hash holds ${self:-no}% (< 90%)"
"$SP" report --format=folded copies.spool >copies.folded 2>/dev/null
set -- $(folded_share copies.folded 'compute_hash$')
share_at_least "folded stacks:" 90 "$1" "$2" "samples in compute_hash"
"$SP" report --format=json --rows 1 copies.spool >copies.json 2>/dev/null
if command -v python3 >/dev/null 2>&1; then
	top=$(python3 -c 'import json,sys; f=json.load(open(sys.argv[1]))["functions"][0]; print(f["name"], round(f["self_percent"]))' copies.json 2>&1)
	case $top in "compute_hash "9[0-9]|"compute_hash 100") ok "json's top function: $top" ;; *) fail "json's top function: $top" ;; esac
fi
# The live view merges them too: report --follow on the spool, and top on the copies
# as they run (their modules come while the table is read).
with_timeout 60 "$SP" report --follow --rows 5 copies.spool >follow.out 2>follow.err
live_check "report --follow" follow.out
with_timeout 60 "$SP" top --batch -d 1 --rows 5 -F 999 -o top.spool -- sh -c "$cmd" >top.out 2>top.err ||
	fail "top --batch of 20 copies exited $?: $(head -c 300 top.err)"
live_check "top --batch" top.out

# The same without a build-id (objcopy removes its note): the recorder compares the
# copies' bytes and the report merges them the same way.
if command -v objcopy >/dev/null 2>&1 &&
	objcopy --remove-section .note.gnu.build-id "$TF" nobid 2>objcopy.err &&
	! readelf -n nobid 2>/dev/null | grep -q 'Build ID'; then
	cmd=
	for i in $(seq 1 20); do
		mkdir -p "bare$i"
		cp nobid "bare$i/bare_$i.test"
		cmd="$cmd ./bare$i/bare_$i.test -n 12 -x 60;"
	done
	sp_record bare.spool -F 999 -- sh -c "$cmd" >/dev/null ||
		{ fail "record of 20 copies without a build-id exited $?: $(head -c 300 record.err)"; finish; }
	info "without a build-id: $(grep 'recorder CPU' record.err)"
	"$SP" report --rows 5 bare.spool >bare.txt 2>&1
	rows=$(awk '/Self%  *Total%/ { t = 1; next } t && NF == 0 { exit } t && $4 == "compute_hash"' bare.txt)
	n=$(echo "$rows" | grep -c compute_hash)
	self=$(echo "$rows" | awk 'NR == 1 { sub(/%/, "", $1); print $1 }')
	info "without a build-id, compute_hash rows: $n; $(echo "$rows" | head -n 2 | tr -s ' ')"
	[ "$n" = 1 ] && [ "$(num_ge "${self:-0}" 90)" = 1 ] &&
		ok "compute_hash of 20 copies without a build-id is one row with $self% (>= 90%)" ||
		fail "without a build-id: compute_hash is $n rows, the first ${self:-no}%: $(sed -n '/Self%/,/^$/p' bare.txt | head -6)"
	with_timeout 60 "$SP" report --follow --rows 5 bare.spool >bare-follow.out 2>&1
	live_check "report --follow without a build-id" bare-follow.out
	"$SP" dump bare.spool 2>/dev/null | grep '^module .*bare_[0-9]*\.test' >bare.mods
	groups=$(sed -n 's/.* same_bytes_as=\([0-9]*\).*/\1/p' bare.mods | sort -u | wc -l)
	[ "$groups" = 1 ] && [ "$(grep -c same_bytes_as= bare.mods)" = "$(wc -l <bare.mods)" ] &&
		ok "dump: the copies' $(wc -l <bare.mods) module records name one group (same_bytes_as)" ||
		fail "dump: $(grep -c same_bytes_as= bare.mods) of $(wc -l <bare.mods) module records in $groups groups"
	# A copy differing in one byte is not the same file.
	cp nobid other.test
	printf 'X' | dd of=other.test bs=1 seek=$(($(wc -c <other.test) - 1)) conv=notrunc 2>/dev/null
	sp_record two.spool -F 999 -- sh -c "./bare1/bare_1.test -n 12 -x 60; ./other.test -n 12 -x 60" >/dev/null
	"$SP" report --rows 5 two.spool >two.txt 2>&1
	n=$(awk '/Self%  *Total%/ { t = 1; next } t && NF == 0 { exit } t && $4 == "compute_hash"' two.txt | grep -c compute_hash)
	[ "$n" = 2 ] && ok "a copy differing in its last byte stays apart (2 rows)" ||
		fail "a copy differing in one byte: $n compute_hash rows: $(sed -n '/Self%/,/^$/p' two.txt | head -6)"
	with_timeout 60 "$SP" report --follow --rows 5 two.spool >two-follow.out 2>&1
	n=$(live_rows two-follow.out | grep -c compute_hash)
	[ "$n" = 2 ] && ok "report --follow keeps it apart too (2 rows)" ||
		fail "report --follow, a copy differing in one byte: $n compute_hash rows: $(tail -n 6 two-follow.out)"
else
	skip "objcopy cannot remove the build-id here: copies without one not checked"
fi

# A renamed copy: the diff pairs its functions with the original's, and says so.
cp "$TF" suite_after
sp_record before.spool -F 999 -- "$TF" -n 1500 >/dev/null || { fail "record of three_funcs: $?"; finish; }
sp_record after.spool -F 999 -- ./suite_after -n 1500 -x 3 >/dev/null || { fail "record of suite_after: $?"; finish; }
"$SP" report --diff before.spool after.spool --max-increase 20 >diff.txt 2>diff.err
rc=$?
first=$(awk '/Base +New +Ratio/ { getline; print; exit }' diff.txt)
info "renamed: exit $rc; first row: $first"
echo "$first" | grep -q 'compute_hash (suite_after)' && [ "$rc" = 3 ] &&
	ok "compute_hash of the renamed binary diffs against the original's (exit 3)" ||
	fail "renamed binary: exit $rc, first row '$first'"
grep -q '^Note: .*paired by name across modules' diff.txt && grep -q '^  *three_funcs -> suite_after' diff.txt &&
	ok "a notice says functions were matched across modules" || fail "no notice: $(head -n 6 diff.txt)"
# A function left unmatched shows "gone" as its total's ratio (its self may be gone
# alone: a sample or two of self time in the base, none in the new run).
# Only the functions the program's source defines count: a library's exit code
# (_dl_fini), or the C runtime's (_start, __do_global_dtors_aux), sampled once in one run
# and never in the other is gone whatever the pairing.
gone=$(awk '$5 ~ /^gone\*?$/ && / (main|tf_run|parse_input|compute_hash|write_output|unit) \((three_funcs|suite_after)\)$/' diff.txt | wc -l)
[ "$gone" = 0 ] && ok "no function of the program shows as gone" ||
	fail "$gone functions gone: $(awk '$5 ~ /^gone\*?$/' diff.txt | head -n 3)"
"$SP" report --diff before.spool after.spool --diff-match=module >apart.txt 2>&1
grep -q 'compute_hash (three_funcs)' apart.txt && grep -q 'gone' apart.txt &&
	ok "--diff-match=module keeps them apart" || fail "--diff-match=module: $(sed -n 6,9p apart.txt)"
finish
