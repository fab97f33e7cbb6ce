# SPDX-License-Identifier: MIT
# bash completion for stackpulse(1): subcommands, each subcommand's options,
# option values, spool files and pids.
#
# Nothing here lists options by hand, so it cannot go stale: subcommands come
# from `stackpulse --help`, a subcommand's options from `stackpulse SUB --help`
# (argp's layout), and the values of an option that takes one of a few words
# (--format, --perf-maps, record's --event, ...) from the error stackpulse
# prints for a bad one ("expected text, folded, pprof or ...", "(one of cycles,
# instructions, ...)"), asked as `SUB --OPT=? --usage` so nothing runs.  Each
# answer is kept for the rest of the shell session.
# Installed as $(datadir)/bash-completion/completions/stackpulse.

declare -gA _stackpulse_cache

# The stackpulse being completed: the command word when it can be run, else PATH's.
_stackpulse_bin()
{
	local w=${COMP_WORDS[0]}
	[[ $w == "~/"* ]] && w=$HOME/${w#\~/}
	if [[ $w == */* && -x $w ]]; then
		printf '%s\n' "$w"
	else
		command -v stackpulse 2>/dev/null
	fi
}

# Print the subcommands listed under "Subcommands:" in `stackpulse --help`.
_stackpulse_subcommands()
{
	local bin=$1 key="$1 ::subcommands"
	if [[ -z ${_stackpulse_cache[$key]+set} ]]; then
		_stackpulse_cache[$key]=$("$bin" --help 2>/dev/null | awk '
			/^Subcommands:/ { on = 1; next }
			on && /^[ \t]*$/ { exit }
			on { print $1 }')
	fi
	printf '%s\n' "${_stackpulse_cache[$key]}"
}

# Print SUB's options, one a line, as "OPTION ARG" where ARG is the argument's
# name (FILE, N, ...) or "-" for a flag; short and long spellings both.
_stackpulse_options()
{
	local bin=$1 sub=$2 key="$1 $2 ::options"
	if [[ -z ${_stackpulse_cache[$key]+set} ]]; then
		_stackpulse_cache[$key]=$("$bin" "$sub" --help 2>/dev/null | awk '
			# argp: "  -o, --output=FILE   text", "      --rows=N   text", "  -q, --quiet";
			# not the continuation of a usage line ("            -a [-C CPU-LIST] ..."),
			# indented further than any option.
			/^ +-/ && !/^       / {
				line = $0
				sub(/^ +/, "", line)
				sub(/  .*/, "", line)
				n = split(line, part, /, /)
				arg = "-"
				for (i = 1; i <= n; i++)
					if (part[i] ~ /=/) { arg = part[i]; sub(/^[^=]*=/, "", arg) }
					else if (part[i] ~ /^-[^-] [^ ]/) { arg = part[i]; sub(/^-. /, "", arg) }
				for (i = 1; i <= n; i++) {
					o = part[i]
					sub(/[= \[].*/, "", o)
					if (o ~ /^--?[A-Za-z0-9?]/) print o, arg
				}
			}')
	fi
	printf '%s\n' "${_stackpulse_cache[$key]}"
}

# Print the words an option accepts when the binary names them in its error for
# a bad value ("expected a, b or c", or record -e's "(one of a, b, c)"); nothing
# for free-form arguments.
_stackpulse_values()
{
	local bin=$1 sub=$2 opt=$3 key="$1 $2 $3 ::values"
	if [[ -z ${_stackpulse_cache[$key]+set} ]]; then
		_stackpulse_cache[$key]=$("$bin" "$sub" "$opt=?" --usage </dev/null 2>&1 >/dev/null | awk '
			/expected / {
				s = $0
				sub(/.*expected /, "", s)
				sub(/[.;]$/, "", s)
				# Only a plain list of words: "a, b or c".
				if (s !~ /^[a-z0-9_-]+((, | or | and |, or )[a-z0-9_-]+)*$/) exit
				gsub(/, or |, | or | and /, " ", s)
				n = split(s, w, " ")
				for (i = 1; i <= n; i++) print w[i]
				exit
			}
			/\(one of / {
				s = $0
				sub(/.*\(one of /, "", s)
				sub(/\).*/, "", s)
				if (s !~ /^[a-z0-9_-]+(, [a-z0-9_-]+)*$/) exit
				n = split(s, w, ", ")
				for (i = 1; i <= n; i++) print w[i]
				exit
			}')
	fi
	printf '%s\n' "${_stackpulse_cache[$key]}"
}

# Running process ids, for -p PID[,PID...] (completes after the last comma).
_stackpulse_pids()
{
	local cur=$1 head=
	[[ $cur == *,* ]] && head=${cur%,*},
	local p pids=()
	for p in /proc/[0-9]*; do
		pids+=("${p#/proc/}")
	done
	compgen -P "$head" -W "${pids[*]}" -- "${cur##*,}"
}

# Online CPUs, for record -C CPU-LIST ("0,2-3"; completes after the last comma).
_stackpulse_cpus()
{
	local cur=$1 head='' r lo hi c cpus=()
	[[ $cur == *,* ]] && head=${cur%,*},
	local IFS=,
	for r in $(</sys/devices/system/cpu/online); do
		lo=${r%-*} hi=${r#*-}
		for ((c = lo; c <= hi; c++)); do
			cpus+=("$c")
		done
	done
	IFS=' '
	compgen -P "$head" -W "${cpus[*]}" -- "${cur##*,}"
}

# Complete the argument of option opt (spelled as in --help) into COMPREPLY.
_stackpulse_complete_arg()
{
	local bin=$1 sub=$2 opt=$3 arg=$4 cur=$5 prefix=${6-}
	local IFS=$'\n' long=$opt
	# A short option's values are asked under its long spelling.
	if [[ $opt != --* ]]; then
		long=$(_stackpulse_options "$bin" "$sub" | awk -v a="$arg" '$1 ~ /^--/ && $2 == a { print $1; exit }')
		[[ -n $long ]] || long=$opt
	fi
	case $arg in
	FILE*)
		compopt -o filenames 2>/dev/null
		COMPREPLY=($(compgen -P "$prefix" -f -- "$cur"))
		;;
	BASE* | SPOOL*)
		compopt -o filenames 2>/dev/null
		COMPREPLY=($(compgen -P "$prefix" -f -X '!*.spool' -- "$cur"; compgen -P "$prefix" -d -- "$cur"))
		;;
	DIR*)
		compopt -o filenames 2>/dev/null
		COMPREPLY=($(compgen -P "$prefix" -d -- "$cur"))
		;;
	PID*)
		COMPREPLY=($(_stackpulse_pids "$cur" | sed "s|^|$prefix|"))
		;;
	CPU*)
		COMPREPLY=($(_stackpulse_cpus "$cur" | sed "s|^|$prefix|"))
		;;
	*)
		COMPREPLY=($(compgen -P "$prefix" -W "$(_stackpulse_values "$bin" "$sub" "$long")" -- "$cur"))
		;;
	esac
}

_stackpulse()
{
	COMPREPLY=()
	local cur=${COMP_WORDS[COMP_CWORD]} prev=
	((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
	local bin
	bin=$(_stackpulse_bin) || return 0
	[[ -n $bin ]] || return 0
	local IFS=$'\n'

	# The subcommand: the first word after the command that is not an option.
	local i sub= subi=0
	for ((i = 1; i < COMP_CWORD; i++)); do
		if [[ ${COMP_WORDS[i]} != -* ]]; then
			sub=${COMP_WORDS[i]}
			subi=$i
			break
		fi
	done
	if [[ -z $sub ]]; then
		COMPREPLY=($(compgen -W "$(_stackpulse_subcommands "$bin")"$'\n'"--help"$'\n'"--version" -- "$cur"))
		return 0
	fi

	# After "record ... --": the command to run, then its arguments.
	for ((i = subi + 1; i < COMP_CWORD; i++)); do
		if [[ ${COMP_WORDS[i]} == -- ]]; then
			if ((i + 1 == COMP_CWORD)); then
				COMPREPLY=($(compgen -c -- "$cur"))
			else
				compopt -o default 2>/dev/null
				COMPREPLY=($(compgen -f -- "$cur"))
			fi
			return 0
		fi
	done

	local opts
	opts=$(_stackpulse_options "$bin" "$sub")

	# "--opt=value": one word, or three when COMP_WORDBREAKS holds '=' (bash's default).
	local opt= val= prefix=
	if [[ $cur == --*=* ]]; then
		opt=${cur%%=*} val=${cur#*=} prefix=$opt=
	elif [[ $cur == = && $prev == --* ]]; then
		opt=$prev val=
	elif [[ $prev == = ]] && ((COMP_CWORD >= 2)) && [[ ${COMP_WORDS[COMP_CWORD - 2]} == --* ]]; then
		opt=${COMP_WORDS[COMP_CWORD - 2]} val=$cur
	elif [[ $prev == -* ]]; then
		# "-o FILE", "--output FILE": only when prev takes an argument.
		local a
		a=$(awk -v o="$prev" '$1 == o { print $2; exit }' <<<"$opts")
		if [[ -n $a && $a != - ]]; then
			_stackpulse_complete_arg "$bin" "$sub" "$prev" "$a" "$cur"
			return 0
		fi
	fi
	if [[ -n $opt ]]; then
		local a
		a=$(awk -v o="$opt" '$1 == o { print $2; exit }' <<<"$opts")
		[[ -n $a && $a != - ]] && _stackpulse_complete_arg "$bin" "$sub" "$opt" "$a" "$val" "$prefix"
		return 0
	fi

	if [[ $cur == -* ]]; then
		# Long options that take an argument end in '=', and no space follows them.
		COMPREPLY=($(compgen -W "$(awk '{ print ($1 ~ /^--/ && $2 != "-") ? $1 "=" : $1 }' <<<"$opts")" -- "$cur"))
		[[ ${#COMPREPLY[@]} == 1 && ${COMPREPLY[0]} == *= ]] && compopt -o nospace 2>/dev/null
		return 0
	fi

	# Operands: spools for report, annotate, dump, symbolize (and directories to reach them).
	compopt -o filenames 2>/dev/null
	case $sub in
	record) COMPREPLY=($(compgen -f -- "$cur")) ;;
	*) COMPREPLY=($(compgen -f -X '!*.spool' -- "$cur"; compgen -d -- "$cur")) ;;
	esac
	return 0
}

complete -F _stackpulse stackpulse
