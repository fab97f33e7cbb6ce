# SPDX-License-Identifier: MIT
# Where `symbolize` may write: -o to a symlink, a FIFO, a device node or
# a directory, or an in-place update of a symlinked spool, is refused with exit 1 and a
# message saying what the path is, and the path is left as it was (rename would have
# replaced it by a regular file: /dev/null by a world-writable spool).  -o to a new path or
# over a regular file writes the spool; in place, root keeps the spool's owner and mode.
# Uses the fixture spool, whose frames symbolize stores address-only: no recording needed.
. "$(dirname "$0")/lib.sh"
need_stackpulse
FIX=$REPO/tests/fixtures/small.spool
cp "$FIX" in.spool || {
	fail "cannot copy the fixture spool"
	finish
}

# --- writing: a new path, over a regular file ---------------------------------------------

"$SP" symbolize -o new.spool in.spool >new.out 2>new.err
st=$?
if [ $st -eq 0 ] && "$SP" dump new.spool 2>/dev/null | grep -q '^sym-frame '; then
	ok "-o to a new path: exit 0, the new spool holds sym-frame records"
else
	fail "-o to a new path: exit $st, $(head -c 300 new.err)"
fi
cmp -s in.spool "$FIX" && ok "-o leaves SPOOL alone" || fail "-o changed SPOOL"

printf 'old contents\n' >reg.spool
chmod 0600 reg.spool
"$SP" symbolize -o reg.spool in.spool >reg.out 2>reg.err
st=$?
[ $st -eq 0 ] && cmp -s reg.spool new.spool &&
	ok "-o over a regular file: exit 0, the same spool as to a new path" ||
	fail "-o over a regular file: exit $st, $(head -c 300 reg.err)"
mode=$(stat -c %a reg.spool)
[ "$mode" = 600 ] && ok "-o over a regular file keeps its mode (0600)" ||
	fail "-o over a 0600 file left mode $mode"

# --- refusals ----------------------------------------------------------------------------

# refused WHAT NAME KIND [SYMBOLIZE ARGS...]: symbolize exits 1, names NAME and says it is
# KIND, prints no counts and leaves no temporary file.  The caller checks NAME itself.
refused() {
	what=$1
	name=$2
	kind=$3
	shift 3
	"$SP" symbolize "$@" >"refused-$name.out" 2>"refused-$name.err"
	st=$?
	if [ $st -eq 1 ] && grep -qF "'$name'" "refused-$name.err" &&
		grep -qF "it is $kind;" "refused-$name.err" &&
		grep -qF 'regular file or a new path' "refused-$name.err"; then
		ok "$what: exit 1, '$name' is $kind, what to give instead"
	else
		fail "$what: exit $st, stderr '$(head -c 300 "refused-$name.err")'"
	fi
	[ -s "refused-$name.out" ] && fail "$what: counts printed: $(head -c 200 "refused-$name.out")" ||
		ok "$what: nothing written to standard output"
	ls -a | grep -q "^\\.$name\\." && fail "$what: a temporary file was left behind" ||
		ok "$what: no temporary file left"
}

printf 'keep me\n' >target.spool
cp target.spool target.orig
ln -s target.spool link
refused "-o to a symlink" link "a symbolic link" -o link in.spool
[ -L link ] && [ "$(readlink link)" = target.spool ] && cmp -s target.spool target.orig &&
	ok "the symlink still points at its file, which is unchanged" ||
	fail "the symlink or its file changed: $(ls -l link target.spool | tr '\n' '|')"

ln -s in.spool linked.spool
refused "in place through a symlink" linked.spool "a symbolic link" linked.spool
[ -L linked.spool ] && cmp -s in.spool "$FIX" &&
	ok "the symlinked spool is still a symlink to the unchanged spool" ||
	fail "the symlinked spool changed: $(ls -l linked.spool in.spool | tr '\n' '|')"

if mkfifo fifo 2>/dev/null; then
	refused "-o to a FIFO" fifo "a FIFO" -o fifo in.spool
	[ -p fifo ] && ok "the FIFO is still a FIFO" || fail "the FIFO was replaced: $(ls -l fifo)"
else
	skip "mkfifo failed here: -o to a FIFO not checked"
fi

# A node of our own with /dev/null's numbers: the real one must never be the target.
if mknod fakenull c 1 3 2>/dev/null; then
	refused "-o to a device node" fakenull "a character device" -o fakenull in.spool
	[ -c fakenull ] && [ "$(stat -c %t:%T fakenull)" = 1:3 ] &&
		ok "the device node is still character device 1:3" ||
		fail "the device node was replaced: $(ls -l fakenull)"
else
	skip "mknod not permitted (not root, or no CAP_MKNOD): -o to a device node not checked"
fi

mkdir dir
refused "-o to a directory" dir "a directory" -o dir in.spool
[ -d dir ] && [ -z "$(ls -A dir)" ] && ok "the directory is still an empty directory" ||
	fail "the directory changed: $(ls -ld dir)"

# --- in place: owner and mode kept -------------------------------------------------------

if [ "$(id -u)" != 0 ]; then
	skip "not root: in-place ownership not checked (only root can give a file to another user)"
elif ! id nobody >/dev/null 2>&1; then
	skip "no user 'nobody': in-place ownership not checked"
else
	cp "$FIX" owned.spool
	chown nobody: owned.spool && chmod 0640 owned.spool
	before=$(stat -c '%U:%G %a' owned.spool)
	size0=$(wc -c <owned.spool)
	"$SP" symbolize owned.spool >owned.out 2>owned.err
	st=$?
	size1=$(wc -c <owned.spool)
	[ $st -eq 0 ] && [ "$size1" -gt "$size0" ] &&
		ok "in place: exit 0, the spool rewritten ($size0 -> $size1 bytes)" ||
		fail "in place: exit $st, $size0 -> $size1 bytes, $(head -c 300 owned.err)"
	after=$(stat -c '%U:%G %a' owned.spool)
	[ "$after" = "$before" ] && ok "in place by root: owner and mode kept ($after)" ||
		fail "in place by root: $before became $after"
fi

finish
