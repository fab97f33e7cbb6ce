# SPDX-License-Identifier: MIT
# bash completion (completion/stackpulse.bash): sourced in bash, completions simulated with
# COMP_WORDS/COMP_CWORD; every option --help lists is offered, --format values match the
# binary's own list, spool and output files, pids.
. "$(dirname "$0")/lib.sh"
need_stackpulse
need_cmd bash "running the completion"
COMP=$REPO/completion/stackpulse.bash
[ -f "$COMP" ] || { fail "missing $COMP"; finish; }

touch x.spool y.txt
mkdir d.dir

# comp WORD...: the completions bash would offer for the last WORD, one a line, sorted.
comp() {
	SP_COMP=$COMP bash -c '
		source "$SP_COMP" || exit 3
		COMP_WORDS=("$@")
		COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		_stackpulse
		printf "%s\n" "${COMPREPLY[@]}"' comp "$SP" "$@" 2>comp.err | sort -u
}

# has LIST WORD: the completion list holds WORD.
has() {
	printf '%s\n' "$1" | grep -qxF -- "$2"
}

out=$(comp rep)
[ "$out" = report ] && ok "'stackpulse rep' completes to report" || fail "'stackpulse rep' gave: $(echo $out) $(head -c 200 comp.err)"
out=$(comp "")
for s in record report dump symbolize; do
	has "$out" "$s" || fail "subcommand $s not offered: $(echo $out)"
done
ok "all subcommands offered: $(echo $out)"

# Every option each subcommand's --help lists (read here independently) is offered after '-'.
for sub in record report annotate dump symbolize; do
	offered=$(comp "$sub" -)
	missing=
	for o in $("$SP" "$sub" --help | grep -E '^ +-' | sed 's/^ *//; s/  .*//' | grep -oE -- '(^|[ ,])--?[A-Za-z0-9?][A-Za-z0-9-]*' | sed 's/^[ ,]*//' | sort -u); do
		has "$offered" "$o" || has "$offered" "$o=" || missing="$missing $o"
	done
	[ -z "$missing" ] && ok "$sub: every option of --help is offered ($(echo "$offered" | wc -l) words)" ||
		fail "$sub: options in --help not offered:$missing"
done

out=$(comp report --for)
[ "$out" = "--format=" ] && ok "'report --for' completes to --format=" || fail "'report --for' gave: $(echo $out)"

# --format values: exactly the list the binary names for a bad one.
want=$("$SP" report --format=bogus 2>&1 | sed -n 's/.*expected //p' | sed 's/, or /,/; s/ or /,/; s/, /,/g' | tr ',' '\n' | sort -u)
got=$(comp report --format =)
if [ -n "$want" ] && [ "$got" = "$want" ] && has "$got" text && has "$got" perf-script; then
	ok "'report --format=' offers $(echo $got)"
else
	fail "'report --format=' offers '$(echo $got)', the binary expects '$(echo $want)'"
fi
out=$(comp report --format=pe)
[ "$out" = "--format=perf-script" ] && ok "'report --format=pe' (one word) completes to --format=perf-script" ||
	fail "'report --format=pe' gave: $(echo $out)"
out=$(comp report --perf-maps = "")
[ "$(echo $out)" = "all none python" ] && ok "'report --perf-maps=' offers all, python, none" || fail "'report --perf-maps=' gave: $(echo $out)"
out=$(comp report --rows = "")
[ -z "$out" ] && ok "a numeric option's value gets no words" || fail "'report --rows=' gave: $(echo $out)"

# Files: spools (and directories) for the SPOOL operand, any file for -o.
out=$(comp report "")
has "$out" x.spool && has "$out" d.dir && ! has "$out" y.txt && ok "'report ' offers x.spool and d.dir, not y.txt" ||
	fail "'report ' gave: $(echo $out)"
out=$(comp dump --json x)
[ "$out" = x.spool ] && ok "'dump --json x' completes to x.spool" || fail "'dump --json x' gave: $(echo $out)"
out=$(comp report --diff "")
has "$out" x.spool && ! has "$out" y.txt && ok "'report --diff ' offers spools (its BASE)" ||
	fail "'report --diff ' gave: $(echo $out)"
out=$(comp report -o "")
has "$out" y.txt && has "$out" x.spool && ok "'report -o ' offers every file" || fail "'report -o ' gave: $(echo $out)"

# Pids for -p, also after a comma.
sleep 30 &
pid=$!
track_pid $pid
out=$(comp record -p "$pid")
has "$out" "$pid" && ok "'record -p $pid' offers the running pid" || fail "'record -p $pid' gave: $(echo $out | head -c 200)"
out=$(comp record --pid = "1,$pid")
has "$out" "1,$pid" && ok "'record --pid=1,$pid' completes after the comma" || fail "'record --pid=1,$pid' gave: $(echo $out | head -c 200)"
finish
