# SPDX-License-Identifier: MIT
# Command-line surface: --help, SUBCOMMAND --help, --version, usage errors (exit 2).
. "$(dirname "$0")/lib.sh"
need_stackpulse

# expect_status WANT DESCRIPTION COMMAND...: run, keep stdout/stderr, compare the status.
expect_status() {
	want=$1
	what=$2
	shift 2
	with_timeout 30 "$@" >out.txt 2>err.txt
	got=$?
	if [ "$got" -eq "$want" ]; then
		ok "$what: exit $got"
		return 0
	fi
	fail "$what: exit $got, expected $want (stderr: $(head -c 300 err.txt))"
	return 1
}

if expect_status 0 "stackpulse --help" "$SP" --help; then
	for sub in record report dump; do
		grep -q "$sub" out.txt && ok "--help lists '$sub'" || fail "--help does not list '$sub'"
	done
fi

if expect_status 0 "stackpulse --version" "$SP" --version; then
	if grep -Eq '^stackpulse [0-9]+\.[0-9]+' out.txt; then
		ok "--version prints 'stackpulse X.Y...' ($(head -n 1 out.txt))"
	else
		fail "--version prints '$(head -n 1 out.txt)', expected 'stackpulse VERSION'"
	fi
fi

expect_status 2 "stackpulse with no subcommand" "$SP"

for sub in record report dump; do
	if expect_status 0 "stackpulse $sub --help" "$SP" "$sub" --help; then
		grep -qi 'usage' out.txt && ok "$sub --help shows usage" || fail "$sub --help has no usage line"
		grep -qi 'exit' out.txt && ok "$sub --help documents exit status" ||
			fail "$sub --help does not mention exit status"
	fi
done

# Options the spec promises must appear in each --help.
"$SP" record --help >rec-help.txt 2>&1
for opt in -o -F -d -p -q --stack-size; do
	grep -q -- "$opt" rec-help.txt && ok "record --help mentions $opt" || fail "record --help does not mention $opt"
done
"$SP" report --help >rep-help.txt 2>&1
for opt in --format -o; do
	grep -q -- "$opt" rep-help.txt && ok "report --help mentions $opt" || fail "report --help does not mention $opt"
done

if expect_status 2 "unknown subcommand" "$SP" frobnicate; then
	grep -q 'frobnicate' err.txt && ok "unknown subcommand is named in the error" ||
		fail "unknown subcommand error does not name it: $(head -c 200 err.txt)"
fi

for sub in record report dump; do
	if expect_status 2 "$sub with a bad option" "$SP" "$sub" --no-such-option; then
		grep -q 'no-such-option' err.txt && ok "$sub names the bad option" ||
			fail "$sub bad-option error does not name it: $(head -c 200 err.txt)"
	fi
done

expect_status 2 "record without a command or -p" "$SP" record
expect_status 2 "record -F with a non-number" "$SP" record -F abc -- true
expect_status 2 "report --format with an unknown format" "$SP" report --format=no-such-format x.spool
expect_status 2 "report with two spool arguments" "$SP" report a.spool b.spool

finish
