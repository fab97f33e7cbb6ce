# SPDX-License-Identifier: MIT
# A reader's lock cannot leave a recording unlocked.  Any user who can read a
# 0644 spool can hold a read lock on it (F_RDLCK, a POSIX or an open file
# description lock: a read-only descriptor takes either); the writer's write
# lock then failed, the recording went on unlocked, and a second `record -o`
# to the same path truncated the live spool.  Now each spool is a new file,
# locked under a temporary name before it is renamed over the path: the
# reader's lock stays on the old file, the recording is locked, and the second
# recording is refused.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_cmd cc "building the lock holder"
if [ "$(id -u)" != 0 ] || ! id nobody >/dev/null 2>&1 || ! command -v setpriv >/dev/null 2>&1; then
	skip_all "need root, a user 'nobody' and setpriv"
fi
AS_NOBODY="setpriv --reuid=nobody --regid=$(id -gn nobody) --clear-groups"
# holder FILE READY SECONDS, run as nobody: opens FILE read-only, takes a POSIX
# read lock and an open file description read lock on it, says so by creating
# READY, holds on SECONDS, then prints FILE's size through its descriptor.
cat >holder.c <<'HOLDER'
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	int fd = open(argv[1], O_RDONLY), ofd = open(argv[1], O_RDONLY);
	struct flock l = {.l_type = F_RDLCK, .l_whence = SEEK_SET};
	struct stat st;
	if (fd < 0 || ofd < 0 || fcntl(fd, F_SETLK, &l) || fcntl(ofd, F_OFD_SETLK, &l))
		return perror(argv[1]), 1;
	close(open(argv[2], O_WRONLY | O_CREAT, 0644));
	sleep((unsigned)atoi(argv[3]));
	if (fstat(fd, &st))
		return 1;
	printf("%lld\n", (long long)st.st_size);
	return 0;
}
HOLDER
cc -D_GNU_SOURCE -O1 -o holder holder.c 2>cc.err || { fail "cannot build holder: $(head -c 200 cc.err)"; finish; }
# nobody works in a sticky directory, as in /tmp
chmod 0755 "$TMP" && mkdir -m 1777 sticky

sp_record live.spool -F 99 -- true >/dev/null || { fail "record exited $?: $(head -c 300 record.err)"; finish; }
chmod 0644 live.spool
size0=$(wc -c <live.spool)
ino0=$(stat -c %i live.spool)
$AS_NOBODY ./holder live.spool sticky/held 6 >held.out 2>holder.err &
holder=$!
track_pid $holder
for _ in $(seq 50); do [ -e sticky/held ] && break; sleep 0.1; done
[ -e sticky/held ] || { fail "nobody could not read-lock the spool: $(head -c 200 holder.err)"; finish; }

# root records into the path nobody holds locked, for 3 s
"$SP" record -o live.spool -F 199 -d 3 -- sh -c 'while :; do :; done' >/dev/null 2>rec1.err &
rec1=$!
track_pid $rec1
sleep 1
set -- $(stat -c '%i %U %a' live.spool)
[ "$1" != "$ino0" ] && ok "the recording writes a new file (inode $ino0 -> $1, $2, mode $3)" ||
	fail "the recording writes the file nobody holds (inode $1)"
[ "$3" = 644 ] && ok "the new spool keeps the old one's mode, 0644" || fail "the new spool's mode is $3, not 0644"
ls -a | grep -q '^\.live\.spool\.' && fail "a temporary file is left: $(ls -a | grep '^\.live')" ||
	ok "no temporary file is left beside the spool"
# the recording holds its lock: a second recording is refused, the first one's spool kept
with_timeout 30 "$SP" record -o live.spool -F 99 -- true >/dev/null 2>rec2.err
rc=$?
if [ $rc = 0 ]; then
	fail "a second recording replaced a spool being recorded (the first recording was unlocked)"
elif grep -q "another recording is writing it" rec2.err; then
	ok "a second recording into the live spool is refused"
else
	fail "the second recording failed otherwise (exit $rc): $(head -c 300 rec2.err)"
fi
wait $rec1
rc=$?
[ $rc = 0 ] && ok "the first recording ends normally" || fail "the first recording exited $rc: $(head -c 300 rec1.err)"
"$SP" report --format=folded live.spool >live.folded 2>rep.err
n=$(awk '{ s += $NF } END { print s + 0 }' live.folded)
[ "$n" -gt 100 ] && ok "the spool holds the first recording's $n samples, whole" ||
	fail "the spool is not the first recording's ($n samples): $(head -c 300 rep.err)"
wait $holder
[ "$(cat held.out)" = "$size0" ] && ok "nobody's descriptor still reads the old file ($size0 bytes)" ||
	fail "nobody's descriptor reads $(cat held.out) bytes, not the old $size0"

# A new spool, where nothing was: the umask's mode; and report --follow reads a live one.
umask 022
"$SP" record -o fresh.spool -F 199 -d 2 -- sh -c 'while :; do :; done' >/dev/null 2>rec3.err &
rec3=$!
track_pid $rec3
sleep 0.5
with_timeout 30 "$SP" report --follow fresh.spool >follow.out 2>follow.err
[ "$(stat -c %a fresh.spool)" = 644 ] && ok "a new spool is 0644 under umask 022" ||
	fail "a new spool is $(stat -c %a fresh.spool)"
wait $rec3
n=$(sed -n 's/^--- fresh.spool: \([0-9]*\) samples.*(recording over).*/\1/p' follow.out | tail -n 1)
[ "${n:-0}" -gt 50 ] && ok "report --follow read the live spool to its end ($n samples)" ||
	fail "report --follow read $n samples: $(head -c 300 follow.err)"
finish
