/* SPDX-License-Identifier: MIT */
/* Unit tests of following a spool as it grows (lib/spool/spool_tail.c). */
#include <sys/file.h>

#include "spool_fixture.h"

TestSuite(tail, .init = tmp_setup, .fini = tmp_teardown);

/* What a reader of the whole prefix keeps: the records that lie whole in it. */
struct counts {
	size_t samples, modules, frames, stacks, threads, execs;
};

static struct counts counts_of(const struct sp_spool *s)
{
	return (struct counts){sp_spool_sample_count(s), sp_spool_module_count(s),
			       sp_spool_frame_count(s), sp_spool_stack_count(s),
			       sp_spool_thread_count(s), sp_spool_exec_count(s)};
}

static void append(int fd, const uint8_t *p, size_t n)
{
	cr_assert_eq(write(fd, p, n), (ssize_t)n);
}

/*
 * The small spool's bytes arrive a few at a time, cutting records anywhere:
 * after every poll the tail holds exactly the whole records written so far
 * (what sp_spool_open_buffer keeps of that prefix), each batch's ranges
 * continue the last one's, and the end is the whole spool, finished.
 */
Test(tail, batches_never_split_a_record)
{
	size_t len;
	uint8_t *data = small_bytes(&len, NULL);
	for (size_t step = 1; step <= 37; step += 6) {
		const char *path = tmp_path("grow.spool");
		unlink(path);
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		cr_assert_geq(fd, 0);
		struct sp_tail *t;
		cr_assert_eq(sp_tail_open(path, &t), 0);
		cr_assert_null(sp_tail_spool(t), "no spool before the header");
		struct counts seen = {0};
		size_t stacks_seen = 1;
		for (size_t off = 0; off < len;) {
			size_t n = len - off < step ? len - off : step;
			append(fd, data + off, n);
			off += n;
			struct sp_tail_batch b;
			int err = sp_tail_poll(t, &b);
			if (off < SP_SPOOL_HEADER_LEN + 2) {
				cr_assert(err == 0 || err == -SP_E_SPOOL_TRUNCATED, "step %zu: %s", step,
					  sp_strerror(err));
				continue;
			}
			struct sp_spool *prefix;
			if (sp_spool_open_buffer(data, off, &prefix))
				continue; /* not even the META record yet */
			cr_assert_eq(err, 0, "step %zu at %zu: %s", step, off, sp_strerror(err));
			const struct sp_spool *s = sp_tail_spool(t);
			cr_assert_not_null(s);
			struct counts want = counts_of(prefix), got = counts_of(s);
			cr_assert_eq(memcmp(&want, &got, sizeof(want)), 0,
				     "step %zu at byte %zu: the tail holds other records than the prefix",
				     step, off);
			cr_assert_eq(b.first_sample, seen.samples);
			cr_assert_eq(b.end_sample, got.samples);
			cr_assert_eq(b.first_module, seen.modules);
			cr_assert_eq(b.first_frame, seen.frames);
			cr_assert_eq(b.first_stack, stacks_seen);
			cr_assert_eq(b.end_stack, got.stacks);
			cr_assert_eq(b.first_thread, seen.threads);
			cr_assert_eq(b.first_exec, seen.execs);
			cr_assert_eq(b.finished, off == len, "finished only with the trailer");
			cr_assert_not(b.has_more);
			seen = got;
			stacks_seen = got.stacks;
			sp_spool_free(prefix);
		}
		struct sp_spool *whole;
		cr_assert_eq(sp_spool_open(path, &whole), 0);
		struct counts a = counts_of(whole), c = counts_of(sp_tail_spool(t));
		cr_assert_eq(memcmp(&a, &c, sizeof(a)), 0);
		for (size_t i = 0; i < a.samples; i++) {
			const struct sp_sample *x = sp_spool_sample(whole, i), *y = sp_spool_sample(sp_tail_spool(t), i);
			cr_assert_eq(x->timestamp_ns, y->timestamp_ns);
			cr_assert_eq(x->stack_id, y->stack_id);
			cr_assert_eq(x->thread, y->thread);
		}
		sp_spool_free(whole);
		sp_tail_free(t);
		close(fd);
	}
	free(data);
}

/* A complete record that is corrupt is an error, not something to wait for; what came before stays. */
Test(tail, a_corrupt_whole_record_is_an_error)
{
	size_t len;
	uint8_t *data = small_bytes(&len, NULL);
	const char *path = tmp_path("bad.spool");
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	append(fd, data, len);
	/* a STACK record naming a frame that does not exist */
	static const uint8_t bad[] = {SP_REC_STACK, 2, 0x00, 0x7f};
	append(fd, bad, sizeof(bad));
	close(fd);
	struct sp_tail *t;
	struct sp_tail_batch b;
	cr_assert_eq(sp_tail_open(path, &t), 0);
	cr_assert_eq(sp_tail_poll(t, &b), -SP_E_SPOOL_CORRUPT);
	cr_assert_eq(sp_spool_sample_count(sp_tail_spool(t)), 4, "the records before it are kept");
	sp_tail_free(t);
	free(data);
}

/* The writer holds its lock until the spool is closed. */
Test(tail, a_spool_being_written_is_growing)
{
	const char *path = tmp_path("live.spool");
	struct sp_spool_writer *w;
	cr_assert_eq(sp_spool_writer_open(path, &small_meta, &w), 0);
	cr_assert(sp_spool_is_growing(path));
	struct sp_summary sum = {0};
	cr_assert_eq(sp_spool_writer_finish(w, &sum), 0);
	cr_assert_not(sp_spool_is_growing(path));
	sp_spool_writer_free(w);
	cr_assert_not(sp_spool_is_growing(tmp_path("absent.spool")));
}

/* Images handed over are the tail's: one per module, a later one replaces an earlier. */
Test(tail, images_by_module)
{
	size_t len;
	uint8_t *data = small_bytes(&len, NULL);
	free(data);
	struct sp_tail *t;
	cr_assert_eq(sp_tail_open(tmp_path("small.spool"), &t), 0);
	cr_assert_eq(sp_tail_image_fd(t, 3), -1);
	int a = open("/proc/self/exe", O_RDONLY | O_CLOEXEC), b = dup(a);
	cr_assert_eq(sp_tail_put_image(t, 40, a), 0);
	cr_assert_eq(sp_tail_image_fd(t, 40), a);
	cr_assert_eq(sp_tail_put_image(t, 40, b), 0);
	cr_assert_eq(sp_tail_image_fd(t, 40), b);
	cr_assert_eq(fcntl(a, F_GETFD), -1, "the replaced image was closed");
	sp_tail_free(t);
	cr_assert_eq(fcntl(b, F_GETFD), -1, "freed with the tail");
}
