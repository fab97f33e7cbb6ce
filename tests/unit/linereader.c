/* SPDX-License-Identifier: MIT */
/* Unit tests of the bounded line reader: long lines skipped whole, byte limit, last lines. */
#include <criterion/criterion.h>

#include "util/util.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int pipe_of(const char *text, size_t len)
{
	/* A pipe hands data over in whatever pieces it likes, as /proc files do. */
	int fds[2];
	cr_assert_eq(pipe(fds), 0);
	cr_assert_leq(len, 60000, "keep fixtures within the pipe buffer");
	cr_assert_eq(write(fds[1], text, len), (ssize_t)len);
	close(fds[1]);
	return fds[0];
}

struct got {
	char text[64];
	size_t len;
	unsigned flags;
};

/* Read every line; returns how many, at most max. */
static size_t read_all(const char *text, size_t len, size_t max_line, uint64_t max_bytes,
		       struct got *out, size_t max, bool *limited)
{
	int fd = pipe_of(text, len);
	struct sp_line_reader r;
	cr_assert_eq(sp_line_reader_init(&r, fd, max_line, max_bytes), 0);
	size_t n = 0;
	const char *line;
	size_t l;
	unsigned flags;
	int rc;
	while ((rc = sp_line_reader_next(&r, &line, &l, &flags)) == 1) {
		cr_assert_lt(n, max);
		cr_assert_leq(l, max_line);
		snprintf(out[n].text, sizeof(out[n].text), "%.*s", (int)l, line);
		out[n].len = l;
		out[n].flags = flags;
		n++;
	}
	cr_assert_eq(rc, 0);
	*limited = r.limited;
	sp_line_reader_release(&r);
	close(fd);
	return n;
}

Test(linereader, splits_lines_and_reports_the_last_one_unterminated)
{
	struct got g[8];
	bool limited;
	const char text[] = "one\n\nthree\nlast";
	size_t n = read_all(text, sizeof(text) - 1, 16, 0, g, 8, &limited);
	cr_assert_eq(n, 4);
	cr_expect_str_eq(g[0].text, "one");
	cr_expect_eq(g[1].len, 0);
	cr_expect_eq(g[1].flags, 0);
	cr_expect_str_eq(g[2].text, "three");
	cr_expect_str_eq(g[3].text, "last");
	cr_expect_eq(g[3].flags, SP_LINE_UNTERMINATED);
	cr_expect_not(limited);
}

Test(linereader, long_lines_are_skipped_whole)
{
	char text[300000];
	size_t len = (size_t)sprintf(text, "short\n");
	memset(text + len, 'x', 200000);
	len += 200000;
	len += (size_t)sprintf(text + len, "\nexactly8\nnine12345\nend\n");
	int fd[2];
	cr_assert_eq(pipe(fd), 0);
	/* Larger than a pipe buffer: a writer child feeds it. */
	pid_t child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		close(fd[0]);
		ssize_t k = write(fd[1], text, len);
		_exit(k == (ssize_t)len ? 0 : 1);
	}
	close(fd[1]);
	struct sp_line_reader r;
	cr_assert_eq(sp_line_reader_init(&r, fd[0], 8, 0), 0);
	const char *line;
	size_t l;
	unsigned flags;
	const char *want[] = {"short", "", "exactly8", "", "end"};
	unsigned want_flags[] = {0, SP_LINE_TOO_LONG, 0, SP_LINE_TOO_LONG, 0};
	for (size_t i = 0; i < 5; i++) {
		cr_assert_eq(sp_line_reader_next(&r, &line, &l, &flags), 1);
		cr_expect_eq(flags, want_flags[i], "line %zu", i);
		cr_expect_eq(l, strlen(want[i]), "line %zu", i);
		cr_expect_eq(memcmp(line, want[i], l), 0);
	}
	cr_expect_eq(sp_line_reader_next(&r, &line, &l, &flags), 0);
	sp_line_reader_release(&r);
	close(fd[0]);
	int status;
	cr_assert_eq(waitpid(child, &status, 0), child);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

Test(linereader, the_byte_limit_drops_the_line_it_cuts)
{
	struct got g[8];
	bool limited;
	const char text[] = "aaaa\nbbbb\ncccc\n";
	size_t n = read_all(text, sizeof(text) - 1, 16, 12, g, 8, &limited);
	cr_expect_eq(n, 2);
	cr_expect(limited);
	/* Exactly the file's size is no limit at all. */
	n = read_all(text, sizeof(text) - 1, 16, sizeof(text) - 1, g, 8, &limited);
	cr_expect_eq(n, 3);
	cr_expect_not(limited);
}

Test(linereader, lines_may_hold_nul_bytes)
{
	struct got g[4];
	bool limited;
	const char text[] = "a\0b\n";
	size_t n = read_all(text, sizeof(text) - 1, 16, 0, g, 4, &limited);
	cr_assert_eq(n, 1);
	cr_expect_eq(g[0].len, 3);
}
