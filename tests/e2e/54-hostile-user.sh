# SPDX-License-Identifier: MIT
# Issue 12's whole scenario at once: a hostile local user (nobody) runs the targets,
# root records them with record -p, reports them (text, call tree, per thread,
# folded, perf-script, speedscope, flame graph, JSON) and symbolizes the spool, all
# under strace.  Before that the attacker planted, where root looks things up:
#   - its program named with escape sequences (module path, thread name, command);
#   - that program without a build-id, with a debug link: beside it the candidate
#     is a symlink to /etc/shadow, in .debug/ a FIFO;
#   - a second program deleted while it runs, its directory replaced by a symlink
#     to one holding FIFOs at both names maps gives ("PATH", "PATH (deleted)");
#   - a perf map for the first one's JIT code written by yet another user, naming
#     it with escape sequences;
#   - a cache directory of its own, whose symbols/ and debug/ are symlinks to a
#     directory of root's (STACKPULSE_CACHE_DIR for record and some reports).
# Root must open nothing it should not (no /etc/shadow, nothing through the planted
# symlinks, no FIFO: O_PATH opens, which open nothing, aside), print no raw escape
# and none of the forged names, write (open for writing, create, rename, remove,
# chmod...) only under its own output directory and its own cache, and never leave
# a target stopped: their state is watched all along, and they still run at the end.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload chain4
CHAIN4=$WL
need_workload jit_perfmap
JIT=$WL
[ "$(id -u)" = 0 ] || skip_all "needs root: root is the one attacked, and the files are other users'"
id nobody >/dev/null 2>&1 || skip_all "no user 'nobody' to play the attacker"
need_cmd setpriv "running the targets as nobody"
need_cmd strace "seeing every file root opens, writes, renames or removes"
need_cmd objcopy "making a module without a build-id, with a debug link"
need_cmd mkfifo "planting FIFOs"
[ -e /etc/shadow ] || skip_all "no /etc/shadow to point a symlink at"

# A third user, neither root nor nobody, owns the forged perf map: the first free uid.
OTHER=65533
while getent passwd "$OTHER" >/dev/null 2>&1 || [ "$OTHER" = "$(id -u nobody)" ]; do
	OTHER=$((OTHER - 1))
done
NOBODY_GROUP=$(id -gn nobody)
AS_NOBODY="setpriv --reuid=nobody --regid=$NOBODY_GROUP --clear-groups"
ESC=$(printf '\033')
BEL=$(printf '\007')
C1=$(printf '\302\233')

# Where root may write: its own output directory and its own cache.  The attacker
# gets a directory of its own; root's victim directory must stay empty.
chmod 0755 "$TMP"
ROOTDIR=$(pwd -P)
OUT=$ROOTDIR/out
OWNCACHE=$ROOTDIR/cache
EVIL=$ROOTDIR/evil
VICTIM=$ROOTDIR/victim
mkdir -p "$OUT" "$VICTIM" "$EVIL/bin/.debug" "$EVIL/lib" "$EVIL/cache" && chmod 0700 "$OUT" &&
	chmod 0755 "$VICTIM" || { fail "cannot make the directories"; finish; }
STACKPULSE_CACHE_DIR=$OWNCACHE
export STACKPULSE_CACHE_DIR

# --- the attacker's programs and plants ----------------------------------------------

# jit_perfmap named with escapes (13 bytes: the whole name is its thread name too),
# without a build-id, its DWARF stripped (its symbol table kept), debug link jp.debug.
JNAME="jit${ESC}[2J${ESC}]0;x${BEL}"
JEXE=$EVIL/bin/$JNAME
cp "$JIT" "$EVIL/bin/jp" && objcopy --remove-section .note.gnu.build-id "$EVIL/bin/jp" &&
	objcopy --only-keep-debug "$EVIL/bin/jp" "$EVIL/bin/jp.debug" 2>/dev/null &&
	objcopy --strip-debug "$EVIL/bin/jp" && (cd "$EVIL/bin" && objcopy --add-gnu-debuglink=jp.debug jp) &&
	rm "$EVIL/bin/jp.debug" && mv "$EVIL/bin/jp" "$JEXE" &&
	cp "$CHAIN4" "$EVIL/lib/c4" || {
	fail "cannot make the attacker's programs"
	finish
}
chown -R nobody "$EVIL" && chmod -R go-w "$EVIL" && chmod 0755 "$EVIL" "$EVIL/bin" "$EVIL/lib"
# The debug-file candidates: beside the module a symlink to /etc/shadow, in .debug/ a FIFO.
$AS_NOBODY sh -c 'ln -s /etc/shadow "$1/bin/jp.debug" && mkfifo "$1/bin/.debug/jp.debug" &&
	ln -s "$2" "$1/cache/symbols" && ln -s "$2" "$1/cache/debug"' sh "$EVIL" "$VICTIM" || {
	fail "nobody cannot plant its symlinks and FIFOs"
	finish
}

# The targets, as nobody: A runs generated code named in its perf map, which calls back
# into its native code (-c: samples there make root look for its debug file); C is chain4.
$AS_NOBODY "$JEXE" -t 60 -c 300000 >jit.out 2>jit.err &
A=$!
track_pid $A
$AS_NOBODY "$EVIL/lib/c4" -t 60 >/dev/null 2>&1 &
C=$!
track_pid $C
MAP=/tmp/perf-$A.map
trap 'rm -f "$MAP"; cleanup' EXIT
i=0
while [ $i -lt 50 ] && ! grep -q 'perf map' jit.out; do
	sleep 0.1
	i=$((i + 1))
done
grep -q "perf map $MAP" jit.out && [ -f "$MAP" ] || {
	fail "the attacker's jit_perfmap wrote no perf map: $(head -c 200 jit.err)"
	finish
}

# The other user's map, newer than the process, as if it had been there before nobody's
# program wrote its own (in /tmp, sticky, neither can replace the other's): forged names.
FORGED=FORGED_NAME
awk -v e="$ESC" -v b="$BEL" -v c="$C1" -v f="$FORGED" \
	'{ printf "%s %s %s%s[2J%s]0;owned%s%s1m\n", $1, $2, f, e, e, b, c }' "$MAP" >forged.map &&
	rm -f "$MAP" && cp forged.map "$MAP" && chown "$OTHER" "$MAP" && chmod 0644 "$MAP" || {
	fail "cannot plant the forged perf map"
	finish
}
# C's program deleted, its directory replaced by a symlink to one with FIFOs at its names.
$AS_NOBODY sh -c 'cd "$1" && rm lib/c4 && rmdir lib && mkdir pipes &&
	mkfifo pipes/c4 "pipes/c4 (deleted)" && ln -s pipes lib' sh "$EVIL" || {
	fail "nobody cannot replace its deleted program by FIFOs"
	finish
}
grep -qF "$EVIL/lib/c4 (deleted)" "/proc/$C/maps" ||
	info "maps does not name C's program '$EVIL/lib/c4 (deleted)': $(grep -F c4 "/proc/$C/maps" | head -n 1)"

SYMLINKS="$EVIL/bin/jp.debug $EVIL/lib $EVIL/cache/symbols $EVIL/cache/debug"
FIFOS="$EVIL/bin/.debug/jp.debug|$EVIL/pipes/c4|$EVIL/pipes/c4 (deleted)"
# The attacker's tree as planted: path, type, owner, mode, size, link target, mtime.
snapshot() { find "$EVIL" -printf '%p %y %u %m %s %l %T@\n' | sort; }
snapshot >evil.before

# --- the targets' state, watched all along ----------------------------------------------

# A shell loop (read is a builtin: no process per look) notes every look and every
# stopped state (T, or t: traced) of either target until watch.stop appears.
: >stopped.txt
(
	n=0
	while [ ! -e watch.stop ]; do
		for p in $A $C; do
			{ read -r line <"/proc/$p/stat"; } 2>/dev/null || continue
			s=${line##*) }
			case ${s%% *} in T | t) echo "$p ${s%% *}" >>stopped.txt ;; esac
		done
		n=$((n + 1))
		sleep 0.02
	done
	echo "$n" >watch.count
) &
track_pid $!

# --- root at work, under strace ------------------------------------------------------

# run NAME CACHE COMMAND...: COMMAND (a stackpulse subcommand) under strace with CACHE
# as STACKPULSE_CACHE_DIR, in the output directory; NAME.out, NAME.err, NAME.trace.*;
# sets rc.  Fd annotations (-y) show what each open really reached, also when strace
# cannot read the path (record opens paths straight from its rings); the calls that
# send signals are traced too.
run() {
	name=$1
	cache=$2
	shift 2
	(cd "$OUT" && STACKPULSE_CACHE_DIR=$cache && export STACKPULSE_CACHE_DIR &&
		traced with_timeout 120 \
		strace -ff -y -s 4096 -e trace=%file,kill,tkill,tgkill,pidfd_send_signal,rt_sigqueueinfo \
		-o "$ROOTDIR/$name.trace" \
		"$SP" "$@" >"$ROOTDIR/$name.out" 2>"$ROOTDIR/$name.err")
	rc=$?
	[ $rc = 0 ] && ok "$name: $* exits 0" || fail "$name: $* exited $rc: $(head -c 300 "$ROOTDIR/$name.err")"
}

SPOOL=$OUT/h.spool
run record "$EVIL/cache" record -p "$A,$C" -d 2 -F 499 -o "$SPOOL"
run text "$EVIL/cache" report --width=200 "$SPOOL"
run folded "$EVIL/cache" report --format=folded "$SPOOL"
run script "$EVIL/cache" report --format=perf-script "$SPOOL"
run tree "$OWNCACHE" report --tree --width=200 "$SPOOL"
run threads "$OWNCACHE" report --group-by=thread --width=200 "$SPOOL"
run speedscope "$OWNCACHE" report --format=speedscope -o "$OUT/h.speedscope.json" "$SPOOL"
run flamegraph "$OWNCACHE" report --format=flamegraph -o "$OUT/h.svg" "$SPOOL"
run json "$OWNCACHE" report --format=json "$SPOOL"
run symbolize "$OWNCACHE" symbolize -o "$OUT/sym.spool" "$SPOOL"
run symtext "$EVIL/cache" report --width=200 "$OUT/sym.spool"
run dump "$OWNCACHE" dump "$OUT/sym.spool"
touch watch.stop

# --- what root opened -------------------------------------------------------------------

cat ./*.trace.* >all.trace
# Each open that succeeded without O_PATH: "REQUESTED\tREACHED" (REACHED from -y).
awk '
	/^(open|openat|openat2|creat)\(/ && / = [0-9]+</ && !/O_PATH/ {
		req = ""
		if (match($0, /"([^"\\]|\\.)*"/)) req = substr($0, RSTART + 1, RLENGTH - 2)
		got = $0
		sub(/.* = [0-9]+</, "", got)
		sub(/>$/, "", got)
		print req "\t" got
	}' all.trace >opened.txt
info "$(wc -l <opened.txt) files opened in $(ls ./*.trace.* | wc -l) traced processes"
bad=$(grep -F '/etc/shadow' opened.txt | head -n 3)
[ -z "$bad" ] && ok "root never opened /etc/shadow (a debug-link candidate's symlink names it)" ||
	fail "root opened /etc/shadow: $bad"
bad=$(awk -F '\t' -v l="$SYMLINKS" '
	BEGIN { n = split(l, s, " ") }
	{ for (i = 1; i <= n; i++) if ($1 == s[i] || index($1, s[i] "/") == 1) print }' opened.txt | sort -u | head -n 3)
[ -z "$bad" ] && ok "nothing opened through the planted symlinks ($SYMLINKS)" ||
	fail "opened through a planted symlink: $bad"
bad=$(awk -F '\t' -v v="$VICTIM" 'index($2, v) == 1' opened.txt | head -n 3)
[ -z "$bad" ] && ok "nothing opened in root's directory the foreign cache links to" ||
	fail "opened through the foreign cache's symlinks: $bad"
bad=$(awk -F '\t' -v l="$FIFOS" '
	BEGIN { n = split(l, f, "|") }
	{ for (i = 1; i <= n; i++) if ($2 == f[i]) print }' opened.txt | sort -u | head -n 3)
[ -z "$bad" ] && ok "no planted FIFO opened (at the deleted program's names, nor as a debug file)" ||
	fail "a planted FIFO was opened: $(echo "$bad" | tr '\t' '>' | tr '\n' '|')"
# Not vacuous: root looked where the attacker planted (refused or not found).
for c in "$EVIL/bin/jp.debug" "$EVIL/bin/.debug/jp.debug" "$EVIL/lib/c4 (deleted)"; do
	grep -qF "\"$c\"" all.trace && ok "root's search came to the plant '${c#"$ROOTDIR"/}' (the checks above are not vacuous)" ||
		fail "root never looked at '${c#"$ROOTDIR"/}': the checks above prove nothing there"
done

# --- what root wrote ----------------------------------------------------------------------

# Every call that creates, writes, renames, removes or changes a file, with the paths
# it names made absolute (from its directory fd's annotation, else the working
# directory, the output directory): "SYSCALL PATH" per path.
awk -v cwd="$OUT" '
	{
		call = $0
		sub(/\(.*/, "", call)
		writes = call ~ /^(rename|renameat|renameat2|unlink|unlinkat|mkdir|mkdirat|rmdir|link|linkat|symlink|symlinkat|chmod|fchmodat|chown|lchown|fchownat|truncate|mknod|mknodat|creat|utimes|utimensat|futimesat|setxattr|lsetxattr|removexattr|lremovexattr)$/
		if (call ~ /^(open|openat|openat2)$/ && $0 ~ /O_WRONLY|O_RDWR|O_CREAT|O_TRUNC/) writes = 1
		if (!writes) next
		rest = $0
		while (match(rest, /((AT_FDCWD|[0-9]+)<[^>]*>, )?"([^"\\]|\\.)*"/)) {
			tok = substr(rest, RSTART, RLENGTH)
			rest = substr(rest, RSTART + RLENGTH)
			q = tok
			sub(/^[^"]*"/, "", q)
			sub(/"$/, "", q)
			d = cwd
			if (tok ~ /^(AT_FDCWD|[0-9]+)</) {
				d = tok
				sub(/^[^<]*</, "", d)
				sub(/>.*/, "", d)
			}
			print call, (substr(q, 1, 1) == "/" ? q : d "/" q)
		}
		# What an open for writing reached, also when strace could not read its path.
		if (match($0, / = [0-9]+<[^>]*>(\(deleted\))?$/)) {
			got = substr($0, RSTART, RLENGTH)
			sub(/^[^<]*</, "", got)
			sub(/>(\(deleted\))?$/, "", got)
			print call, got
		}
	}' all.trace >written.txt
info "$(wc -l <written.txt) paths created, written, renamed or removed: $(cut -d ' ' -f 1 written.txt | sort | uniq -c | tr -s ' ' | tr '\n' ',')"
# A sanitizer build writes its reports under log_path (make check-sanitize): the runtime's
# own files, and the directories on the way, are not root's doing.
sanlog=$(printf '%s:%s\n' "${ASAN_OPTIONS:-}" "${UBSAN_OPTIONS:-}" | tr ':' '\n' |
	sed -n 's/^log_path=//p' | head -n 1)
sandir=${sanlog%/*}
bad=$(awk -v o="$OUT/" -v c="$OWNCACHE/" -v c0="$OWNCACHE" -v s="${sandir:+$sandir/}" -v s0="$sandir" '
	{ p = substr($0, index($0, " ") + 1)
	  if (s != "" && (index(p, s) == 1 || index(s0 "/", p "/") == 1)) next
	  if (index(p, o) != 1 && index(p, c) != 1 && p != c0) print }' written.txt | head -n 5)
[ -z "$bad" ] && ok "root wrote, renamed or removed nothing outside $OUT and its own cache" ||
	fail "root wrote outside its output and cache: $(echo "$bad" | tr '\n' '|')"
grep -q "^[a-z0-9]* $OUT/sym.spool" written.txt && ok "the write check sees symbolize's output (not vacuous)" ||
	fail "symbolize's output never shows among the writes: the check above proves nothing"
[ -z "$(ls -A "$VICTIM")" ] && ok "root's directory behind the foreign cache's symlinks is still empty" ||
	fail "written through the foreign cache's symlinks: $(ls -A "$VICTIM" | head -n 3 | tr '\n' ' ')"
snapshot >evil.after
cmp -s evil.before evil.after && ok "the attacker's directory is as it was planted" ||
	fail "root changed the attacker's directory: $(diff evil.before evil.after | grep '^[<>]' | head -n 3 | tr '\n' '|')"
grep -q "cache directory '$EVIL/cache' not used" text.err &&
	ok "report warns it does not use the foreign cache: $(grep -m 1 'cache directory' text.err | cut -c 1-120)" ||
	fail "report gives no warning for the foreign cache: $(head -c 300 text.err)"

# --- what root printed ----------------------------------------------------------------

OUTPUTS="record.err text.out text.err folded.out folded.err script.out script.err tree.out tree.err
	threads.out threads.err out/h.speedscope.json speedscope.err out/h.svg flamegraph.err json.out
	json.err symbolize.out symbolize.err symtext.out symtext.err dump.out dump.err"
raw=
for f in $OUTPUTS; do
	[ -f "$f" ] || { fail "no output '$f'"; continue; }
	grep -q "$ESC\|$BEL\|$C1" "$f" && raw="$raw $f"
done
[ -z "$raw" ] && ok "no raw ESC, BEL or C1 CSI byte in any output (views, exports, dump, messages)" ||
	fail "raw control bytes in:$raw: $(for f in $raw; do grep -a -m 1 "$ESC\|$BEL\|$C1" "$f" | od -c | head -n 1; done | head -n 2 | tr -s ' ')"
# Not vacuous: the attacker's name is there, escaped.
SHOWN='jit\x1b[2J\x1b]0;x\x07'
grep -qF "$SHOWN" threads.out && grep -qF "$SHOWN" text.out &&
	ok "the program's name is shown escaped ('$SHOWN') as thread and module" ||
	fail "the escaped name '$SHOWN' is not shown: $(grep -a -m 1 jit threads.out | cut -c 1-120)"
found=
for f in $OUTPUTS; do
	[ -f "$f" ] && grep -q "$FORGED" "$f" && found="$found $f"
done
[ -z "$found" ] && ok "the other user's perf map names nothing (no '$FORGED' anywhere)" ||
	fail "the forged perf-map names appear in:$found"
grep -q "perf map.*ignored: owned by neither" text.err &&
	ok "report says the foreign perf map is ignored" ||
	fail "no warning for the foreign perf map: $(head -c 300 text.err)"

# The profile is still right: C named from its mapped image, A from its symbol table.
set -- $(folded_share folded.out ';main;level1;level2;level3;level4$')
[ "${1:-0}" -gt 0 ] && ok "the deleted program's stacks are named main;...;level4 ($1 of $2 samples)" ||
	fail "the deleted program's stacks are not named: $(folded_top folded.out 2 | tr '\n' '|')"
set -- $(folded_share folded.out '\[anon\]\+0x[0-9a-f]+;jit_callback$')
[ "${1:-0}" -gt 0 ] && ok "the JIT program's callback is named from its symbol table, its generated code an address ($1 of $2 samples)" ||
	fail "no sample named [anon]+0x...;jit_callback: $(folded_top folded.out 3 | tr '\n' '|')"

# --- the targets -----------------------------------------------------------------------

i=0
while [ $i -lt 50 ] && [ ! -s watch.count ]; do
	sleep 0.1
	i=$((i + 1))
done
info "the targets' state was looked at $(cat watch.count 2>/dev/null || echo '?') times while root worked"
[ -s watch.count ] && [ "$(cat watch.count)" -gt 10 ] || fail "the state watcher did not run"
[ ! -s stopped.txt ] && ok "neither target was ever seen stopped (state T or t)" ||
	fail "a target was seen stopped: $(sort -u stopped.txt | tr '\n' ' ')"
# A stop shorter than the watcher's 20 ms would slip between its looks: no signal at all.
bad=$(grep -E "^(kill|tkill|rt_sigqueueinfo)\(($A|$C|-$A|-$C)[,)]|^tgkill\(($A|$C)," all.trace | head -n 2)
[ -z "$bad" ] && ok "root sent the targets no signal (strace)" ||
	fail "root signalled a target: $(echo "$bad" | tr '\n' '|')"
ticks() { awk '{ sub(/.*\) /, ""); print $1, $12 + $13 }' "/proc/$1/stat" 2>/dev/null; }
for p in $A $C; do
	set -- $(ticks $p)
	t0=${2:-}
	sleep 0.5
	set -- $(ticks $p)
	case ${1:-} in
	'') fail "target $p is gone" ;;
	T | t) fail "target $p is left stopped (state $1)" ;;
	*) [ "${2:-0}" -gt "${t0:-0}" ] && ok "target $p still runs (state $1, CPU ticks $t0 -> $2)" ||
		fail "target $p does not run: state $1, CPU ticks $t0 -> ${2:-?}" ;;
	esac
done
finish
