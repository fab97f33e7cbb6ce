# SPDX-License-Identifier: MIT
# report: -o FILE, folded totals, missing / truncated / garbage / empty spools.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload chain4

sp_record p.spool -F 999 -- "$WL" -t 2 >/dev/null || { fail "record failed: $(head -c 300 record.err)"; finish; }
samples=$(summary_number record.err samples)

# -o FILE: the report goes to the file, nothing to stdout.
with_timeout 60 "$SP" report -o rep.txt p.spool >stdout.txt 2>err.txt
st=$?
[ $st -eq 0 ] && ok "report -o rep.txt exits 0" || fail "report -o exited $st: $(head -c 300 err.txt)"
grep -q 'Self%' rep.txt 2>/dev/null && ok "report -o writes the report to the file" || fail "rep.txt has no report"
[ ! -s stdout.txt ] && ok "report -o prints nothing on stdout" || fail "report -o also printed on stdout"
with_timeout 60 "$SP" report p.spool >plain.txt 2>/dev/null
cmp -s plain.txt rep.txt && ok "report -o FILE equals report on stdout" || fail "report -o FILE differs from stdout report"
grep -qi 'level4' plain.txt && ok "report shows level4" || fail "report does not show level4"

with_timeout 60 "$SP" report --format=folded -o folded.txt p.spool 2>err.txt
st=$?
[ $st -eq 0 ] && ok "report --format=folded -o exits 0" || fail "report --format=folded -o exited $st"
bad=$(grep -cvE '^[^ ].* [0-9]+$' folded.txt)
if [ ! -s folded.txt ]; then
	fail "report --format=folded -o wrote nothing"
elif [ "$bad" -eq 0 ]; then
	ok "every folded line is 'frames count'"
else
	fail "$bad folded lines are not 'frames count'"
fi
dups=$(awk '{ $NF = ""; print }' folded.txt | sort | uniq -d | wc -l)
[ "$dups" -eq 0 ] && ok "folded lines are distinct stacks" || fail "$dups stacks appear on more than one folded line"
total=$(folded_total folded.txt)
if [ -n "$samples" ]; then
	[ "$total" -eq "$samples" ] && ok "folded counts add up to the $samples samples recorded" ||
		fail "folded counts add up to $total, record wrote $samples samples"
fi

# A missing spool: the documented message and status 1.
with_timeout 30 "$SP" report x.spool >out.txt 2>err.txt
st=$?
[ $st -eq 1 ] && ok "report on a missing spool exits 1" || fail "report on a missing spool exited $st"
want="stackpulse report: cannot open spool 'x.spool': No such file or directory"
grep -qxF "$want" err.txt && ok "missing spool message: $want" || fail "missing spool message is '$(head -n 1 err.txt)'"

# No SPOOL argument and no profile.spool here: the default name is in the message.
with_timeout 30 "$SP" report >out.txt 2>err.txt
st=$?
[ $st -eq 1 ] && grep -q "profile.spool" err.txt && ok "report with no spool names profile.spool and exits 1" ||
	fail "report without profile.spool exited $st: $(head -c 200 err.txt)"

# A truncated spool: the intact prefix is reported, with a warning.
size=$(wc -c <p.spool)
head -c $((size * 2 / 3)) p.spool >cut.spool
with_timeout 60 "$SP" report cut.spool >cut.txt 2>cut.err
st=$?
[ $st -eq 0 ] && ok "report on a spool cut to 2/3 exits 0" || fail "report on a truncated spool exited $st: $(head -c 300 cut.err)"
grep -q 'Self%' cut.txt && grep -qi level4 cut.txt && ok "truncated spool still gives a report with level4" ||
	fail "truncated spool gives no usable report"
grep -qi 'truncat' cut.err && ok "truncated spool warns: $(head -n 1 cut.err)" || fail "no truncation warning on stderr"
with_timeout 60 "$SP" report --format=folded cut.spool >cut.folded 2>/dev/null
cut_total=$(folded_total cut.folded)
if [ "$cut_total" -gt 0 ] && [ "$cut_total" -lt "$total" ]; then
	ok "truncated spool keeps $cut_total of $total samples"
else
	fail "truncated spool reports $cut_total samples (full: $total)"
fi

# Cut points all over the file: never a crash (status >= 128) and never a hang.
crashes=0
for frac in 1 2 5 10 25 50 75 90 99; do
	head -c $((size * frac / 100)) p.spool >c.spool
	with_timeout 30 "$SP" report c.spool >/dev/null 2>&1
	st=$?
	[ $st -ge 124 ] && { crashes=$((crashes + 1)); info "cut at $frac%: status $st"; }
done
[ $crashes -eq 0 ] && ok "report survives spools cut at 1..99%" || fail "report crashed or hung on $crashes cut spools"

# Garbage and empty files: a clear error, status 1, no crash.
head -c 65536 /dev/urandom >garbage.spool
with_timeout 30 "$SP" report garbage.spool >out.txt 2>err.txt
st=$?
[ $st -eq 1 ] && ok "report on random bytes exits 1" || fail "report on random bytes exited $st"
grep -q "stackpulse report: .*garbage.spool" err.txt && ok "garbage error: $(head -n 1 err.txt)" ||
	fail "garbage error message is '$(head -n 1 err.txt)'"
printf 'hello, this is not a spool\n' >text.spool
with_timeout 30 "$SP" report text.spool >/dev/null 2>err.txt
st=$?
[ $st -eq 1 ] && ok "report on a text file exits 1 ($(head -n 1 err.txt))" || fail "report on a text file exited $st"
: >empty.spool
with_timeout 30 "$SP" report empty.spool >/dev/null 2>err.txt
st=$?
[ $st -eq 1 ] && ok "report on an empty file exits 1 ($(head -n 1 err.txt))" || fail "report on an empty file exited $st"

# Corrupt bytes inside a valid spool: no crash.
crashes=0
i=1
while [ $i -le 8 ]; do
	cp p.spool flip.spool
	off=$((size * i / 9))
	printf '\377\377\377\377\377\377\377\377' | dd of=flip.spool bs=1 seek=$off conv=notrunc 2>/dev/null
	with_timeout 30 "$SP" report flip.spool >/dev/null 2>&1
	st=$?
	[ $st -ge 124 ] && { crashes=$((crashes + 1)); info "overwrite at byte $off: status $st"; }
	i=$((i + 1))
done
[ $crashes -eq 0 ] && ok "report survives 8 spools with overwritten bytes" || fail "report crashed or hung on $crashes corrupted spools"

# -o naming a spool (the input, or another recording) is refused: the recording stays.
cp p.spool keep.spool
with_timeout 60 "$SP" report -o keep.spool p.spool >/dev/null 2>over.err
rc=$?
[ $rc = 1 ] && cmp -s p.spool keep.spool && grep -q "refusing to overwrite spool 'keep.spool'" over.err &&
	ok "report -o over a spool is refused (exit 1), the spool intact" ||
	fail "report -o over a spool: exit $rc, $(head -c 200 over.err)"

finish
