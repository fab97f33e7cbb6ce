/* SPDX-License-Identifier: MIT */
/* Unit tests of the validating spool reader on damaged and hostile input (lib/spool/spool_reader.c). */
#include "spool_fixture.h"

TestSuite(spool_reader, .init = tmp_setup, .fini = tmp_teardown);

/* Offsets where the small spool's records end (after the header), in file order. */
static size_t record_ends(const uint8_t *data, size_t len, size_t *ends, size_t max)
{
	size_t n = 0;
	const uint8_t *p = data + SP_SPOOL_HEADER_LEN, *end = data + len;
	while (p < end) {
		uint64_t plen;
		p++;
		cr_assert_eq(sp_get_uvarint(&p, end, &plen), 0);
		p += plen;
		cr_assert_lt(n, max);
		ends[n++] = (size_t)(p - data);
	}
	return n;
}

Test(spool_reader, rejects_bad_magic)
{
	size_t len;
	uint8_t *data = small_bytes(&len, NULL);
	struct sp_spool *s = NULL;
	data[0] = 'X';
	cr_assert_eq(sp_spool_open_buffer(data, len, &s), -SP_E_SPOOL_MAGIC);
	cr_assert_null(s);
	cr_assert_eq(sp_spool_open_buffer("\x7f" "ELF", 4, &s), -SP_E_SPOOL_MAGIC);
	free(data);
}

Test(spool_reader, rejects_future_version)
{
	size_t len;
	uint8_t *data = small_bytes(&len, NULL);
	struct sp_spool *s = NULL;
	data[SP_SPOOL_MAGIC_LEN] = 2;
	cr_assert_eq(sp_spool_open_buffer(data, len, &s), -SP_E_SPOOL_VERSION);
	data[SP_SPOOL_MAGIC_LEN] = 1;
	data[SP_SPOOL_MAGIC_LEN + 1] = 1; /* 257: the high byte counts too */
	cr_assert_eq(sp_spool_open_buffer(data, len, &s), -SP_E_SPOOL_VERSION);
	data[SP_SPOOL_MAGIC_LEN] = 0;
	data[SP_SPOOL_MAGIC_LEN + 1] = 0;
	cr_assert_eq(sp_spool_open_buffer(data, len, &s), -SP_E_SPOOL_VERSION);
	cr_assert_null(s);
	free(data);
}

Test(spool_reader, rejects_truncated_header)
{
	struct sp_spool *s = NULL;
	cr_assert_eq(sp_spool_open_buffer(NULL, 0, &s), -SP_E_SPOOL_TRUNCATED);
	cr_assert_eq(sp_spool_open_buffer("SPSP", 4, &s), -SP_E_SPOOL_TRUNCATED);
	cr_assert_eq(sp_spool_open_buffer("SPSPOOL\0\1\0", 10, &s), -SP_E_SPOOL_TRUNCATED);
	cr_assert_null(s);
}

Test(spool_reader, reports_missing_file)
{
	struct sp_spool *s = NULL;
	cr_assert_eq(sp_spool_open(tmp_path("nope.spool"), &s), -ENOENT);
	cr_assert_eq(sp_spool_open(tmp_dir, &s), -EISDIR);
	cr_assert_null(s);
	sp_spool_free(NULL);
}

/*
 * Cut the small spool at every length: a cut inside the header or META is an
 * error; any later cut yields exactly the records before it, flagged
 * truncated unless the cut falls on a record boundary.
 */
Test(spool_reader, truncation_at_every_offset)
{
	size_t len;
	uint8_t *data = small_bytes(&len, NULL);
	struct sp_spool *full;
	cr_assert_eq(sp_spool_open_buffer(data, len, &full), 0);
	size_t ends[64];
	size_t nrec = record_ends(data, len, ends, 64);
	cr_assert_eq(nrec, full->nlog);

	for (size_t cut = 0; cut <= len; cut++) {
		/* A fresh allocation of exactly cut bytes lets ASan see any overread. */
		uint8_t *copy = malloc(cut ? cut : 1);
		memcpy(copy, data, cut);
		struct sp_spool *s = NULL;
		int err = sp_spool_open_buffer(copy, cut, &s);
		if (cut < ends[0]) {
			cr_assert_eq(err, -SP_E_SPOOL_TRUNCATED, "cut %zu: %d", cut, err);
			free(copy);
			continue;
		}
		cr_assert_eq(err, 0, "cut %zu: %s", cut, sp_strerror(err));
		size_t kept = 0;
		while (kept < nrec && ends[kept] <= cut)
			kept++;
		bool boundary = ends[kept - 1] == cut;
		cr_assert_eq(s->nlog, kept, "cut %zu", cut);
		cr_assert_eq(sp_spool_truncated(s), !boundary, "cut %zu", cut);
		for (size_t i = 0; i < sp_spool_sample_count(s); i++)
			cr_assert_eq(sp_spool_sample(s, i)->timestamp_ns, small_times[i]);
		cr_assert_eq(sp_spool_summary(s) != NULL, cut == len);
		check_consistent(s);
		sp_spool_free(s);
		free(copy);
	}
	sp_spool_free(full);
	free(data);
}

/* Damage every byte several ways: the reader fails cleanly or returns a consistent spool. */
Test(spool_reader, survives_single_byte_corruption)
{
	size_t len;
	uint8_t *data = small_bytes(&len, NULL);
	const uint8_t patterns[] = {0x01, 0x80, 0xff, 0x7f};
	size_t accepted = 0, rejected = 0;
	for (size_t i = 0; i < len; i++) {
		for (size_t k = 0; k <= SP_ARRAY_SIZE(patterns); k++) {
			uint8_t *copy = malloc(len);
			memcpy(copy, data, len);
			copy[i] = k < SP_ARRAY_SIZE(patterns) ? copy[i] ^ patterns[k] : 0;
			struct sp_spool *s = NULL;
			int err = sp_spool_open_buffer(copy, len, &s);
			if (err) {
				cr_assert(err == -SP_E_SPOOL_CORRUPT || err == -SP_E_SPOOL_MAGIC ||
						  err == -SP_E_SPOOL_VERSION || err == -SP_E_SPOOL_TRUNCATED,
					  "byte %zu: unexpected %d", i, err);
				cr_assert_null(s);
				rejected++;
			} else {
				check_consistent(s);
				sp_spool_free(s);
				accepted++;
			}
			free(copy);
		}
	}
	cr_log_info("corruptions accepted %zu, rejected %zu", accepted, rejected);
	cr_assert_gt(rejected, 0);
	free(data);
}

Test(spool_reader, bounds_huge_claimed_lengths)
{
	struct sp_buf b;
	struct sp_spool *s;
	empty_prefix(&b);
	size_t base = b.len;

	/* A record length near 2^63 is a cut tail, not an allocation. */
	uint8_t huge[] = {SP_REC_MODULE, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f};
	cr_assert_eq(sp_buf_append(&b, huge, sizeof(huge)), 0);
	cr_assert_eq(sp_spool_open_buffer(b.data, b.len, &s), 0);
	cr_assert(sp_spool_truncated(s));
	cr_assert_eq(s->nlog, 1);
	sp_spool_free(s);

	/* A length varint that never ends (11 continuation bytes). */
	b.len = base;
	uint8_t endless[12] = {SP_REC_SAMPLE};
	memset(endless + 1, 0x80, 11);
	cr_assert_eq(sp_buf_append(&b, endless, sizeof(endless)), 0);
	cr_assert_eq(sp_spool_open_buffer(b.data, b.len, &s), 0);
	cr_assert(sp_spool_truncated(s));
	sp_spool_free(s);

	/* A path claiming 2^40 bytes inside an 18-byte payload, then a valid record. */
	b.len = base;
	struct sp_buf p;
	sp_buf_init(&p);
	for (int i = 0; i < 11; i++) /* pid .. flags */
		cr_assert_eq(sp_buf_put_uvarint(&p, 0), 0);
	cr_assert_eq(sp_buf_put_uvarint(&p, 0), 0); /* build-id length */
	cr_assert_eq(sp_buf_put_uvarint(&p, 1ull << 40), 0);
	put_record(&b, SP_REC_MODULE, p.data, p.len);
	size_t after_module = b.len;
	put_record(&b, SP_REC_LOST, "\x01\x02", 2);
	cr_assert_eq(sp_spool_open_buffer(b.data, b.len, &s), -SP_E_SPOOL_CORRUPT);
	/* The same record last in the file reads as a torn tail. */
	cr_assert_eq(sp_spool_open_buffer(b.data, after_module, &s), 0);
	cr_assert(sp_spool_truncated(s));
	cr_assert_eq(sp_spool_module_count(s), 0);
	sp_spool_free(s);

	/* A build-id longer than SP_BUILD_ID_MAX. */
	b.len = base;
	p.len = 0;
	for (int i = 0; i < 11; i++)
		cr_assert_eq(sp_buf_put_uvarint(&p, 0), 0);
	cr_assert_eq(sp_buf_put_uvarint(&p, 33), 0);
	for (int i = 0; i < 34; i++)
		cr_assert_eq(sp_buf_put_uvarint(&p, 0), 0);
	put_record(&b, SP_REC_MODULE, p.data, p.len);
	put_record(&b, SP_REC_LOST, "\x01\x02", 2);
	cr_assert_eq(sp_spool_open_buffer(b.data, b.len, &s), -SP_E_SPOOL_CORRUPT);

	/* A summary claiming 2^60 stop reasons: read until the payload ends, then refuse. */
	b.len = base;
	p.len = 0;
	for (int i = 0; i < 11; i++)
		cr_assert_eq(sp_buf_put_uvarint(&p, 0), 0);
	cr_assert_eq(sp_buf_put_uvarint(&p, 1ull << 60), 0);
	cr_assert_eq(sp_buf_put_uvarint(&p, 5), 0);
	put_record(&b, SP_REC_SUMMARY, p.data, p.len);
	put_record(&b, SP_REC_LOST, "\x01\x02", 2);
	cr_assert_eq(sp_spool_open_buffer(b.data, b.len, &s), -SP_E_SPOOL_CORRUPT);

	sp_buf_release(&p);
	sp_buf_release(&b);
}

/* Each payload references something that does not exist (after one thread, no frames). */
Test(spool_reader, rejects_dangling_references)
{
	static const struct {
		uint8_t type;
		const char *payload;
		size_t len;
		const char *what;
	} cases[] = {
		{SP_REC_STACK, "\x01\x00", 2, "stack frame 0 before any frame"},
		{SP_REC_FRAME, "\x01\x00\x10\x00", 4, "frame in module 0 before any module"},
		{SP_REC_FRAME, "\x00\x03\x10\x00", 4, "frame mode 3"},
		{SP_REC_MODULE, "\x00\x00\x10\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01x\x01", 15,
		 "module of the same bytes as module 0, before any module"},
		{SP_REC_SAMPLE, "\x01\x00\x00", 3, "sample of thread 1"},
		{SP_REC_SAMPLE, "\x00\x01\x00", 3, "sample of stack 1"},
		{SP_REC_THREAD_NAME, "\x05\x01x", 3, "name of thread 5"},
		{SP_REC_THREAD, "\x80\x80\x80\x80\x10\x00", 6, "pid beyond 32 bits"},
		{SP_REC_THREAD_NAME, "\x00\x03x\0y", 5, "name with a NUL byte"},
		{SP_REC_META, "", 0, "a second META"},
		{SP_REC_INVALID, "\x01", 1, "record type 0"},
	};
	for (size_t i = 0; i < SP_ARRAY_SIZE(cases); i++) {
		struct sp_buf b;
		struct sp_spool *s = NULL;
		empty_prefix(&b);
		put_record(&b, SP_REC_THREAD, "\x02\x02", 2);
		put_record(&b, cases[i].type, cases[i].payload, cases[i].len);
		size_t bad_end = b.len;
		put_record(&b, SP_REC_LOST, "\x01\x02", 2);
		cr_assert_eq(sp_spool_open_buffer(b.data, b.len, &s), -SP_E_SPOOL_CORRUPT, "%s",
			     cases[i].what);
		cr_assert_eq(sp_spool_open_buffer(b.data, bad_end, &s), 0, "%s", cases[i].what);
		cr_assert(sp_spool_truncated(s), "%s", cases[i].what);
		cr_assert_eq(s->nlog, 2, "%s", cases[i].what);
		sp_spool_free(s);
		sp_buf_release(&b);
	}
}

Test(spool_reader, stack_parent_must_be_older)
{
	struct sp_buf b;
	struct sp_spool *s = NULL;
	empty_prefix(&b);
	put_record(&b, SP_REC_FRAME, "\x00\x00\x10\x00", 4);
	put_record(&b, SP_REC_STACK, "\x01\x00", 2); /* node 1, parent 0 */
	put_record(&b, SP_REC_STACK, "\x01\x00", 2); /* node 2, parent 1 */
	size_t good = b.len;
	put_record(&b, SP_REC_STACK, "\x00\x00", 2); /* node 3, parent 3: a cycle */
	put_record(&b, SP_REC_LOST, "\x01\x02", 2);
	cr_assert_eq(sp_spool_open_buffer(b.data, b.len, &s), -SP_E_SPOOL_CORRUPT);
	b.len = good;
	put_record(&b, SP_REC_STACK, "\x04\x00", 2); /* node 3, parent -1 */
	put_record(&b, SP_REC_LOST, "\x01\x02", 2);
	cr_assert_eq(sp_spool_open_buffer(b.data, b.len, &s), -SP_E_SPOOL_CORRUPT);
	b.len = good;
	put_record(&b, SP_REC_STACK, "\x03\x00", 2); /* node 3, parent 0: fine */
	cr_assert_eq(sp_spool_open_buffer(b.data, b.len, &s), 0);
	cr_assert_eq(sp_spool_stack_count(s), 4);
	cr_assert_eq(sp_spool_stack_depth(s, 2), 2);
	cr_assert_eq(sp_spool_stack_parent(s, 3), 0);
	sp_spool_free(s);
	sp_buf_release(&b);
}

Test(spool_reader, skips_unknown_record_types)
{
	struct sp_buf b;
	struct sp_spool *s = NULL;
	empty_prefix(&b);
	put_record(&b, 200, "abc", 3);
	put_record(&b, SP_REC_THREAD, "\x02\x02", 2);
	put_record(&b, SP_REC_LAST_ + 1, "", 0);
	put_record(&b, SP_REC_SAMPLE, "\x00\x00\x02", 3);
	cr_assert_eq(sp_spool_open_buffer(b.data, b.len, &s), 0);
	cr_assert_not(sp_spool_truncated(s));
	cr_assert_eq(sp_spool_thread_count(s), 1);
	cr_assert_eq(sp_spool_sample_count(s), 1);
	cr_assert_eq(s->nunknowns, 2);
	char *text = dump_string(s);
	cr_assert(strstr(text, "\nunknown type=200 length=3\nthread index=0 pid=1 tid=1\n"
			       "unknown type=17 length=0\nsample "), "%s", text);
	free(text);
	sp_spool_free(s);
	sp_buf_release(&b);
}

Test(spool_reader, owner_records_say_who_a_process_runs_as)
{
	struct sp_buf b;
	struct sp_spool *s = NULL;
	empty_prefix(&b);
	/* time 5, pid 7 (zigzag 14), uid 1000; then pid 7 again as root (a setuid exec). */
	put_record(&b, SP_REC_OWNER, "\x05\x0e\xe8\x07", 4);
	put_record(&b, SP_REC_OWNER, "\x09\x10\xe8\x07", 4);
	put_record(&b, SP_REC_OWNER, "\x0a\x0e\x00", 3);
	cr_assert_eq(sp_spool_open_buffer(b.data, b.len, &s), 0);
	cr_assert_eq(sp_spool_owner_count(s), 3);
	uint32_t uid = 99;
	cr_expect_eq(sp_spool_process_uid(s, 7, &uid), 0);
	cr_expect_eq(uid, 0, "the latest record holds");
	cr_expect_eq(sp_spool_process_uid(s, 8, &uid), 0);
	cr_expect_eq(uid, 1000);
	cr_expect_eq(sp_spool_process_uid(s, 9, &uid), -ENOENT);
	char *text = dump_string(s);
	cr_expect(strstr(text, "\nowner pid=7 uid=1000 time_ns=5\n"), "%s", text);
	free(text);
	sp_spool_free(s);
	/* A uid past 32 bits is corrupt (here the last record: a torn tail). */
	put_record(&b, SP_REC_OWNER, "\x01\x0e\x80\x80\x80\x80\x10", 7);
	cr_assert_eq(sp_spool_open_buffer(b.data, b.len, &s), 0);
	cr_expect(sp_spool_truncated(s));
	cr_expect_eq(sp_spool_owner_count(s), 3);
	sp_spool_free(s);
	sp_buf_release(&b);
}

Test(spool_reader, ignores_fields_appended_by_later_versions)
{
	struct sp_buf b;
	struct sp_spool *s = NULL;
	empty_prefix(&b);
	put_record(&b, SP_REC_THREAD, "\x02\x04\x99\x01\x02", 5);
	put_record(&b, SP_REC_LOST, "\x09\x02\x00", 3);
	cr_assert_eq(sp_spool_open_buffer(b.data, b.len, &s), 0);
	cr_assert_eq(sp_spool_thread(s, 0)->tid, 2);
	cr_assert_eq(sp_spool_lost_total(s), 9);
	sp_spool_free(s);
	sp_buf_release(&b);
}

Test(spool_reader, zero_filled_tail_is_truncated)
{
	struct sp_buf b;
	struct sp_spool *s = NULL;
	empty_prefix(&b);
	put_record(&b, SP_REC_THREAD, "\x02\x02", 2);
	uint8_t zeros[4096] = {0};
	cr_assert_eq(sp_buf_append(&b, zeros, sizeof(zeros)), 0);
	cr_assert_eq(sp_spool_open_buffer(b.data, b.len, &s), 0);
	cr_assert(sp_spool_truncated(s));
	cr_assert_eq(sp_spool_thread_count(s), 1);
	sp_spool_free(s);
	/* Zeros followed by data are damage in the middle, not a tail. */
	put_record(&b, SP_REC_THREAD, "\x02\x02", 2);
	cr_assert_eq(sp_spool_open_buffer(b.data, b.len, &s), -SP_E_SPOOL_CORRUPT);
	sp_buf_release(&b);
}

Test(spool_reader, lost_total_saturates)
{
	struct sp_buf b, p;
	struct sp_spool *s = NULL;
	empty_prefix(&b);
	sp_buf_init(&p);
	cr_assert_eq(sp_buf_put_uvarint(&p, UINT64_MAX - 1), 0);
	cr_assert_eq(sp_buf_put_uvarint(&p, 0), 0);
	put_record(&b, SP_REC_LOST, p.data, p.len);
	put_record(&b, SP_REC_LOST, p.data, p.len);
	cr_assert_eq(sp_spool_open_buffer(b.data, b.len, &s), 0);
	cr_assert_eq(sp_spool_lost_total(s), UINT64_MAX);
	sp_spool_free(s);
	sp_buf_release(&p);
	sp_buf_release(&b);
}

/* A spool written before the summary carried code_frames still reads, with 0 there. */
Test(spool_reader, reads_summary_without_code_frames)
{
	struct sp_spool *s;
	cr_assert_eq(sp_spool_open(fixture_path("small-before-code-frames.spool"), &s), 0);
	const struct sp_summary *sum = sp_spool_summary(s);
	cr_assert_not_null(sum);
	cr_assert_eq(sum->samples, 4);
	cr_assert_eq(sum->ignored_user_callchain_frames, 9);
	cr_assert_eq(sum->code_frames, 0);
	sp_spool_free(s);
}

/* A spool written before the summary carried fp_frames still reads, with 0 there. */
Test(spool_reader, reads_summary_without_fp_frames)
{
	struct sp_spool *s;
	cr_assert_eq(sp_spool_open(fixture_path("small-before-fp-frames.spool"), &s), 0);
	const struct sp_summary *sum = sp_spool_summary(s);
	cr_assert_not_null(sum);
	cr_assert_eq(sum->samples, 4);
	cr_assert_eq(sum->fp_frames, 0);
	sp_spool_free(s);
}
