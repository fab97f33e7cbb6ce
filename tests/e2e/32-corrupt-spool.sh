# SPDX-License-Identifier: MIT
# Every single-byte corruption and every truncation of the small fixture spool,
# through the CLI: dump, report and report --format=folded never crash, never
# hang, and exit 0, or 1 with an error message.  Replacement bytes per offset:
# 0x00, 0xff and the byte with its top bit flipped.  (tests/unit/corruption.c
# runs the same sweep and more values in-process on the library.)
# SPOOL_SWEEP_STEP=N tries every Nth offset only (default 1: all of them).
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_cmd perl "writing the corrupted copies"
FIXTURE=$REPO/tests/fixtures/small.spool
[ -r "$FIXTURE" ] || { fail "fixture $FIXTURE missing"; finish; }
STEP=${SPOOL_SWEEP_STEP:-1}

# Write the variants: c-OFFSET-VALUE.spool (one byte replaced) and t-LENGTH.spool.
mkdir variants
perl -e '
	my ($src, $dir, $step) = @ARGV;
	open(my $in, "<:raw", $src) or die "$src: $!";
	local $/; my $d = <$in>; close $in;
	sub put { my ($name, $bytes) = @_;
		open(my $o, ">:raw", "$dir/$name") or die "$name: $!"; print $o $bytes; close $o; }
	for (my $off = 0; $off < length $d; $off += $step) {
		my $b = ord(substr($d, $off, 1));
		my %seen;
		for my $v (0x00, 0xff, $b ^ 0x80) {
			next if $v == $b || $seen{$v}++;
			my $c = $d; substr($c, $off, 1) = chr($v);
			put(sprintf("c-%04d-%02x.spool", $off, $v), $c);
		}
	}
	for (my $len = 0; $len < length $d; $len += $step) {
		put(sprintf("t-%04d.spool", $len), substr($d, 0, $len));
	}' "$FIXTURE" variants "$STEP" || { fail "perl could not write the variants"; finish; }
total=$(ls variants | wc -l)
info "$(wc -c <"$FIXTURE")-byte fixture: $total variants (step $STEP), 3 commands each"

# sweep LIST TAG: run the three commands on every file in LIST; problems go to
# bad-TAG.txt as "KIND FILE: why", "RUNS REFUSED" to runs-TAG.txt.  An error message
# is a line "stackpulse dump: ..." or "stackpulse report: ...".
sweep() {
	n=0
	refused=0
	list=$1
	tag=$2
	: >"bad-$tag.txt"
	while read -r f; do
		for kind in dump report folded; do
			case $kind in
			dump) set -- dump "$f" ;;
			report) set -- report "$f" ;;
			folded) set -- report --format=folded "$f" ;;
			esac
			timeout -k 2 10 "$SP" "$@" >"out-$tag.txt" 2>"err-$tag.txt"
			rc=$?
			n=$((n + 1))
			case $rc in
			0) ;;
			1)
				refused=$((refused + 1))
				grep -q "^stackpulse $1: " "err-$tag.txt" ||
					echo "silent $kind $f: exit 1 without a message" >>"bad-$tag.txt"
				;;
			124 | 137) echo "hang $kind $f: no exit within 10 s" >>"bad-$tag.txt" ;;
			*) echo "crash $kind $f: exit $rc $(head -c 200 "err-$tag.txt")" >>"bad-$tag.txt" ;;
			esac
		done
	done <"$list"
	echo $n $refused >"runs-$tag.txt"
}

# Two workers, one per half of the variants: the sweep is thousands of short runs.
start=$(date +%s)
ls variants/*.spool | awk 'NR % 2 == 1' >list-a
ls variants/*.spool | awk 'NR % 2 == 0' >list-b
sweep list-a a &
worker=$!
track_pid $worker
sweep list-b b
wait $worker
cat bad-a.txt bad-b.txt >bad.txt
read -r runs_a refused_a <runs-a.txt
read -r runs_b refused_b <runs-b.txt
runs=$((runs_a + runs_b))
info "$((refused_a + refused_b)) of $runs runs refused the spool with an error (exit 1), the rest read a prefix"
crashes=$(grep -c '^crash' bad.txt)
hangs=$(grep -c '^hang' bad.txt)
silent=$(grep -c '^silent' bad.txt)
secs=$(($(date +%s) - start))
info "$runs runs in $secs s: $crashes crashes or odd statuses, $hangs hangs, $silent silent failures"
[ -s bad.txt ] && head -n 20 bad.txt | sed 's/^/# /'
[ $crashes -eq 0 ] && ok "no corrupted or truncated spool crashes dump or report ($runs runs)" ||
	fail "$crashes runs crashed or exited with a status other than 0 or 1"
[ $hangs -eq 0 ] && ok "no corrupted or truncated spool hangs dump or report" || fail "$hangs runs hung"
[ $silent -eq 0 ] && ok "every refused spool gets an error message" ||
	fail "$silent runs exited 1 without a message"
finish
