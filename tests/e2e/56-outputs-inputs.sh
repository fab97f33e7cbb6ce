# SPDX-License-Identifier: MIT
# Where record, report and dump write, and what they read, when another user controls the
# directory (root running `stackpulse record` in a user's project writes profile.spool
# there).  Before: -o (and the default profile.spool) followed another user's symlink and
# overwrote what it named (root's file came to hold a spool), a FIFO there hung record,
# and report and dump read /dev/zero or a FIFO until memory ran out (2.3 GB in 10 s) or
# forever.  Now another user's symlink, FIFO or socket is refused without being opened,
# the file named is left alone, and spools are read only from regular files, up to
# their size when opened.  One's own symlink, FIFO and /dev/null still take output.
. "$(dirname "$0")/lib.sh"
need_stackpulse
[ "$(id -u)" = 0 ] || skip_all "needs root: the attacker's files must belong to another user"
id nobody >/dev/null 2>&1 || skip_all "no user 'nobody' to own the planted files"
need_cmd mkfifo "planting FIFOs"
FIX=$REPO/tests/fixtures/small.spool

# nobody must reach its directory: the scratch directory is root's, 0700 by default.
chmod 0755 "$TMP" . 2>/dev/null
mkdir att && chown nobody att && chmod 0755 att || { fail "cannot make nobody's directory"; finish; }
printf 'ROOT SECRET\n' >victim
chmod 0600 victim
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@" 2>/dev/null ||
	su -s /bin/sh nobody -c "$*"; }
as_nobody ln -s "$PWD/victim" att/link.txt
as_nobody ln -s "$PWD/victim" att/profile.spool
as_nobody mkfifo att/fifo
[ -L att/link.txt ] && [ -p att/fifo ] && [ "$(stat -c %U att/link.txt)" = nobody ] ||
	{ fail "cannot plant nobody's symlink and FIFO"; finish; }

# refused WHAT STATUS STDERR-FILE: the command exited 1 naming another user's file.
refused() {
	if [ "$2" = 1 ] && grep -q "another user's" "$3"; then
		ok "$1: refused, '$(head -n 1 "$3" | cut -c 1-110)'"
	else
		fail "$1: exit $2: $(head -c 300 "$3")"
	fi
}

with_timeout 30 "$SP" report -o att/link.txt "$FIX" >/dev/null 2>r1.err
refused "report -o nobody's symlink" $? r1.err
with_timeout 30 "$SP" dump -o att/link.txt "$FIX" >/dev/null 2>r2.err
refused "dump -o nobody's symlink" $? r2.err
with_timeout 30 "$SP" report -o att/fifo "$FIX" >/dev/null 2>r3.err
refused "report -o nobody's FIFO (no hang)" $? r3.err
if [ -x "$WORKLOADS/chain4" ]; then
	with_timeout 30 "$SP" record -q -o att/link.txt -- "$WORKLOADS/chain4" -t 0 >/dev/null 2>r4.err
	refused "record -o nobody's symlink" $? r4.err
	with_timeout 30 "$SP" record -q -o att/fifo -- "$WORKLOADS/chain4" -t 0 >/dev/null 2>r5.err
	refused "record -o nobody's FIFO (no hang)" $? r5.err
	(cd att && with_timeout 30 "$SP" record -q -- "$WORKLOADS/chain4" -t 0 >/dev/null 2>../r6.err)
	refused "record's default profile.spool, a symlink of nobody's" $? r6.err
else
	skip "record -o: tests/workloads/chain4 not built (make workloads)"
fi
[ "$(cat victim)" = "ROOT SECRET" ] && ok "the file the symlinks name is untouched" ||
	fail "the victim file was written: $(head -c 100 victim | od -c | head -n 2)"
[ -p att/fifo ] && [ -L att/link.txt ] && ok "the planted FIFO and symlink are left as they were" ||
	fail "the planted files were replaced: $(ls -l att)"

# One's own: a symlink, a FIFO with a reader, /dev/null.
ln -s "$PWD/mine.txt" mylink.txt
"$SP" report -o mylink.txt "$FIX" >/dev/null 2>own.err && grep -q '^Spool:' mine.txt &&
	ok "report -o one's own symlink writes what it names" || fail "own symlink: $(head -c 200 own.err)"
mkfifo myfifo
(cat myfifo >fifo.out &)
with_timeout 30 "$SP" report -o myfifo "$FIX" >/dev/null 2>ownf.err
st=$?
sleep 0.2
[ $st = 0 ] && grep -q '^Spool:' fifo.out && ok "report -o one's own FIFO streams to its reader" ||
	fail "own FIFO: exit $st: $(head -c 200 ownf.err)"
"$SP" report -o /dev/null "$FIX" 2>null.err && [ -c /dev/null ] &&
	ok "report -o /dev/null works and leaves it a device" || fail "-o /dev/null: $(head -c 200 null.err)"

# Inputs: only regular files, read up to their size.
for input in /dev/zero att/fifo; do
	t0=$(date +%s)
	with_timeout 30 "$SP" report "$input" >/dev/null 2>in.err
	st=$?
	secs=$(($(date +%s) - t0))
	[ $st = 1 ] && grep -q "not a regular file" in.err && [ $secs -le 5 ] &&
		ok "report $input: refused in ${secs}s, '$(head -n 1 in.err | cut -c 1-100)'" ||
		fail "report $input: exit $st after ${secs}s: $(head -c 200 in.err)"
done
with_timeout 30 "$SP" dump att/fifo >/dev/null 2>in.err
[ $? = 1 ] && grep -q "not a regular file" in.err && ok "dump of a FIFO: refused" ||
	fail "dump of a FIFO: $(head -c 200 in.err)"
with_timeout 30 "$SP" report --diff=att/fifo "$FIX" >/dev/null 2>in.err
[ $? = 1 ] && grep -q "not a regular file" in.err && ok "report --diff=FIFO: refused" ||
	fail "report --diff=FIFO: $(head -c 200 in.err)"
finish
