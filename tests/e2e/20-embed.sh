# SPDX-License-Identifier: MIT
# The library as others use it: make install into a temporary prefix, build the README's
# example (examples/embed.c) against it through pkg-config, record chain4 with it.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload chain4
need_cmd pkg-config "building against the installed library"
need_cmd make "make install"
CC=${CC:-cc}
need_cmd "$CC" "building the example"

# make install: into a prefix, then staged under DESTDIR.  Command-line variables of an
# outer make (SANITIZE=1 in make check) reach this one through MAKEFLAGS, as they should.
PREFIX=$TMP/prefix
if with_timeout 300 make -s -C "$REPO" install prefix="$PREFIX" DESTDIR= >install.out 2>&1; then
	ok "make install prefix=DIR"
else
	fail "make install prefix=DIR failed: $(tail -n 5 install.out)"
	finish
fi
for f in bin/stackpulse lib/libstackpulse.a include/stackpulse.h lib/pkgconfig/stackpulse.pc \
	share/man/man1/stackpulse-report.1 share/man/man5/stackpulse-spool.5 \
	share/bash-completion/completions/stackpulse; do
	[ -f "$PREFIX/$f" ] || fail "make install did not install $f"
done
ok "make install installed the binary, library, header, stackpulse.pc, man pages and bash completion"

with_timeout 300 make -s -C "$REPO" install prefix=/opt/sp DESTDIR="$TMP/stage" >stage.out 2>&1 ||
	fail "make install DESTDIR=DIR failed: $(tail -n 5 stage.out)"
[ -f "$TMP/stage/opt/sp/share/bash-completion/completions/stackpulse" ] &&
	ok "a DESTDIR install stages the bash completion under DESTDIR/prefix/share" ||
	fail "no bash completion under $TMP/stage/opt/sp/share/bash-completion/completions"
pc=$TMP/stage/opt/sp/lib/pkgconfig/stackpulse.pc
if grep -qx 'prefix=/opt/sp' "$pc" 2>/dev/null && ! grep -q "$TMP" "$pc"; then
	ok "a DESTDIR install's stackpulse.pc names the prefix, not the staging directory"
else
	fail "staged stackpulse.pc: $(grep prefix= "$pc" 2>/dev/null || echo missing)"
fi

export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig"
flags=$(pkg-config --cflags --libs --static stackpulse 2>pc.err)
if [ $? -eq 0 ] && echo "$flags" | grep -q -- "-I$PREFIX/include" && echo "$flags" | grep -q -- '-lstackpulse'; then
	ok "pkg-config --cflags --libs --static stackpulse: $flags"
else
	fail "pkg-config stackpulse: '$flags' $(cat pc.err)"
	finish
fi
version=$(pkg-config --modversion stackpulse)
"$SP" --version | grep -qF "$version" && ok "stackpulse.pc's version $version is the binary's" ||
	fail "stackpulse.pc says version '$version', stackpulse --version says '$("$SP" --version)'"

# An installed library built with sanitizers needs their runtimes at link time too.
san=
nm "$PREFIX/lib/libstackpulse.a" 2>/dev/null | grep -q '__asan_' && san=-fsanitize=address,undefined
# shellcheck disable=SC2086 # flags are words
if "$CC" $san -o embed "$REPO/examples/embed.c" $flags >build.out 2>&1; then
	ok "examples/embed.c builds against the installed library"
else
	fail "cc examples/embed.c \$(pkg-config ...) failed: $(head -n 5 build.out)"
	finish
fi

with_timeout 120 ./embed "$WL" -t 1 >embed.out 2>embed.err
st=$?
[ $st -eq 0 ] && ok "embed chain4 -t 1 exits 0" || fail "embed exited $st: $(head -c 300 embed.err)"
n=$(awk '$2 == "samples" && $1 ~ /^[0-9]+$/ { print $1; exit }' embed.out)
if [ -n "$n" ] && [ "$n" -gt 0 ]; then
	ok "embed reports $n samples"
else
	fail "embed printed no positive sample count: $(head -n 3 embed.out)"
fi
leaves=$(grep -c '^leaf: ' embed.out)
if grep -q '^leaf: level4 (chain4)$' embed.out; then
	ok "level4 is among the $leaves leaves embed names"
else
	fail "level4 not among the leaves: $(grep '^leaf: ' embed.out | head -n 3 | tr '\n' ' ')"
fi

# The spool it wrote is an ordinary spool: the CLI reads the same sample count.
"$SP" report --format=folded embed.spool >embed.folded 2>report.err
total=$(folded_total embed.folded)
[ -n "$n" ] && [ "$total" = "$n" ] && ok "stackpulse report reads the same $n samples from embed.spool" ||
	fail "stackpulse report counts $total samples in embed.spool, embed said ${n:-nothing}"

# The README shows the example: the same text, indented by four spaces.
awk '{ print ($0 == "" ? "" : "    " $0) }' "$REPO/examples/embed.c" >want.txt
awk 'NR == FNR { want[++n] = $0; next }
     { line[++m] = $0 }
     END {
	for (i = 1; i + n - 1 <= m; i++) {
		for (j = 1; j <= n && line[i + j - 1] == want[j]; j++) ;
		if (j > n) { found = 1; break }
	}
	exit !found
     }' want.txt "$REPO/README" &&
	ok "the README shows examples/embed.c as it is" ||
	fail "the README's code under 'Using the library' differs from examples/embed.c"

finish
