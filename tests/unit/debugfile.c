/* SPDX-License-Identifier: MIT */
/* Unit tests of the separate debug file search: where it looks, in what order, what it refuses. */
#include <criterion/criterion.h>

#include "symbols/symbols.h"

#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

static char dir[64];
static char self_path[PATH_MAX];
static uint8_t self_id[SP_BUILD_ID_MAX];
static size_t self_id_len;
static char hex[2 * SP_BUILD_ID_MAX + 1];

static void setup(void)
{
	strcpy(dir, "/tmp/sp-debugfile-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	ssize_t n = readlink("/proc/self/exe", self_path, sizeof(self_path) - 1);
	cr_assert_gt(n, 0);
	self_path[n] = '\0';
	sp_elf_init();
	int fd = open(self_path, O_RDONLY);
	cr_assert_geq(fd, 0);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	cr_assert_not_null(elf);
	self_id_len = sp_elf_build_id(elf, self_id, sizeof(self_id));
	cr_assert_gt(self_id_len, 0, "test binary has no build-id");
	elf_end(elf);
	close(fd);
	for (size_t i = 0; i < self_id_len; i++)
		snprintf(hex + 2 * i, 3, "%02x", self_id[i]);
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(p);
}

static void teardown(void)
{
	nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

TestSuite(debugfile, .init = setup, .fini = teardown);

/* Make every directory of path's parent, like mkdir -p. */
static void make_parents(const char *path)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s", path);
	for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		mkdir(p, 0700);
		*s = '/';
	}
}

/* Copy src to dir/rel; returns the new path (static storage, two in turn). */
static const char *copy_to(const char *src, const char *rel)
{
	static char out[2][PATH_MAX];
	static int which;
	char *dst = out[which++ & 1];
	snprintf(dst, PATH_MAX, "%s/%s", dir, rel);
	make_parents(dst);
	FILE *in = fopen(src, "rb"), *o = fopen(dst, "wb");
	cr_assert(in && o, "cannot copy '%s' to '%s'", src, dst);
	char buf[65536];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		cr_assert_eq(fwrite(buf, 1, n, o), n);
	fclose(in);
	cr_assert_eq(fclose(o), 0);
	return dst;
}

static const char *write_to(const char *rel, const char *text)
{
	static char dst[PATH_MAX];
	snprintf(dst, sizeof(dst), "%s/%s", dir, rel);
	make_parents(dst);
	FILE *o = fopen(dst, "w");
	cr_assert_not_null(o);
	fputs(text, o);
	cr_assert_eq(fclose(o), 0);
	return dst;
}

/* An ELF file with another build-id than this test binary's. */
static const char *other_elf(void)
{
	return access("/bin/true", R_OK) == 0 ? "/bin/true" : "/usr/bin/true";
}

static struct sp_debug_query self_query(const char *dirs)
{
	return (struct sp_debug_query){.path = self_path, .build_id = self_id,
				       .build_id_len = self_id_len, .dirs = dirs};
}

Test(debugfile, build_id_tree_in_a_user_directory)
{
	char rel[128];
	snprintf(rel, sizeof(rel), "dbg/.build-id/%.2s/%s.debug", hex, hex + 2);
	const char *want = copy_to(self_path, rel);
	char dirs[128];
	snprintf(dirs, sizeof(dirs), "/nonexistent:%s/dbg", dir);
	struct sp_debug_query q = self_query(dirs);
	struct sp_debug_found f;
	cr_assert_eq(sp_debug_file_find(&q, &f), 0);
	cr_expect_geq(f.fd, 0);
	cr_expect_str_eq(f.path, want);
	cr_expect_eq(f.mismatched, 0);
	cr_expect_null(f.first_mismatch);
	sp_debug_found_release(&f);
	cr_expect_eq(f.fd, -1);
}

Test(debugfile, another_build_id_is_refused_and_counted)
{
	char rel[128];
	snprintf(rel, sizeof(rel), "dbg/.build-id/%.2s/%s.debug", hex, hex + 2);
	const char *wrong = copy_to(other_elf(), rel);
	char dirs[128];
	snprintf(dirs, sizeof(dirs), "%s/dbg", dir);
	struct sp_debug_query q = self_query(dirs);
	q.debuglink = "prog.debug";
	write_to("dbg/prog.debug", "not an ELF file at all\n");
	struct sp_debug_found f;
	cr_assert_eq(sp_debug_file_find(&q, &f), 0);
	cr_expect_eq(f.fd, -1);
	cr_expect_null(f.path);
	cr_expect_eq(f.mismatched, 2);
	cr_expect_str_eq(f.first_mismatch, wrong);
	sp_debug_found_release(&f);
}

Test(debugfile, a_refused_candidate_does_not_stop_the_search)
{
	char rel[128];
	snprintf(rel, sizeof(rel), "dbg/.build-id/%.2s/%s.debug", hex, hex + 2);
	copy_to(other_elf(), rel);
	const char *good = copy_to(self_path, "dbg/prog.debug");
	char dirs[128];
	snprintf(dirs, sizeof(dirs), "%s/dbg", dir);
	struct sp_debug_query q = self_query(dirs);
	q.debuglink = "prog.debug";
	struct sp_debug_found f;
	cr_assert_eq(sp_debug_file_find(&q, &f), 0);
	cr_expect_str_eq(f.path, good);
	cr_expect_eq(f.mismatched, 1);
	sp_debug_found_release(&f);
}

Test(debugfile, debug_link_under_the_file_directory_layout)
{
	/* DIR/FILEDIR/LINK: the /usr/lib/debug/usr/bin/prog.debug layout. */
	char rel[PATH_MAX];
	char *slash = strrchr(self_path, '/');
	snprintf(rel, sizeof(rel), "root%.*s/prog.debug", (int)(slash - self_path), self_path);
	const char *want = copy_to(self_path, rel);
	char dirs[128];
	snprintf(dirs, sizeof(dirs), "%s/root", dir);
	struct sp_debug_query q = self_query(dirs);
	q.debuglink = "prog.debug";
	struct sp_debug_found f;
	cr_assert_eq(sp_debug_file_find(&q, &f), 0);
	cr_expect_str_eq(f.path, want);
	sp_debug_found_release(&f);
}

Test(debugfile, beside_the_file_and_in_its_debug_directory)
{
	/* The module file is a copy in dir; its debug file sits in dir/.debug. */
	char prog[PATH_MAX];
	snprintf(prog, sizeof(prog), "%s", copy_to(self_path, "bin/prog"));
	const char *want = copy_to(self_path, "bin/.debug/prog.debug");
	struct sp_debug_query q = self_query(NULL);
	q.path = prog;
	q.debuglink = "prog.debug";
	struct sp_debug_found f;
	cr_assert_eq(sp_debug_file_find(&q, &f), 0);
	cr_expect_str_eq(f.path, want);
	sp_debug_found_release(&f);

	/* Beside it wins over .debug/. */
	want = copy_to(self_path, "bin/prog.debug");
	cr_assert_eq(sp_debug_file_find(&q, &f), 0);
	cr_expect_str_eq(f.path, want);
	sp_debug_found_release(&f);
}

Test(debugfile, a_link_naming_the_file_itself_or_another_directory_is_skipped)
{
	char prog[PATH_MAX];
	snprintf(prog, sizeof(prog), "%s", copy_to(self_path, "bin/prog"));
	struct sp_debug_query q = self_query(NULL);
	q.path = prog;
	q.debuglink = "prog"; /* the file itself: not its own debug file, and not refused */
	struct sp_debug_found f;
	cr_assert_eq(sp_debug_file_find(&q, &f), 0);
	cr_expect_eq(f.fd, -1);
	cr_expect_eq(f.mismatched, 0);
	sp_debug_found_release(&f);

	copy_to(self_path, "elsewhere/prog.debug");
	q.debuglink = "../elsewhere/prog.debug";
	cr_assert_eq(sp_debug_file_find(&q, &f), 0);
	cr_expect_eq(f.fd, -1, "a link with a '/' was followed to '%s'", f.path);
	sp_debug_found_release(&f);
}

static uint32_t crc_of(const char *path)
{
	FILE *in = fopen(path, "rb");
	cr_assert_not_null(in);
	uLong crc = crc32(0L, Z_NULL, 0);
	unsigned char buf[65536];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		crc = crc32(crc, buf, (uInt)n);
	fclose(in);
	return (uint32_t)crc;
}

Test(debugfile, without_a_build_id_the_link_crc_decides)
{
	const char *dbg = write_to("dbg/prog.debug", "stands for a debug file\n");
	char dirs[128];
	snprintf(dirs, sizeof(dirs), "%s/dbg", dir);
	struct sp_debug_query q = {.path = self_path, .debuglink = "prog.debug",
				   .debuglink_crc = crc_of(dbg), .dirs = dirs};
	struct sp_debug_found f;
	cr_assert_eq(sp_debug_file_find(&q, &f), 0);
	cr_expect_str_eq(f.path, dbg);
	sp_debug_found_release(&f);

	q.debuglink_crc ^= 1;
	cr_assert_eq(sp_debug_file_find(&q, &f), 0);
	cr_expect_eq(f.fd, -1);
	cr_expect_eq(f.mismatched, 1);
	sp_debug_found_release(&f);
}

Test(debugfile, nothing_to_look_for)
{
	struct sp_debug_query q = {.path = self_path};
	struct sp_debug_found f;
	cr_assert_eq(sp_debug_file_find(&q, &f), 0);
	cr_expect_eq(f.fd, -1);
	cr_expect_eq(f.mismatched, 0);
	sp_debug_found_release(&f);
}

/* A query without a build-id for dir/dbg/prog.debug, proven by the CRC of crc_file. */
static struct sp_debug_query crc_query(const char *dirs, const char *crc_file)
{
	return (struct sp_debug_query){.path = self_path, .debuglink = "prog.debug",
				       .debuglink_crc = crc_of(crc_file), .dirs = dirs};
}

Test(debugfile, a_symlinked_link_candidate_is_refused_unopened)
{
	/* The CRC would match: the symlink alone is refused, and counted. */
	const char *secret = write_to("secret.txt", "not a debug file\n");
	cr_assert_eq(chmod(secret, 0600), 0);
	char link[PATH_MAX], dirs[128];
	snprintf(link, sizeof(link), "%s/dbg/prog.debug", dir);
	make_parents(link);
	cr_assert_eq(symlink(secret, link), 0);
	snprintf(dirs, sizeof(dirs), "%s/dbg", dir);
	struct sp_debug_query q = crc_query(dirs, secret);
	struct sp_debug_found f;
	cr_assert_eq(sp_debug_file_find(&q, &f), 0);
	cr_expect_eq(f.fd, -1, "the symlink was followed to '%s'", f.path);
	cr_expect_eq(f.mismatched, 1);
	cr_expect_str_eq(f.first_mismatch, link);
	sp_debug_found_release(&f);
	cr_expect_eq(sp_debug_file_open(&q, link), -1);
}

Test(debugfile, a_symlinked_directory_beside_the_module_is_refused)
{
	/* bin/.debug -> elsewhere: what the module's owner links to is not followed. */
	char prog[PATH_MAX], debug_dir[PATH_MAX], elsewhere[PATH_MAX];
	snprintf(prog, sizeof(prog), "%s", copy_to(self_path, "bin/prog"));
	const char *dbg = write_to("elsewhere/prog.debug", "stands for a debug file\n");
	snprintf(elsewhere, sizeof(elsewhere), "%s/elsewhere", dir);
	snprintf(debug_dir, sizeof(debug_dir), "%s/bin/.debug", dir);
	cr_assert_eq(symlink(elsewhere, debug_dir), 0);
	struct sp_debug_query q = crc_query(NULL, dbg);
	q.path = prog;
	struct sp_debug_found f;
	cr_assert_eq(sp_debug_file_find(&q, &f), 0);
	cr_expect_eq(f.fd, -1, "followed bin/.debug to '%s'", f.path);
	cr_expect_eq(f.mismatched, 1);
	sp_debug_found_release(&f);
}

Test(debugfile, a_build_id_tree_entry_may_be_a_symlink)
{
	/* Fedora's layout: .build-id/xx/rest.debug links to the debug file elsewhere. */
	char target[PATH_MAX], rel[128], link[PATH_MAX], dirs[128];
	snprintf(target, sizeof(target), "%s", copy_to(self_path, "dbg/usr/bin/prog.debug"));
	snprintf(rel, sizeof(rel), "dbg/.build-id/%.2s/%s.debug", hex, hex + 2);
	snprintf(link, sizeof(link), "%s/%s", dir, rel);
	make_parents(link);
	cr_assert_eq(symlink(target, link), 0);
	snprintf(dirs, sizeof(dirs), "%s/dbg", dir);
	struct sp_debug_query q = self_query(dirs);
	struct sp_debug_found f;
	cr_assert_eq(sp_debug_file_find(&q, &f), 0);
	cr_expect_geq(f.fd, 0);
	cr_expect_str_eq(f.path, link);
	sp_debug_found_release(&f);
	int fd = sp_debug_file_open(&q, link);
	cr_expect_geq(fd, 0, "a found build-id tree entry could not be opened again");
	if (fd >= 0)
		close(fd);
}

Test(debugfile, an_untrusted_candidate_is_refused)
{
	if (geteuid())
		cr_skip_test("needs root to give files away");
	const char *dbg = write_to("dbg/prog.debug", "stands for a debug file\n");
	char dirs[128];
	snprintf(dirs, sizeof(dirs), "%s/dbg", dir);
	struct sp_debug_query q = crc_query(dirs, dbg);
	struct sp_debug_found f;
	static const struct {
		uid_t uid;
		mode_t mode;
		bool used;
	} cases[] = {
		{0, 0644, true},
		{65534, 0644, false}, /* another user's */
		{0, 0666, false},     /* others may write it */
		{65534, 0664, false}, /* a user's: its group may write it */
		{0, 0664, true},      /* root's: its group may write it */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_assert_eq(chown(dbg, cases[i].uid, (gid_t)-1), 0);
		cr_assert_eq(chmod(dbg, cases[i].mode), 0);
		cr_assert_eq(sp_debug_file_find(&q, &f), 0);
		cr_expect_eq(f.fd >= 0, cases[i].used, "uid %u mode %o: %s", (unsigned)cases[i].uid,
			     (unsigned)cases[i].mode, f.fd >= 0 ? "used" : "refused");
		cr_expect_eq(f.mismatched, !cases[i].used);
		sp_debug_found_release(&f);
	}

	/* The module file's owner may provide its debug file. */
	char prog[PATH_MAX];
	snprintf(prog, sizeof(prog), "%s", copy_to(self_path, "bin/prog"));
	cr_assert_eq(chown(prog, 65534, (gid_t)-1), 0);
	cr_assert_eq(chown(dbg, 65534, (gid_t)-1), 0);
	cr_assert_eq(chmod(dbg, 0644), 0);
	q.path = prog;
	cr_assert_eq(sp_debug_file_find(&q, &f), 0);
	cr_expect_geq(f.fd, 0, "the module owner's debug file was refused");
	sp_debug_found_release(&f);
}

Test(debugfile, a_link_candidate_over_1_gib_is_not_read)
{
	/* Sparse: its CRC would take seconds to compute. */
	const char *dbg = write_to("dbg/prog.debug", "");
	cr_assert_eq(truncate(dbg, ((off_t)1 << 30) + 1), 0);
	char dirs[128];
	snprintf(dirs, sizeof(dirs), "%s/dbg", dir);
	struct sp_debug_query q = {.path = self_path, .debuglink = "prog.debug", .dirs = dirs};
	struct sp_debug_found f;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_assert_eq(sp_debug_file_find(&q, &f), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cr_expect_eq(f.fd, -1);
	cr_expect_eq(f.mismatched, 1);
	cr_expect_lt(t1.tv_sec - t0.tv_sec, 1, "the 1 GiB candidate was read");
	sp_debug_found_release(&f);
}

Test(debugfile, a_pending_stop_signal_ends_the_crc)
{
	const char *dbg = write_to("dbg/prog.debug", "stands for a debug file\n");
	char dirs[128];
	snprintf(dirs, sizeof(dirs), "%s/dbg", dir);
	struct sp_debug_query q = crc_query(dirs, dbg);
	sigset_t term, old;
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	cr_assert_eq(pthread_sigmask(SIG_BLOCK, &term, &old), 0);
	cr_assert_eq(raise(SIGTERM), 0);
	struct sp_debug_found f;
	cr_assert_eq(sp_debug_file_find(&q, &f), 0);
	cr_expect_eq(f.fd, -1, "the CRC was computed with SIGTERM pending");
	sp_debug_found_release(&f);
	/* Take the signal back, then the same search finds the file. */
	cr_assert_eq(sigtimedwait(&term, NULL, &(struct timespec){0}), SIGTERM);
	cr_assert_eq(pthread_sigmask(SIG_SETMASK, &old, NULL), 0);
	cr_assert_eq(sp_debug_file_find(&q, &f), 0);
	cr_expect_str_eq(f.path, dbg);
	sp_debug_found_release(&f);
}
