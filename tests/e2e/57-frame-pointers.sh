# SPDX-License-Identifier: MIT
# Frame pointers where there is no CFI (docs/DESIGN.md, decision 3):
# (a) a C program built with frame pointers and no unwind tables keeps its whole chain
#     down to _start; without frame pointers it ends in an honest [truncated], never a
#     chain with frames missing;
# (b) Node's JIT frames (--perf-basic-prof --interpreted-frames-native-stack) keep their
#     callers down to _start;
# (c) Java with -XX:+PreserveFramePointer keeps its JIT frames' callers down to the
#     thread's start;
# (d) a stripped Go binary (-ldflags='-s -w': no symbols, no CFI) keeps the whole chain of
#     its frameless leaf, the goroutine's entry included.
# Beside each share: perf record -g (the kernel's frame-pointer walk) on the same program.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload fp_chain

MAPS=
trap 'for m in $MAPS; do rm -f "$m"; done; cleanup' EXIT

# record_runtime NAME COMMAND...: record a runtime that writes perf maps into NAME.spool,
# its maps removed when the test ends, its folded stacks in NAME.folded.
record_runtime() {
	name=$1
	shift
	sp_record "$name.spool" -F 999 -- "$@" >/dev/null || fail "$name: record exited $?: $(head -c 300 record.err)"
	cp record.err "$name.record.err"
	with_timeout 60 "$SP" dump "$name.spool" >"$name.dump" 2>/dev/null
	for p in $(dump_field thread pid "$name.dump" | sort -u); do
		MAPS="$MAPS /tmp/perf-$p.map"
	done
	with_timeout 60 "$SP" report --format=folded "$name.spool" >"$name.folded" 2>/dev/null
}

# --- (a) C without unwind tables ---------------------------------------------------
FP=$(cd "$(dirname "$0")/../workloads" && pwd)/fp_chain
if readelf -S "$FP" 2>/dev/null | grep -q 'debug_frame'; then
	fail "fp_chain was built with .debug_frame: the test needs a binary without CFI"
fi
WHOLE='^_start;__libc_start_main;__libc_start_call_main;main;fp_level1;fp_level2;fp_level3;fp_leaf$'
sp_record fp.spool -F 999 -- "$FP" 2 >/dev/null || { fail "record of fp_chain exited $?: $(head -c 300 record.err)"; finish; }
with_timeout 60 "$SP" report --format=folded fp.spool >fp.folded 2>/dev/null
with_timeout 60 "$SP" dump fp.spool >fp.dump 2>/dev/null
counts=$(leaf_share fp.folded '(^|;)fp_leaf$' "$WHOLE")
share=$(pct $counts)
ref=$(perf_g_share fp '(^|;)fp_leaf$' '(^|;)__libc_start_call_main;main;fp_level1;fp_level2;fp_level3;fp_leaf$' "$FP" 2)
set -- $ref
info "fp_chain: fp_leaf samples with main > fp_level1 > fp_level2 > fp_level3 down to _start: stackpulse $share%${1:+; perf -g, down to __libc_start_call_main: $1 / $2 = $(pct "$1" "$2")%}"
share_at_least fp_chain: 95 $counts "fp_leaf's samples carry the whole chain" ||
	info "fp_chain top stacks: $(folded_top fp.folded 3 | tr '\n' ' ')"
fpf=$(dump_field summary fp_frames fp.dump | tail -n 1)
[ "${fpf:-0}" -gt 0 ] && ok "the summary counts $fpf frames found by frame pointers" ||
	fail "the summary counts no frame found by frame pointers (fp_frames=${fpf:-none})"
grep -q 'found by frame pointers' record.err && ok "record's summary says frames were found by frame pointers" ||
	fail "record's summary does not mention the frame-pointer frames: $(tail -n 3 record.err | tr '\n' ' ')"

# The same program without frame pointers: no chain can be proven, so none is shown.
CC=${CC:-cc}
SRC=$(cd "$(dirname "$0")/../workloads" && pwd)/fp_chain.c
if command -v "$CC" >/dev/null 2>&1 &&
	"$CC" -O2 -fomit-frame-pointer -fno-asynchronous-unwind-tables -fno-unwind-tables \
		-o nofp "$SRC" 2>/dev/null; then
	sp_record nofp.spool -F 999 -- ./nofp 1 >/dev/null || fail "record of fp_chain without frame pointers exited $?"
	with_timeout 60 "$SP" report --format=folded nofp.spool >nofp.folded 2>/dev/null
	set -- $(leaf_share nofp.folded '(^|;)fp_leaf$' '^\[truncated\];fp_leaf$')
	info "fp_chain without frame pointers: $1 of $2 fp_leaf samples end in [truncated] at the leaf"
	set -- $(folded_share nofp.folded '^_start;.*fp_leaf')
	[ "$2" -gt 0 ] && [ "$1" -eq 0 ] &&
		ok "without frame pointers no fp_leaf stack claims a root ($2 samples)" ||
		fail "without frame pointers $1 of $2 samples claim a root through fp_leaf"
	set -- $(leaf_share nofp.folded '(^|;)fp_leaf$' '^\[truncated\];fp_leaf$')
	share_at_least "without frame pointers:" 95 "$1" "$2" "fp_leaf's stacks end honestly at the leaf ([truncated];fp_leaf)" ||
		info "without frame pointers, top stacks: $(folded_top nofp.folded 3 | tr '\n' ' ')"
else
	skip "no C compiler ($CC) to build fp_chain without frame pointers"
fi

# --- (b) Node ----------------------------------------------------------------------
if command -v node >/dev/null 2>&1; then
	cp "$WORKLOADS/js_chain.js" hot.js
	# Twice: as it runs by default (TurboFan inlines the callers into one frame), and
	# with every function its own optimized frame (--no-turbo-inlining), where the
	# leaf's frame slots hold values that land in node's text.
	for mode in default no-inlining; do
		NODE_FLAGS='--perf-basic-prof --interpreted-frames-native-stack'
		[ $mode = no-inlining ] && NODE_FLAGS="$NODE_FLAGS --no-turbo-inlining"
		record_runtime node-$mode node $NODE_FLAGS hot.js
		LEAF='(^|;)JS:[^;]*leafJs[^;]*(;|$)'
		NWHOLE='^_start;.*;JS:[^;]*topJs[^;]*;(.*;)?JS:[^;]*leafJs'
		set -- $(leaf_share node-$mode.folded "$LEAF" "$NWHOLE")
		share=$(pct "$1" "$2")
		ref=$(perf_g_share node-$mode "$LEAF" ';JS:[^;]*topJs[^;]*;(.*;)?JS:[^;]*leafJs' node $NODE_FLAGS hot.js)
		if [ -f node-$mode.data ]; then
			for p in $(perf script -i node-$mode.data -F pid 2>/dev/null | sort -u); do
				MAPS="$MAPS /tmp/perf-$p.map"
			done
		fi
		info "node ($mode): leafJs samples with topJs above them down to _start: stackpulse $1 / $2 = $share%${ref:+; perf -g, topJs above leafJs: $(echo $ref | awk '{ printf "%d / %d = %.1f%%", $1, $2, $2 ? 100 * $1 / $2 : 0 }')}"
		share_at_least "node ($mode):" 95 "$1" "$2" "leafJs's samples keep their JS and native callers down to _start" ||
			info "node ($mode): top stacks: $(folded_top node-$mode.folded 2 | cut -c1-300 | tr '\n' ' '); record said: $(tr '\n' ' ' <node-$mode.record.err | tr -s ' ' | cut -c1-900)"
	done
else
	skip "node: not found in PATH (the Node measurement needs node --perf-basic-prof)"
fi

# --- (c) Java ----------------------------------------------------------------------
if command -v java >/dev/null 2>&1 && command -v javac >/dev/null 2>&1; then
	cat >Hot.java <<'EOF'
public class Hot {
	static long leafJ(long n) { long x = 0; for (long i = 0; i < n; i++) x = x * 31 + i; return x; }
	static long midJ(long n) { return leafJ(n) ^ 1; }
	static long outerJ(long n) { return midJ(n) ^ 2; }
	public static void main(String[] a) {
		long end = System.currentTimeMillis() + 3000, t = 0;
		while (System.currentTimeMillis() < end) t += outerJ(100000);
		System.out.println(t & 1);
	}
}
EOF
	if with_timeout 120 javac Hot.java 2>javac.err; then
		JFLAGS='-XX:+UnlockDiagnosticVMOptions -XX:+PreserveFramePointer -XX:+DumpPerfMapAtExit'
		record_runtime java java $JFLAGS -cp . Hot
		# Callers still interpreted show as "Interpreter", C2 may inline midJ into
		# outerJ: the chain asked for is the Java main thread's, from its start.
		LEAF='(^|;)[^;]*Hot\.leafJ[^;]*$'
		JWHOLE='^__clone3;start_thread;ThreadJavaMain;JavaMain;.*;(Interpreter|[^;]*Hot\.(outerJ|midJ)[^;]*);[^;]*Hot\.leafJ[^;]*$'
		set -- $(leaf_share java.folded "$LEAF" "$JWHOLE")
		share=$(pct "$1" "$2")
		info "java: Hot.leafJ samples under its callers down to the thread's start: stackpulse $1 / $2 = $share%"
		share_at_least java: 95 "$1" "$2" "Hot.leafJ's samples keep their callers down to start_thread" ||
			info "java: top stacks: $(folded_top java.folded 2 | cut -c1-300 | tr '\n' ' ')"
	else
		skip "java: javac failed: $(head -c 200 javac.err)"
	fi
else
	skip "java: java and javac not found in PATH (Debian openjdk-17-jdk-headless)"
fi
# --- (d) stripped Go ------------------------------------------------------------------
if command -v go >/dev/null 2>&1; then
	mkdir -p gos
	cat >gos/main.go <<'EOF'
package main

import (
	"fmt"
	"os"
	"time"
)

//go:noinline
func goLeaf(n int) int {
	x := n
	for i := 0; i < 100000; i++ {
		x = x*1103515245 + 12345
	}
	return x
}

//go:noinline
func goMid(n int) int { return goLeaf(n) ^ 1 }

//go:noinline
func goOuter(n int) int { return goMid(n) ^ 2 }

func main() {
	end := time.Now().Add(2 * time.Second)
	t := 0
	for time.Now().Before(end) {
		t += goOuter(t)
	}
	fmt.Fprintln(os.Stderr, t&1)
}
EOF
	printf 'module gos\ngo 1.19\n' >gos/go.mod
	export GOCACHE="$TMP/gocache" GOPATH="$TMP/gopath" GOFLAGS=-mod=mod
	# The same code with and without symbols: the unstripped copy gives the addresses.
	if (cd gos && with_timeout 300 go build -o ../gofull . &&
		with_timeout 300 go build -ldflags='-s -w' -o ../gostrip .) 2>go.err; then
		if readelf -SW gostrip | grep -Eq '\.symtab|\.debug_frame|\.eh_frame '; then
			fail "the stripped Go binary still has symbols or CFI"
		fi
		# goLeaf's samples and those with the whole chain, root first: goexit,
		# runtime.main, main.main, goOuter, goMid, goLeaf; the function of each
		# gostrip+0xOFF frame from the unstripped copy's symbols (same code).
		go tool nm -size gofull >go.nm
		readelf -lW gofull >go.segs
		perf record -q -g -F 999 -o go.data -- ./gostrip >/dev/null 2>&1 &&
			perf script -i go.data -F ip >go.perf 2>/dev/null
		sp_record go.spool -F 999 -- ./gostrip >/dev/null 2>&1 || fail "go: record exited $?: $(head -c 300 record.err)"
		with_timeout 60 "$SP" report --format=folded go.spool >go.folded 2>/dev/null
		set -- $(python3 - <<'EOF'
import os
base = next(int(l.split()[2], 16) for l in open("go.segs") if l.split()[:1] == ["LOAD"] and "E" in l.split()[6:8])
want = ["runtime.goexit.abi0", "runtime.main", "main.main", "main.goOuter", "main.goMid", "main.goLeaf"]
ranges = {}
for l in open("go.nm"):
    f = l.split()
    if len(f) == 4 and f[3] in want:
        ranges[f[3]] = (int(f[0], 16) - base, int(f[0], 16) - base + int(f[1]))
def fn(off):
    return next((k for k, (lo, hi) in ranges.items() if lo <= off < hi), "?")
whole = leaf = 0
for l in open("go.folded"):
    stack, _, n = l.rstrip("\n").rpartition(" ")
    frames = stack.split(";")
    # Named from Go's function table (.gopclntab), whose assembly functions have no ".abi0"
    names = [fn(int(f[len("gostrip+0x"):], 16)) if f.startswith("gostrip+0x")
             else f + ".abi0" if f + ".abi0" in want else f for f in frames]
    if names[-1] != "main.goLeaf":
        continue
    leaf += int(n)
    whole += int(n) if names == want else 0
# perf -g: goLeaf samples whose next frame is goMid (return address - 1 inside it)
pm = pt = 0
if os.path.exists("go.perf"):
    for block in open("go.perf").read().split("\n\n"):
        # perf prints a stripped module's addresses as offsets, or as addresses
        ips = [int(x.split()[0], 16) for x in block.strip().splitlines() if x.strip()]
        ips = [a - base if a >= base else a for a in ips]
        if ips and fn(ips[0]) == "main.goLeaf":
            pt += 1
            pm += len(ips) > 1 and fn(ips[1] - 1) == "main.goMid"
print(whole, leaf, pm, pt)
EOF
)
		share=$(pct "$1" "$2")
		ref=
		[ -s go.perf ] && ref="$3 of $4"
		info "go stripped: goLeaf samples under goMid > goOuter > main.main > runtime.main > goexit: stackpulse $1 / $2 = $share%${ref:+; perf -g: $ref goLeaf samples have goMid as the caller (the leaf keeps no frame, so its frame-pointer walk skips it)}"
		share_at_least "go stripped:" 95 "$1" "$2" "goLeaf's samples carry the whole chain" ||
			info "go stripped: top stacks: $(folded_top go.folded 3 | tr '\n' ' ')"
	else
		skip "go: the Go program did not build: $(head -c 200 go.err)"
	fi
else
	skip "go: not found in PATH (Debian golang-go)"
fi
finish
