# SPDX-License-Identifier: MIT
# -k/--kernel: kernel frames from the kernel callchain go below (leafward of) the user
# frames of a system-call-heavy program, whose user part stays rooted at main.  An
# unprivileged user under perf_event_paranoid >= 2 gets a user-only recording, told
# once on stderr, with kernel_enabled=0 in the summary.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_perf_events
need_workload syscall_loop
SYSLOOP=$WL
need_workload chain4
CHAIN4=$WL

ROOT='^_start;__libc_start_main[^;]*;__libc_start_call_main;main'
MIN=99

# kernel_stacks DUMP: "with_kernel misplaced total": samples whose stack holds a kernel
# frame, samples with a kernel frame rootward of a user frame, and all samples.
kernel_stacks() {
	awk '
		function val(k,   i) { for (i = 2; i <= NF; i++) if (index($i, k "=") == 1) return substr($i, length(k) + 2); return "" }
		$1 == "frame" { mode[val("id")] = val("mode") }
		$1 == "stack" { parent[val("id")] = val("parent"); frame[val("id")] = val("frame") }
		$1 == "sample" {
			total++
			s = val("stack")
			if (!(s in has)) {
				k = 0; bad = 0; user = 0
				for (id = s; id != "-" && id != ""; id = parent[id]) {
					m = mode[frame[id]]
					if (m == "kernel") { k = 1; if (user) bad = 1 }
					else if (m == "user") user = 1
				}
				has[s] = k; misplaced[s] = bad
			}
			with += has[s]; wrong += misplaced[s]
		}
		END { printf "%d %d %d\n", with, wrong, total }' "$1"
}

# --- as root (or whoever may sample the kernel): kernel frames ----------------------
sp_record k.spool -k -F 999 -- "$SYSLOOP" -t 1 >/dev/null
rc=$?
sed 's/^/# record -k: /' record.err
if [ $rc -ne 0 ]; then
	fail "record -k exited $rc: $(head -c 300 record.err)"
else
	ok "record -k of syscall_loop exits 0"
	with_timeout 60 "$SP" dump k.spool >k.dump 2>/dev/null
	enabled=$(dump_field summary kernel_enabled k.dump)
	info "dump summary: kernel_enabled=$enabled; $(grep -c 'mode=kernel' k.dump) distinct kernel frames"
	if [ "$(id -u)" = 0 ] || [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -lt 2 ]; then
		[ "$enabled" = 1 ] && ok "kernel_enabled=1 in the summary" || fail "kernel_enabled='$enabled' in the summary of a privileged -k recording"
		set -- $(kernel_stacks k.dump)
		info "kernel frames rootward of user frames in $2 samples"
		# syscall_loop spends about 95% of its CPU time in the kernel.
		share_at_least 30 "$1" "$3" "the samples have kernel frames (mode=kernel)"
		[ "$2" -eq 0 ] && ok "kernel frames are always leafward of the user frames" ||
			fail "$2 samples have a kernel frame rootward of a user frame"
		with_timeout 60 "$SP" report --format=folded k.spool >k.folded 2>/dev/null
		folded_top k.folded 3 | sed 's/^/# top: /'
		set -- $(folded_share k.folded "$ROOT(;|\$)")
		share_at_least $MIN "$1" "$2" "the -k stacks are rooted at main (their user part)"
		# The user leaf is the C library's system call wrapper (read, write, syscall);
		# a stack continuing past it holds kernel frames.
		set -- $(folded_share k.folded "$ROOT;syscall_loop;(read_zero|write_null|get_pid);[^;]+;[^;]+")
		share_at_least 30 "$1" "$2" "the folded stacks continue past the user leaf into the kernel"
	else
		skip "kernel frames: this user may not sample the kernel (perf_event_paranoid=$(cat /proc/sys/kernel/perf_event_paranoid))"
	fi
fi

# --- user-only fallback -------------------------------------------------------------
paranoid=$(cat /proc/sys/kernel/perf_event_paranoid)
if [ "$paranoid" -lt 2 ]; then
	skip "user-only fallback: perf_event_paranoid=$paranoid lets unprivileged users sample the kernel"
	finish
fi
if [ "$paranoid" -gt 2 ]; then
	skip "user-only fallback: perf_event_paranoid=$paranoid denies unprivileged users every event"
	finish
fi
# as_user CMD...: run CMD as an unprivileged user: ourselves when not root, else nobody.
if [ "$(id -u)" != 0 ]; then
	as_user() { "$@"; }
	who=$(id -un)
elif ! id nobody >/dev/null 2>&1; then
	skip "user-only fallback: no user 'nobody' to run the recorder as"
	finish
elif command -v setpriv >/dev/null 2>&1; then
	grp=$(id -gn nobody)
	as_user() { setpriv --reuid=nobody --regid="$grp" --clear-groups -- "$@"; }
	who="nobody (setpriv)"
elif command -v su >/dev/null 2>&1; then
	as_user() {
		cmd=
		for a in "$@"; do
			cmd="$cmd '$(printf '%s' "$a" | sed "s/'/'\\\\''/g")'"
		done
		su -s /bin/sh nobody -c "$cmd"
	}
	who="nobody (su)"
else
	skip "user-only fallback: neither setpriv nor su is available to run the recorder as nobody"
	finish
fi
mkdir user && chmod 777 user && chmod 711 .
if ! as_user sh -c "test -x '$SP' && test -x '$CHAIN4' && test -w '$TMP/user'"; then
	skip "user-only fallback: $who cannot run '$SP' or '$CHAIN4' or write '$TMP/user'"
	finish
fi
as_user "$SP" record -k -F 999 -o "$TMP/user/u.spool" -- "$CHAIN4" -t 1 >/dev/null 2>user.err
rc=$?
sed "s/^/# record -k as $who: /" user.err
[ $rc -eq 0 ] && ok "record -k as $who exits 0 (user-only)" || { fail "record -k as $who exited $rc: $(head -c 300 user.err)"; finish; }
notice=$(grep -i 'kernel' user.err | grep -Eic 'denied|paranoid|permi|user[- ]only|CAP_PERFMON')
kernel_lines=$(grep -ic kernel user.err)
if [ "$notice" -ge 1 ] && [ "$kernel_lines" -le 2 ] && [ -z "$(grep -i kernel user.err | sort | uniq -d)" ]; then
	ok "stderr says once that kernel sampling was denied ($kernel_lines lines mention the kernel)"
else
	fail "stderr should say once that kernel frames are off: $notice notices, $kernel_lines lines mention the kernel"
fi
with_timeout 60 "$SP" dump user/u.spool >u.dump 2>/dev/null
enabled=$(dump_field summary kernel_enabled u.dump)
[ "$enabled" = 0 ] && ok "the summary says kernel frames off (kernel_enabled=0)" ||
	fail "kernel_enabled='$enabled' in the summary of a user-only recording"
nk=$(grep -c 'mode=kernel' u.dump)
[ "$nk" -eq 0 ] && ok "no kernel frames in the user-only spool" || fail "$nk kernel frames in the user-only spool"
with_timeout 60 "$SP" report --format=folded user/u.spool >u.folded 2>/dev/null
set -- $(folded_share u.folded "$ROOT;level1;level2;level3;level4\$")
[ "$2" -gt 500 ] || fail "user-only: only $2 samples (expected more than 500)"
share_at_least user-only: $MIN "$1" "$2" "the samples are complete chain4 stacks"
finish
