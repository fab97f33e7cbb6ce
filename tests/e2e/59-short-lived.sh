# SPDX-License-Identifier: MIT
# Short-lived programs whose binary is gone before the recorder drains its ring:
# 100 copies of spin_ms, each run for 20 ms of CPU and deleted as it exits.  The
# side-band event wakes the recorder at each new mapping, so each copy's file is opened
# while its process lives; its CFI and symbols are kept.  Beside stackpulse: perf record
# --call-graph dwarf on the same script.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload spin_ms

SPIN=$(cd "$(dirname "$0")/../workloads" && pwd)/spin_ms
cat >short.sh <<'EOF'
src=$1
dir=$(mktemp -d "${TMPDIR:-/tmp}/stackpulse-short.XXXXXX") || exit 1
i=0
while [ $i -lt 100 ]; do
	cp "$src" "$dir/prog_$i"
	"$dir/prog_$i" 20 >/dev/null
	rm -f "$dir/prog_$i"
	i=$((i + 1))
done
rmdir "$dir"
EOF
WHOLE='^_start;__libc_start_main;__libc_start_call_main;main;spin_outer;spin_leaf$'

sp_record short.spool -F 999 -- sh short.sh "$SPIN" >/dev/null || { fail "record of the short-lived programs exited $?: $(head -c 300 record.err)"; finish; }
with_timeout 60 "$SP" report --format=folded short.spool >short.folded 2>/dev/null
# The programs' own samples: those with a frame of a prog_N module, named or not.
set -- $(folded_share short.folded '(^|;)(spin_|prog_[0-9]+\+0x)')
mine=$1
set -- $(folded_share short.folded "$WHOLE")
whole=$1
set -- $(folded_share short.folded '(^|;)prog_[0-9]+\+0x')
anon=$1
share=$(pct "$whole" "$mine")
ref=
if with_timeout 120 perf record -q --call-graph dwarf -F 999 -o short.data -- sh short.sh "$SPIN" >/dev/null 2>&1; then
	ref=$(perf script -i short.data -F comm,ip,sym 2>/dev/null | awk 'BEGIN { RS = "" }
		/^prog_/ { n++; if ($0 ~ /spin_leaf/ && $0 ~ /spin_outer/ && $0 ~ /main/) c++ }
		END { printf "%d of %d", c, n }')
fi
info "short-lived deleted programs: $whole of $mine samples in their code carry main > spin_outer > spin_leaf from _start ($share%), $anon keep an address-only frame${ref:+; perf --call-graph dwarf: $ref of the programs' samples name that chain}"
share_at_least 95 "$whole" "$mine" "the short-lived programs' samples are fully named" ||
	info "top stacks: $(folded_top short.folded 3 | tr '\n' ' ')"
finish
