/* SPDX-License-Identifier: MIT */
/* Unit tests of lib/symbols/cache_dir.c: the cache's size bound, least recently used files first. */
#include <criterion/criterion.h>

#include "symbols/symbols.h"

#include <fcntl.h>
#include <ftw.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char dir[64];

static void setup(void)
{
	strcpy(dir, "/tmp/sp-cachedir-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	char sub[128];
	snprintf(sub, sizeof(sub), "%s/debug", dir);
	cr_assert_eq(mkdir(sub, 0700), 0);
	snprintf(sub, sizeof(sub), "%s/symbols", dir);
	cr_assert_eq(mkdir(sub, 0700), 0);
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(p);
}

static void teardown(void)
{
	nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
	unsetenv("STACKPULSE_CACHE_SIZE");
}

TestSuite(cache_dir, .init = setup, .fini = teardown);

/* dir/rel, in static storage (four in turn). */
static const char *at(const char *rel)
{
	static char out[4][256];
	static int which;
	char *p = out[which++ & 3];
	snprintf(p, 256, "%s/%s", dir, rel);
	return p;
}

/* Make dir/rel of size bytes, last modified age_s seconds ago. */
static void make_file(const char *rel, size_t size, time_t age_s)
{
	int fd = open(at(rel), O_WRONLY | O_CREAT | O_TRUNC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, (off_t)size), 0);
	struct timespec times[2] = {{.tv_sec = time(NULL) - age_s}, {.tv_sec = time(NULL) - age_s}};
	cr_assert_eq(futimens(fd, times), 0);
	close(fd);
}

static bool exists(const char *rel)
{
	struct stat st;
	return !lstat(at(rel), &st);
}

Test(cache_dir, the_least_recently_used_go_first_until_the_new_file_fits)
{
	make_file("debug/a.debug", 4000, 5000);   /* oldest */
	make_file("symbols/b.sym", 3000, 4000);
	make_file("debug/c.debug", 2000, 3000);
	make_file("symbols/d.sym", 1000, 10);     /* newest */
	uint64_t evicted = 99;
	/* 10,000 bytes held; 8,000 allowed with 2,500 more coming: a and b go (3,000 left). */
	cr_assert_eq(sp_cache_make_room(dir, 8000, 2500, &evicted), 0);
	cr_assert_eq(evicted, 2);
	cr_assert_not(exists("debug/a.debug"));
	cr_assert_not(exists("symbols/b.sym"));
	cr_assert(exists("debug/c.debug"));
	cr_assert(exists("symbols/d.sym"));
	/* Room enough already: nothing goes. */
	cr_assert_eq(sp_cache_make_room(dir, 8000, 5000, &evicted), 0);
	cr_assert_eq(evicted, 0);
	cr_assert(exists("debug/c.debug"));
}

Test(cache_dir, a_file_larger_than_the_bound_is_refused_and_nothing_goes)
{
	make_file("debug/a.debug", 100, 5000);
	uint64_t evicted = 99;
	cr_assert_eq(sp_cache_make_room(dir, 1000, 1001, &evicted), -EFBIG);
	cr_assert_eq(evicted, 0);
	cr_assert(exists("debug/a.debug"));
}

Test(cache_dir, only_regular_files_of_the_user_count_and_go)
{
	/* An old symlink to a large file outside: neither counted, followed, nor removed. */
	char outside[128];
	snprintf(outside, sizeof(outside), "%s/outside", dir);
	make_file("outside", 50000, 9000);
	cr_assert_eq(symlink(outside, at("symbols/link.sym")), 0);
	cr_assert_eq(mkdir(at("debug/sub"), 0700), 0);
	make_file("debug/sub/deep.debug", 50000, 9000);
	make_file("debug/old.debug", 3000, 8000);
	make_file("symbols/new.sym", 3000, 10);
	uint64_t evicted;
	cr_assert_eq(sp_cache_make_room(dir, 5000, 1000, &evicted), 0);
	cr_assert_eq(evicted, 1);
	cr_assert_not(exists("debug/old.debug"));
	cr_assert(exists("symbols/new.sym"));
	cr_assert(exists("symbols/link.sym"));
	cr_assert(exists("outside"));
	cr_assert(exists("debug/sub/deep.debug"));
	/* Files outside debug/ and symbols/ are not the cache's. */
	make_file("other.txt", 90000, 9000);
	cr_assert_eq(sp_cache_make_room(dir, 5000, 1000, &evicted), 0);
	cr_assert(exists("other.txt"));
}

Test(cache_dir, another_user_s_file_is_left_alone)
{
	if (geteuid() != 0)
		cr_skip_test("needs root to give a file to another user");
	struct passwd *pw = getpwnam("nobody");
	if (!pw)
		cr_skip_test("no user 'nobody'");
	make_file("debug/theirs.debug", 9000, 9000);
	cr_assert_eq(chown(at("debug/theirs.debug"), pw->pw_uid, pw->pw_gid), 0);
	make_file("debug/mine.debug", 3000, 10);
	uint64_t evicted;
	cr_assert_eq(sp_cache_make_room(dir, 4000, 500, &evicted), 0);
	cr_assert_eq(evicted, 0);
	cr_assert(exists("debug/theirs.debug"));
	cr_assert(exists("debug/mine.debug"));
}

Test(cache_dir, a_refused_directory_stops_eviction)
{
	make_file("debug/a.debug", 9000, 9000);
	cr_assert_eq(chmod(at("debug"), 0777), 0);
	uint64_t evicted;
	cr_assert_eq(sp_cache_make_room(dir, 1000, 10, &evicted), -EPERM);
	cr_assert_eq(evicted, 0);
	cr_assert(exists("debug/a.debug"));
	/* A symlink in place of symbols/ is refused too, whatever it points at. */
	cr_assert_eq(chmod(at("debug"), 0700), 0);
	cr_assert_eq(rmdir(at("symbols")), 0);
	cr_assert_eq(mkdir(at("elsewhere"), 0700), 0);
	make_file("elsewhere/victim.sym", 9000, 9000);
	cr_assert_eq(symlink(at("elsewhere"), at("symbols")), 0);
	cr_assert_eq(sp_cache_make_room(dir, 1000, 10, &evicted), -EPERM);
	cr_assert(exists("elsewhere/victim.sym"));
	cr_assert(exists("debug/a.debug"));
}

Test(cache_dir, use_marks_a_file_recent_at_most_hourly)
{
	make_file("symbols/old.sym", 10, 2 * 3600);
	make_file("symbols/fresh.sym", 10, 600);
	struct stat st;
	int fd = sp_cache_open_own(at("symbols/old.sym"), &st);
	cr_assert_geq(fd, 0);
	sp_cache_touch(fd, &st);
	close(fd);
	cr_assert_eq(stat(at("symbols/old.sym"), &st), 0);
	cr_assert_geq(st.st_mtime, time(NULL) - 60, "an old file used now is recent");
	fd = sp_cache_open_own(at("symbols/fresh.sym"), &st);
	cr_assert_geq(fd, 0);
	time_t before = st.st_mtime;
	sp_cache_touch(fd, &st);
	close(fd);
	cr_assert_eq(stat(at("symbols/fresh.sym"), &st), 0);
	cr_assert_eq(st.st_mtime, before, "a file used within the hour is not written");
}

Test(cache_dir, the_bound_comes_from_the_options_the_environment_or_the_default)
{
	const char *bad;
	unsetenv("STACKPULSE_CACHE_SIZE");
	cr_assert_eq(sp_cache_max_bytes(0, &bad), SP_CACHE_DEFAULT_MAX);
	cr_assert_null(bad);
	setenv("STACKPULSE_CACHE_SIZE", "512K", 1);
	cr_assert_eq(sp_cache_max_bytes(0, &bad), 512 * 1024);
	cr_assert_eq(sp_cache_max_bytes(77, &bad), 77, "the option wins");
	setenv("STACKPULSE_CACHE_SIZE", "3g", 1);
	cr_assert_eq(sp_cache_max_bytes(0, NULL), (uint64_t)3 << 30);
	setenv("STACKPULSE_CACHE_SIZE", "1048576", 1);
	cr_assert_eq(sp_cache_max_bytes(0, NULL), 1048576);
	setenv("STACKPULSE_CACHE_SIZE", "0", 1);
	cr_assert_eq(sp_cache_max_bytes(0, &bad), 0);
	cr_assert_null(bad);
	static const char *const wrong[] = {"2GB", "-1", "G", "1.5G", "99999999999999999999",
					    "17179869184T"};
	for (size_t i = 0; i < sizeof(wrong) / sizeof(wrong[0]); i++) {
		setenv("STACKPULSE_CACHE_SIZE", wrong[i], 1);
		cr_assert_eq(sp_cache_max_bytes(0, &bad), SP_CACHE_DEFAULT_MAX, "%s", wrong[i]);
		cr_assert_str_eq(bad, wrong[i]);
	}
}
