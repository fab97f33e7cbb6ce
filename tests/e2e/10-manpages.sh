# SPDX-License-Identifier: MIT
# Every long option a subcommand's --help lists is documented in its man page.
. "$(dirname "$0")/lib.sh"
need_stackpulse

for sub in record report annotate dump symbolize; do
	page=$REPO/man/stackpulse-$sub.1
	if [ ! -f "$page" ]; then
		fail "man page man/stackpulse-$sub.1 is missing"
		continue
	fi
	"$SP" "$sub" --help >help.txt 2>&1
	# roff writes a hyphen in an option as \- : compare with those removed.
	sed 's/\\-/-/g' "$page" >page.txt
	missing=
	for opt in $(grep -oE -- '--[a-z][a-z0-9-]*' help.txt | sort -u); do
		grep -q -- "$opt" page.txt || missing="$missing $opt"
	done
	if [ -z "$missing" ]; then
		ok "stackpulse-$sub(1) documents every option of '$sub --help'"
	else
		fail "stackpulse-$sub(1) lacks:$missing"
	fi
done
if man -l "$REPO/man/stackpulse.1" >/dev/null 2>&1 || ! command -v man >/dev/null 2>&1; then
	ok "man pages render"
else
	fail "man -l man/stackpulse.1 fails"
fi
finish
