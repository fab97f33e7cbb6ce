/* SPDX-License-Identifier: MIT */
/* The symbol options report and symbolize share, and the warnings about symbol sources. */
#include "cli.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

enum {
	OPT_KALLSYMS = 0x200,
	OPT_NO_KERNEL_SYMBOLS,
	OPT_PERF_MAP_DIR,
	OPT_PERF_MAPS,
	OPT_NO_STORED_SYMBOLS,
};

static const struct argp_option options[] = {
	{"kallsyms", OPT_KALLSYMS, "FILE", 0,
	 "name kernel frames from FILE, a copy of /proc/kallsyms saved while recording "
	 "(default: /proc/kallsyms, when the running kernel is the recorded release)", 3},
	{"no-kernel-symbols", OPT_NO_KERNEL_SYMBOLS, NULL, 0,
	 "show kernel frames as [kernel]+0xADDRESS", 3},
	{"perf-map-dir", OPT_PERF_MAP_DIR, "DIR", 0,
	 "read perf-PID.map files from DIR instead of /tmp (and jit-PID.dump files "
	 "missing from their recorded path)", 3},
	{"perf-maps", OPT_PERF_MAPS, "WHICH", 0,
	 "whose perf maps name anonymous code: all (default), python (processes "
	 "recorded as Python runtimes), none", 3},
	{"no-stored-symbols", OPT_NO_STORED_SYMBOLS, NULL, 0,
	 "ignore the symbols 'stackpulse symbolize' stored in the spool: resolve every "
	 "frame from the module files, kallsyms and perf maps", 3},
	{NULL, 0, NULL, 0, NULL, 0},
};

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct sp_symbolizer_opts *o = state->input;
	switch (key) {
	case OPT_KALLSYMS:
		o->kallsyms_path = arg;
		break;
	case OPT_NO_KERNEL_SYMBOLS:
		o->no_kernel_symbols = true;
		break;
	case OPT_PERF_MAP_DIR:
		o->perf_map_dir = arg;
		break;
	case OPT_NO_STORED_SYMBOLS:
		o->stored_symbols = SP_STORED_NONE;
		break;
	case OPT_PERF_MAPS:
		if (!strcmp(arg, "all"))
			o->perf_map_policy = SP_PERF_MAPS_ALL;
		else if (!strcmp(arg, "python"))
			o->perf_map_policy = SP_PERF_MAPS_PYTHON;
		else if (!strcmp(arg, "none"))
			o->perf_map_policy = SP_PERF_MAPS_NONE;
		else
			argp_error(state, "unknown perf map choice '%s': expected all, python or none",
				   arg);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

const struct argp sp_cli_symbol_argp = {options, parse_opt, NULL, NULL, NULL, NULL, NULL};

void sp_cli_warn_symbol_sources(const struct sp_symbolizer_stats *st,
				const struct sp_symbolizer_opts *o)
{
	const char *ks = o->kallsyms_path ? o->kallsyms_path : "/proc/kallsyms";
	if (st->kallsyms_other_kernel)
		sp_cli_warn("kernel frames shown as addresses: the recording ran another kernel "
			    "release than this one (give its kallsyms with --kallsyms FILE)");
	else if (st->kallsyms_error)
		sp_cli_warn("kernel frames shown as addresses: cannot read '%s': %s", ks,
			    sp_strerror(st->kallsyms_error));
	else if (st->kallsyms_restricted)
		sp_cli_warn("kernel frames shown as addresses: '%s' shows every address as 0 "
			    "(kernel.kptr_restrict; read it as root)", ks);
	if (st->kallsyms_malformed)
		sp_cli_warn("%" PRIu64 " malformed line%s of '%s' skipped", st->kallsyms_malformed,
			    st->kallsyms_malformed == 1 ? "" : "s", ks);
	const char *dir = o->perf_map_dir ? o->perf_map_dir : "/tmp";
	if (st->perf_map_frames_unmapped && st->perf_maps_missing)
		sp_cli_warn("%" PRIu64 " frame%s in anonymous memory (JIT or Python code) shown as "
			    "addresses: no perf-PID.map in '%s' (nor a jitdump) for %" PRIu64
			    " process%s (the runtime writes it while it runs; keep a copy and give "
			    "--perf-map-dir)",
			    st->perf_map_frames_unmapped, st->perf_map_frames_unmapped == 1 ? "" : "s",
			    dir, st->perf_maps_missing, st->perf_maps_missing == 1 ? "" : "es");
	if (st->perf_maps_stale)
		sp_cli_warn("%" PRIu64 " perf map%s in '%s' ignored: older than the recorded "
			    "process (left by an earlier process with the same pid)",
			    st->perf_maps_stale, st->perf_maps_stale == 1 ? "" : "s", dir);
	if (st->perf_maps_insecure)
		sp_cli_warn("%" PRIu64 " perf map%s in '%s' ignored: a symlink, not a regular "
			    "file, or writable by group or others", st->perf_maps_insecure,
			    st->perf_maps_insecure == 1 ? "" : "s", dir);
	if (st->perf_maps_foreign)
		sp_cli_warn("%" PRIu64 " perf map%s in '%s' ignored: owned by neither the "
			    "process's user nor root (anyone can write /tmp/perf-PID.map)",
			    st->perf_maps_foreign, st->perf_maps_foreign == 1 ? "" : "s", dir);
	if (st->perf_maps_limited)
		sp_cli_warn("%" PRIu64 " perf map%s in '%s' read only in part (size limit)",
			    st->perf_maps_limited, st->perf_maps_limited == 1 ? "" : "s", dir);
	if (st->perf_map_lines_malformed)
		sp_cli_warn("%" PRIu64 " malformed perf map line%s skipped",
			    st->perf_map_lines_malformed, st->perf_map_lines_malformed == 1 ? "" : "s");
	const char *env_cache = getenv("STACKPULSE_CACHE_DIR");
	if (env_cache && *env_cache && *env_cache != '/')
		sp_cli_warn("STACKPULSE_CACHE_DIR '%.*s%s' is not an absolute path: no cache is used "
			    "(give an absolute path, or set it to '' to run without a cache)",
			    SP_CLI_CUT(env_cache));
	if (st->cache_dir_refused)
		sp_cli_warn("cache directory '%s' not used: %s (it must be this user's, reached "
			    "through no symlink, and writable by no one else; set STACKPULSE_CACHE_DIR "
			    "to another directory, or to '' for no cache)", st->cache_dir_refused,
			    st->cache_dir_refusal);
	if (st->sections_not_inflated)
		sp_cli_warn("%" PRIu64 " compressed section%s not inflated, first in '%s': %s "
			    "more than %" PRIu64 " MiB (%" PRIu64 " MiB for one file's sections "
			    "together, %" PRIu64 " MiB for MiniDebugInfo, %" PRIu64 " MiB for all "
			    "the files of this run: %" PRIu64 " skipped for that total), or %s not "
			    "whole; what %s held (symbols, inline functions, lines) is missing",
			    st->sections_not_inflated, st->sections_not_inflated == 1 ? "" : "s",
			    st->section_not_inflated_file ? st->section_not_inflated_file : "?",
			    st->sections_not_inflated == 1 ? "it claims" : "each claims",
			    SP_INFLATE_SECTION_MAX >> 20, SP_INFLATE_FILE_MAX >> 20,
			    SP_INFLATE_DEBUGDATA_MAX >> 20, SP_INFLATE_RUN_MAX >> 20,
			    st->sections_over_run_budget,
			    st->sections_not_inflated == 1 ? "is" : "are",
			    st->sections_not_inflated == 1 ? "it" : "they");
	if (st->sections_over_untrusted_budget)
		sp_cli_warn("%" PRIu64 " of those for the %" PRIu64 " MiB that files another user "
			    "can influence may inflate together in a run, first in '%s' (%s; root's "
			    "files in root's directories have %" PRIu64 " MiB)",
			    st->sections_over_untrusted_budget, SP_INFLATE_UNTRUSTED_RUN_MAX >> 20,
			    st->section_untrusted_file ? st->section_untrusted_file : "?",
			    st->section_untrusted_why ? st->section_untrusted_why : "?",
			    SP_INFLATE_RUN_MAX >> 20);
	if (st->cache_size_invalid)
		sp_cli_warn("STACKPULSE_CACHE_SIZE '%s' not understood (bytes, or a number with K, M, "
			    "G or T): the cache is kept within %" PRIu64 " MiB", st->cache_size_invalid,
			    st->cache_max_bytes >> 20);
	if (st->debug_files_mismatched)
		sp_cli_warn("%" PRIu64 " debug file%s refused: not built with the module file "
			    "(build-id or CRC differs) or not to be trusted (a symlink, another "
			    "user's, writable by others, or too large), first '%s'",
			    st->debug_files_mismatched,
			    st->debug_files_mismatched == 1 ? "" : "s",
			    st->debug_file_mismatched ? st->debug_file_mismatched : "?");
	if (st->inline_frames_cut)
		sp_cli_warn("%" PRIu64 " inlined-function frame%s left out of inline chains longer "
			    "than %d entries (the innermost and the function itself are kept)",
			    st->inline_frames_cut, st->inline_frames_cut == 1 ? "" : "s",
			    SP_INLINE_CHAIN_MAX);
	if (st->debug_files_over_crc_budget)
		sp_cli_warn("%" PRIu64 " debug-link candidate%s not read: a run reads at most %" PRIu64
			    " MiB of candidates to check their CRC (modules without a build-id); "
			    "their modules have no separate debug file",
			    st->debug_files_over_crc_budget,
			    st->debug_files_over_crc_budget == 1 ? "" : "s",
			    SP_DEBUGLINK_CRC_RUN_MAX >> 20);
	if (st->debug_files_over_untrusted_crc_budget)
		sp_cli_warn("%" PRIu64 " of those for the %" PRIu64 " MiB of candidates another user "
			    "can influence (the first %s)", st->debug_files_over_untrusted_crc_budget,
			    SP_DEBUGLINK_CRC_UNTRUSTED_RUN_MAX >> 20,
			    st->debug_file_untrusted_why ? st->debug_file_untrusted_why : "?");
}
