# SPDX-License-Identifier: MIT
# Bounds that are totals per run, not per file (issue 23).  Each file's bounds
# alone let a set of files multiply them:
#  - four libraries whose .debug_pubnames really inflates to 200 MiB each: every
#    one within 256 MiB a section and 1 GiB a file, 800 MiB together, all of it
#    inflated by report; now a run inflates at most 512 MiB (SP_INFLATE_RUN_MAX)
#    and says how many sections it skipped for that total;
#  - four libraries without a build-id, stripped, whose debug links find two
#    sparse 300 MiB candidates each (wrong CRC): every report read 2.4 GB for the
#    CRCs; now a run reads at most 512 MiB of candidates and says how many it
#    left unread.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_cmd cc "building the libraries"
need_cmd python3 "writing the compressed sections (tests/e2e/elf-bomb.py)"
need_cmd objcopy "making libraries without a build-id"
need_cmd strip "making libraries without a build-id"
need_cmd truncate "making sparse candidates"
need_cmd make "building scripts/rusage-run"
with_timeout 300 make -s -C "$REPO" scripts/rusage-run >build.out 2>&1 ||
	{ fail "make scripts/rusage-run failed: $(tail -n 5 build.out)"; finish; }
RU=$REPO/scripts/rusage-run
ru_field() { sed -n "s/.*$2=\([0-9.]*\).*/\1/p" "$1"; }

BOMB=$((200 << 20))
{
	echo '#include <time.h>'
	for i in 1 2 3 4 5 6 7 8; do echo "void work$i(unsigned long n);"; done
	echo 'int main(void) { struct timespec t0, t; clock_gettime(CLOCK_MONOTONIC, &t0);'
	echo ' do {'
	for i in 1 2 3 4 5 6 7 8; do echo "  work$i(20000);"; done
	echo '  clock_gettime(CLOCK_MONOTONIC, &t);'
	echo ' } while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < 1.0);'
	echo ' return 0; }'
} >main.c
for i in 1 2 3 4 5 6 7 8; do
	printf 'volatile unsigned long sink%s;\n__attribute__((noinline)) void work%s(unsigned long n)\n{ for (unsigned long i = 0; i < n; i++) sink%s += i * 7; }\n' \
		$i $i $i >w$i.c
	if [ $i -le 4 ]; then
		cc -shared -fPIC -O1 -g -Wl,--build-id -o plain$i.so w$i.c 2>cc.err &&
			with_timeout 60 python3 "$E2E_DIR/elf-bomb.py" plain$i.so libw$i.so .debug_pubnames $BOMB 2>>cc.err
	else
		# No build-id, no symbols: only a debug link, proven by reading a candidate whole.
		cc -shared -fPIC -O1 -g -Wl,--build-id=none -o libw$i.so w$i.c 2>cc.err &&
			objcopy --only-keep-debug libw$i.so w$i.debug && strip -s libw$i.so &&
			objcopy --add-gnu-debuglink=w$i.debug libw$i.so && rm -f w$i.debug
	fi || skip_all "cannot build library $i: $(head -c 300 cc.err)"
done
cc -O1 -o prog main.c -L. -lw1 -lw2 -lw3 -lw4 -lw5 -lw6 -lw7 -lw8 -Wl,-rpath,'$ORIGIN' 2>cc.err ||
	skip_all "cannot link the program: $(head -c 300 cc.err)"
# Two sparse candidates of 300 MiB for each debug link: beside it and in .debug/.
mkdir -p .debug
for i in 5 6 7 8; do
	truncate -s 300M w$i.debug .debug/w$i.debug
done
sp_record totals.spool -F 499 -- ./prog >/dev/null ||
	{ fail "record exited $?: $(head -c 300 record.err)"; finish; }

export STACKPULSE_CACHE_DIR=
with_timeout 120 "$RU" rep.ru "$SP" report --format=folded totals.spool >rep.folded 2>rep.err ||
	fail "report exited $?: $(head -c 300 rep.err)"
info "report: $(cat rep.ru)"
kib=$(ru_field rep.ru maxrss_kib)
wall=$(ru_field rep.ru wall_s)
[ -n "$kib" ] && [ "$kib" -lt $((600 * 1024)) ] &&
	ok "report: peak memory $((kib / 1024)) MiB (four sections of 200 MiB: bound 512 MiB for the run)" ||
	fail "report: peak memory ${kib:-?} KiB: more than the run's 512 MiB was inflated"
grep -q "compressed sections not inflated.*512 MiB for all the files of this run: 2 skipped for that total" rep.err &&
	ok "report says 2 sections were skipped for the run's total" ||
	fail "no warning of sections skipped for the run's total: $(head -c 400 rep.err)"
# One candidate of 300 MiB fits in 512 MiB; the seven others are left unread.
grep -q "7 debug-link candidates not read: a run reads at most 512 MiB" rep.err &&
	ok "report says 7 debug-link candidates were not read for the run's CRC budget" ||
	fail "no warning of debug-link candidates left unread: $(grep -i debug rep.err | head -c 400)"
grep -q 'work1' rep.folded && ok "the libraries' names are still there" ||
	fail "work1 is missing: $(folded_top rep.folded 3)"
[ "$(num_ge 10 "${wall:-99}")" = 1 ] && ok "report: $wall s" || fail "report: ${wall:-?} s"
