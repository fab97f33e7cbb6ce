/* SPDX-License-Identifier: MIT */
/* Unit tests of the spool's symbol records: encoding, reading back, damage, use by the symbolizer. */
#include "spool_fixture.h"
#include "spool/spool.h"

TestSuite(spool_symrec, .init = tmp_setup, .fini = tmp_teardown);

/* Frame 0's chain: an inlined function, then the function holding it. */
static const struct sp_resolved_frame chain0[] = {
	{.name = "inner", .module = "chain4", .file = "/src/x.h", .line = 7,
	 .kind = SP_KIND_NATIVE, .origin = SP_ORIGIN_ELF, .flags = SP_RFRAME_INLINE},
	{.name = "level4", .module = "chain4", .file = "/src/chain4.c", .line = 33,
	 .kind = SP_KIND_NATIVE, .origin = SP_ORIGIN_ELF, .symbol_offset = 0x34},
};
/* Frame 3 (kernel) named from kallsyms, frame 1 without a source file. */
static const struct sp_resolved_frame kframe = {
	.name = "do_syscall_64", .module = "[kernel.kallsyms]", .kind = SP_KIND_KERNEL,
	.origin = SP_ORIGIN_KERNEL_SYMBOLS, .symbol_offset = 0x10};
static const struct sp_resolved_frame plain = {
	.name = "level3", .module = "chain4", .kind = SP_KIND_NATIVE, .origin = SP_ORIGIN_ELF,
	.symbol_offset = 8};

/* The small spool with the symbol records add() encodes appended: *len bytes, *syms_at where they start. */
static uint8_t *with_symbols(void (*add)(struct sp_symenc *e), size_t *len, size_t *syms_at)
{
	size_t n;
	uint8_t *data = small_bytes(&n, NULL);
	struct sp_spool *s;
	cr_assert_eq(sp_spool_open_buffer(data, n, &s), 0);
	struct sp_symenc *e;
	cr_assert_eq(sp_symenc_new(s, &e), 0);
	add(e);
	struct sp_buf b;
	sp_buf_init(&b);
	cr_assert_eq(sp_buf_append(&b, data, n), 0);
	cr_assert_eq(sp_symenc_finish(e, &b), 0);
	sp_symenc_free(e);
	sp_spool_free(s);
	free(data);
	if (syms_at)
		*syms_at = n;
	*len = b.len;
	return b.data;
}

static void add_known(struct sp_symenc *e)
{
	cr_assert_eq(sp_symenc_add_frame(e, 0, chain0, 2), 0);
	cr_assert_eq(sp_symenc_add_frame(e, 3, &kframe, 1), 0);
	cr_assert_eq(sp_symenc_add_frame(e, 1, &plain, 1), 0);
	cr_assert_eq(sp_symenc_add_frame(e, 99, &plain, 1), -SP_E_BAD_ARG);
	cr_assert_eq(sp_symenc_add_kernel_symbol(e, 0xffffffff81a0b0b0, 0x40, "do_syscall_64",
						 NULL), 0);
	cr_assert_eq(sp_symenc_add_perf_map_line(e, 4242, 0x12300, 0x100, "py::f:/a.py"), 0);
	cr_assert_eq(sp_symenc_frames(e), 3);
}

/* The small spool with the known symbol records above. */
static uint8_t *symbolized_bytes(size_t *len, size_t *syms_at)
{
	return with_symbols(add_known, len, syms_at);
}

static void expect_same(const struct sp_resolved_frame *got, const struct sp_resolved_frame *want)
{
	cr_expect_str_eq(got->name, want->name);
	cr_expect_str_eq(got->module, want->module);
	if (want->file)
		cr_expect_str_eq(got->file, want->file);
	else
		cr_expect_null(got->file);
	cr_expect_eq(got->line, want->line);
	cr_expect_eq(got->kind, want->kind);
	cr_expect_eq(got->origin, want->origin);
	cr_expect_eq(got->flags, want->flags);
	cr_expect_eq(got->symbol_offset, want->symbol_offset);
}

Test(spool_symrec, records_round_trip)
{
	size_t len, at;
	uint8_t *data = symbolized_bytes(&len, &at);
	struct sp_spool *s;
	cr_assert_eq(sp_spool_open_buffer(data, len, &s), 0);
	cr_expect_not(sp_spool_truncated(s));
	cr_expect_not_null(sp_spool_summary(s), "symbol records after the trailer keep it");
	cr_expect_eq(s->nsymframes, 3);
	cr_expect_eq(s->nksyms, 1);
	cr_expect_eq(s->npmlines, 1);
	cr_expect_eq(s->intact_len, len);
	uint32_t *idx;
	cr_assert_eq(sp_symstore_index(s, &idx), 0);
	struct sp_resolved_frame got[4];
	cr_assert_eq(sp_symstore_get(s, idx, 0, got, 4), 2);
	expect_same(&got[0], &chain0[0]);
	expect_same(&got[1], &chain0[1]);
	cr_expect_eq(got[1].pc, small_frames[0].abs_ip);
	cr_assert_eq(sp_symstore_get(s, idx, 3, got, 4), 1);
	expect_same(&got[0], &kframe);
	cr_assert_eq(sp_symstore_get(s, idx, 1, got, 4), 1);
	expect_same(&got[0], &plain);
	cr_expect_eq(sp_symstore_get(s, idx, 2, got, 4), 0);
	cr_expect_eq(sp_symstore_get(s, idx, 1000, got, 4), 0);
	cr_expect_str_eq(s->sym_strings[s->ksyms[0].name], "do_syscall_64");
	cr_expect_eq(s->ksyms[0].module, SP_SYM_NO_STRING);
	cr_expect_eq(s->pmlines[0].pid, 4242);
	cr_expect_str_eq(s->sym_strings[s->pmlines[0].name], "py::f:/a.py");
	/* Strings are interned: "chain4" once. */
	size_t chain4 = 0;
	for (size_t i = 0; i < s->nsym_strings; i++)
		chain4 += !strcmp(s->sym_strings[i], "chain4");
	cr_expect_eq(chain4, 1);
	char *text = dump_string(s);
	cr_expect(strstr(text, "sym-frame frame=0 n=2 [kind=0 origin=0 flags=0x8 name=\"inner\""),
		  "%s", text);
	cr_expect(strstr(text, "sym-kernel addr=0xffffffff81a0b0b0 size=0x40 name=\"do_syscall_64\" "
			       "module=-"), "%s", text);
	cr_expect(strstr(text, "sym-perf-map pid=4242 start=0x12300"), "%s", text);
	free(text);
	free(idx);
	sp_spool_free(s);
	free(data);
}

/* A later record for a frame replaces an earlier one; strings already stored are reused. */
Test(spool_symrec, later_records_win_and_strings_are_reused)
{
	size_t len, at;
	uint8_t *data = symbolized_bytes(&len, &at);
	struct sp_spool *s;
	cr_assert_eq(sp_spool_open_buffer(data, len, &s), 0);
	struct sp_symenc *e;
	cr_assert_eq(sp_symenc_new(s, &e), 0);
	struct sp_resolved_frame again = plain;
	again.name = "level4"; /* a stored string */
	cr_assert_eq(sp_symenc_add_frame(e, 0, &again, 1), 0);
	struct sp_buf b;
	sp_buf_init(&b);
	cr_assert_eq(sp_buf_append(&b, data, len), 0);
	cr_assert_eq(sp_symenc_finish(e, &b), 0);
	sp_symenc_free(e);
	struct sp_spool *s2;
	cr_assert_eq(sp_spool_open_buffer(b.data, b.len, &s2), 0);
	cr_expect_eq(s2->nstrrecs, s->nstrrecs, "no new string record: every string was known");
	uint32_t *idx;
	cr_assert_eq(sp_symstore_index(s2, &idx), 0);
	struct sp_resolved_frame got[4];
	cr_assert_eq(sp_symstore_get(s2, idx, 0, got, 4), 1);
	cr_expect_str_eq(got[0].name, "level4");
	free(idx);
	sp_spool_free(s2);
	sp_spool_free(s);
	sp_buf_release(&b);
	free(data);
}

/*
 * Damage: a cut anywhere in the symbol records keeps the prefix; a record
 * that does not parse in the middle is skipped with the symbol records
 * after it, and the profile stays readable.
 */
Test(spool_symrec, damaged_symbol_records_never_cost_the_profile)
{
	size_t len, at;
	uint8_t *data = symbolized_bytes(&len, &at);
	for (size_t cut = at; cut < len; cut++) {
		struct sp_spool *s;
		cr_assert_eq(sp_spool_open_buffer(data, cut, &s), 0, "cut at %zu", cut);
		cr_expect_eq(sp_spool_sample_count(s), SMALL_NSAMPLES);
		cr_expect_not_null(sp_spool_summary(s));
		check_consistent(s);
		sp_spool_free(s);
	}
	/* Every byte of the symbol area set to each of a few hostile values. */
	static const uint8_t values[] = {0x00, 0x01, 0x7f, 0x80, 0xff};
	for (size_t i = at; i < len; i++) {
		for (size_t v = 0; v < SP_ARRAY_SIZE(values); v++) {
			uint8_t keep = data[i];
			data[i] = values[v];
			struct sp_spool *s;
			int err = sp_spool_open_buffer(data, len, &s);
			if (!err) {
				check_consistent(s);
				uint32_t *idx;
				cr_assert_eq(sp_symstore_index(s, &idx), 0);
				struct sp_resolved_frame got[8];
				for (uint32_t f = 0; f < sp_spool_frame_count(s); f++)
					sp_symstore_get(s, idx, f, got, 8);
				free(idx);
				sp_spool_free(s);
			}
			data[i] = keep;
		}
	}
	free(data);
}

Test(spool_symrec, a_bad_string_id_is_skipped_with_what_follows)
{
	struct sp_buf b;
	size_t n;
	uint8_t *small = small_bytes(&n, NULL);
	sp_buf_init(&b);
	cr_assert_eq(sp_buf_append(&b, small, n), 0);
	free(small);
	static const uint8_t strings[] = {2, 1, 'a', 1, 'b'};
	put_record(&b, SP_REC_SYM_STRINGS, strings, sizeof(strings));
	/* frame 0: kind 0, origin 0, flags 0, name 0, module 1, no file, line 0, offset 0 */
	static const uint8_t good[] = {0, 1, 0, 0, 0, 0, 1, 0, 0, 0};
	put_record(&b, SP_REC_SYM_FRAME, good, sizeof(good));
	static const uint8_t bad[] = {1, 1, 0, 0, 0, 9, 1, 0, 0, 0}; /* name id 9: undefined */
	put_record(&b, SP_REC_SYM_FRAME, bad, sizeof(bad));
	static const uint8_t after[] = {2, 1, 0, 0, 0, 1, 1, 0, 0, 0};
	put_record(&b, SP_REC_SYM_FRAME, after, sizeof(after));
	static const uint8_t unknown[] = {1, 2, 3};
	put_record(&b, 99, unknown, sizeof(unknown));
	struct sp_spool *s;
	cr_assert_eq(sp_spool_open_buffer(b.data, b.len, &s), 0);
	cr_expect_not(sp_spool_truncated(s));
	cr_expect_eq(s->nsymframes, 1, "the good record only");
	cr_expect(s->sym_damaged);
	char *text = dump_string(s);
	cr_expect(strstr(text, "damaged-symbols type=12 length=10\ndamaged-symbols type=12"), "%s",
		  text);
	cr_expect(strstr(text, "unknown type=99 length=3"), "%s", text);
	free(text);
	sp_spool_free(s);
	sp_buf_release(&b);
}

/* The symbolizer takes stored frames as they are, unless the options exclude their source. */
Test(spool_symrec, symbolizer_uses_stored_frames)
{
	size_t len, at;
	uint8_t *data = symbolized_bytes(&len, &at);
	struct sp_spool *s;
	cr_assert_eq(sp_spool_open_buffer(data, len, &s), 0);
	struct sp_symbolizer *sym;
	cr_assert_eq(sp_symbolizer_new(s, NULL, &sym), 0);
	const struct sp_resolved_frame *chain;
	size_t n;
	cr_assert_eq(sp_symbolizer_resolve_all(sym, 0, &chain, &n), 0);
	cr_assert_eq(n, 2);
	expect_same(&chain[0], &chain0[0]);
	expect_same(&chain[1], &chain0[1]);
	cr_assert_eq(sp_symbolizer_resolve_all(sym, 3, &chain, &n), 0);
	expect_same(&chain[0], &kframe);
	cr_assert_eq(sp_symbolizer_resolve_all(sym, 2, &chain, &n), 0);
	cr_expect_eq(chain[0].origin, SP_ORIGIN_ADDRESS_ONLY, "nothing stored: the fallback");
	struct sp_symbolizer_stats st;
	sp_symbolizer_stats(sym, &st);
	cr_expect_eq(st.frames_stored, 2);
	cr_expect_eq(st.inline_frames, 1);
	cr_expect_eq(st.kernel_frames_named, 1);
	cr_expect_eq(st.files_proven + st.files_unproven, 0, "no file opened for stored frames");
	sp_symbolizer_free(sym);

	const struct sp_resolved_frame *one;
	struct sp_symbolizer_opts o = {.no_inline = true, .no_kernel_symbols = true};
	cr_assert_eq(sp_symbolizer_new(s, &o, &sym), 0);
	cr_assert_eq(sp_symbolizer_resolve_all(sym, 0, &chain, &n), 0);
	cr_expect_eq(n, 1);
	expect_same(&chain[0], &chain0[1]);
	cr_assert_eq(sp_symbolizer_resolve(sym, 3, &one), 0);
	cr_expect_eq(one->origin, SP_ORIGIN_ADDRESS_ONLY, "--no-kernel-symbols wins");
	sp_symbolizer_free(sym);

	o = (struct sp_symbolizer_opts){.stored_symbols = SP_STORED_NONE};
	cr_assert_eq(sp_symbolizer_new(s, &o, &sym), 0);
	cr_assert_eq(sp_symbolizer_resolve(sym, 0, &one), 0);
	cr_expect_eq(one->origin, SP_ORIGIN_ADDRESS_ONLY, "stored symbols ignored");
	sp_symbolizer_free(sym);
	o = (struct sp_symbolizer_opts){.stored_symbols = SP_STORED_NONE + 1};
	cr_expect_eq(sp_symbolizer_new(s, &o, &sym), -SP_E_BAD_ARG);
	sp_spool_free(s);
	free(data);
}

/*
 * `symbolize` stores names as the symbolizer shows them, escaped (util.h), as
 * frame 0's: read back, their backslashes stay as stored, not escaped twice.
 * A raw byte a forged spool stores a name with (frame 1's) is still escaped.
 */
static const struct sp_resolved_frame escaped = {
	.name = "f\\x1b[2J\\x5cx41", .module = "m\\xe2\\x80\\xae", .file = "/s\\x07.c", .line = 3,
	.kind = SP_KIND_NATIVE, .origin = SP_ORIGIN_ELF};
static const struct sp_resolved_frame raw = {
	.name = "g\x1b[2J\\x41\xe2\x80\x8f", .module = "m\xc2\x9b", .kind = SP_KIND_NATIVE,
	.origin = SP_ORIGIN_ELF};

static void add_escaped(struct sp_symenc *e)
{
	cr_assert_eq(sp_symenc_add_frame(e, 0, &escaped, 1), 0);
	cr_assert_eq(sp_symenc_add_frame(e, 1, &raw, 1), 0);
}

Test(spool_symrec, stored_names_are_escaped_once)
{
	size_t len;
	uint8_t *data = with_symbols(add_escaped, &len, NULL);
	struct sp_spool *s;
	cr_assert_eq(sp_spool_open_buffer(data, len, &s), 0);
	struct sp_symbolizer *sym;
	cr_assert_eq(sp_symbolizer_new(s, NULL, &sym), 0);
	const struct sp_resolved_frame *one;
	cr_assert_eq(sp_symbolizer_resolve(sym, 0, &one), 0);
	expect_same(one, &escaped);
	cr_assert_eq(sp_symbolizer_resolve(sym, 1, &one), 0);
	cr_expect_str_eq(one->name, "g\\x1b[2J\\x41\\xe2\\x80\\x8f");
	cr_expect_str_eq(one->module, "m\\xc2\\x9b");
	sp_symbolizer_free(sym);
	sp_spool_free(s);
	free(data);
}

/* sp_spool_symbolize over a spool whose files do not exist: written, with every place looked. */
Test(spool_symrec, symbolize_lists_places_and_writes_atomically)
{
	struct small_ids ids;
	char in[128], out[128];
	snprintf(in, sizeof(in), "%s", tmp_path("in.spool")); /* tmp_path's buffer is shared */
	snprintf(out, sizeof(out), "%s", tmp_path("out.spool"));
	write_small(in, &ids);
	struct sp_symbolize_result r;
	struct sp_symbolizer_opts o = {.stored_symbols = SP_STORED_NAMED,
				       .kallsyms_path = tmp_path("no-kallsyms"),
				       .debug_dirs = "/nonexistent-debug"};
	cr_assert_eq(sp_spool_symbolize(in, out, &o, &r), 0);
	/* Frames used: 0 1 2 3 4 6 (5 is a marker). */
	cr_expect_eq(r.frames, 6);
	cr_expect_eq(r.frames_address_only, 6);
	cr_expect_eq(r.frames_written, 6);
	cr_expect_eq(r.kernel_frames, 1);
	bool chain4 = false;
	for (size_t i = 0; i < r.nunresolved; i++) {
		const struct sp_unresolved *u = &r.unresolved[i];
		if (strcmp(u->what, "/opt/demo/chain4"))
			continue;
		chain4 = true;
		cr_expect_eq(u->frames, 3);
		cr_expect_eq(u->build_id_len, 20);
		cr_assert_geq(u->nplaces, 3);
		cr_expect_str_eq(u->places[0], "/opt/demo/chain4");
		cr_expect_str_eq(u->places[1], "/proc/4242/map_files/555555555000-555555556000");
		cr_expect_str_eq(u->places[2], "/nonexistent-debug/.build-id/de/"
					       "adbeef000102030405060708090a0b0c0d0e0f.debug");
	}
	cr_expect(chain4, "the module file is listed");
	sp_symbolize_result_release(&r);
	struct sp_spool *s;
	cr_assert_eq(sp_spool_open(out, &s), 0);
	cr_expect_eq(s->nsymframes, 6);
	cr_expect_eq(sp_spool_sample_count(s), SMALL_NSAMPLES);
	sp_spool_free(s);

	/* In place, nothing new: the file is left alone. */
	size_t before, after;
	free(slurp(out, &before));
	cr_assert_eq(sp_spool_symbolize(out, NULL, &o, &r), 0);
	cr_expect_eq(r.frames_written, 0);
	sp_symbolize_result_release(&r);
	free(slurp(out, &after));
	cr_expect_eq(before, after);
	cr_expect_eq(sp_spool_symbolize(tmp_path("missing.spool"), NULL, &o, &r), -ENOENT);
	sp_symbolize_result_release(&r);
	cr_expect_eq(sp_spool_symbolize(in, "/nonexistent-dir/x.spool", &o, &r),
		     -ENOENT);
	sp_symbolize_result_release(&r);
}

/* A stored "truncation marker" for an ordinary frame is not believed. */
Test(spool_symrec, stored_markers_are_refused)
{
	struct sp_buf b;
	size_t n;
	uint8_t *small = small_bytes(&n, NULL);
	sp_buf_init(&b);
	cr_assert_eq(sp_buf_append(&b, small, n), 0);
	free(small);
	static const uint8_t strings[] = {1, 1, 'x'};
	put_record(&b, SP_REC_SYM_STRINGS, strings, sizeof(strings));
	/* frame 0: kind 4 (truncated), origin 0, flags 0x10, name 0, module 0 */
	static const uint8_t marker[] = {0, 1, 4, 0, 0x10, 0, 0, 0, 0, 0};
	put_record(&b, SP_REC_SYM_FRAME, marker, sizeof(marker));
	struct sp_spool *s;
	cr_assert_eq(sp_spool_open_buffer(b.data, b.len, &s), 0);
	cr_assert_eq(s->nsymframes, 1);
	struct sp_symbolizer *sym;
	cr_assert_eq(sp_symbolizer_new(s, NULL, &sym), 0);
	const struct sp_resolved_frame *f;
	cr_assert_eq(sp_symbolizer_resolve(sym, 0, &f), 0);
	cr_expect_neq(f->kind, SP_KIND_TRUNCATED);
	cr_expect_str_neq(f->name, "x");
	sp_symbolizer_free(sym);
	sp_spool_free(s);
	sp_buf_release(&b);
}
