/* SPDX-License-Identifier: MIT */
/* Separate debug files: where a module file's debug file may be, and proof that it is its own. */
#include "symbols/symbols.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define GLOBAL_DEBUG_DIR "/usr/lib/debug"

/*
 * A candidate proven by its debug link's CRC alone is read whole: one larger
 * than this is refused unread (counted as a mismatch).  A sparse file of a
 * terabyte costs nothing to make and hours to read; 1 GiB reads in about
 * 3 s on the 2-CPU machines here, and is far above the debug file of any
 * module without a build-id (a module with one has its candidates proven by
 * build-id, never read whole).
 */
#define DEBUGLINK_CRC_MAX ((off_t)1 << 30)

/*
 * And what candidates have had read for their CRC: per pass (the charged
 * account's SP_DEBUGLINK_CRC_RUN_MAX) and for the whole process (crc_read,
 * SP_DEBUGLINK_CRC_PROCESS_MAX).  Sixteen modules without a build-id, each
 * with two sparse candidates of 1,023 MiB, cost every report 23-75 s under
 * the bound of one file alone.  A candidate is read only when its size fits
 * in what is left of both; the account counts those refused so.
 */
static uint64_t crc_read;

/*
 * Take size bytes from the CRC budgets (and, for a candidate another user
 * can influence, from SP_DEBUGLINK_CRC_UNTRUSTED_RUN_MAX): false, and nothing
 * taken, when they do not fit.
 */
static bool take_crc_budget(uint64_t size, const struct sp_file_trust *trust)
{
	struct sp_budget_account *a = sp_budget_charged();
	if (trust->untrusted && !sp_budget_take(&a->crc_read_untrusted,
						SP_DEBUGLINK_CRC_UNTRUSTED_RUN_MAX, size, true)) {
		__atomic_add_fetch(&a->crc_refused_untrusted, 1, __ATOMIC_RELAXED);
		/* The first refusal's reason, written once whatever the threads. */
		if (!__atomic_exchange_n(&a->crc_why_set, 1, __ATOMIC_RELAXED))
			snprintf(a->crc_untrusted_why, sizeof(a->crc_untrusted_why), "%s",
				 trust->why);
		__atomic_add_fetch(&a->crc_refused, 1, __ATOMIC_RELAXED);
		return false;
	}
	if (sp_budget_take(&a->crc_read, SP_DEBUGLINK_CRC_RUN_MAX, size, true)) {
		if (sp_budget_take(&crc_read, SP_DEBUGLINK_CRC_PROCESS_MAX, size, true))
			return true;
		__atomic_sub_fetch(&a->crc_read, size, __ATOMIC_RELAXED);
	}
	if (trust->untrusted)
		__atomic_sub_fetch(&a->crc_read_untrusted, size, __ATOMIC_RELAXED);
	__atomic_add_fetch(&a->crc_refused, 1, __ATOMIC_RELAXED);
	return false;
}

/*
 * SIGINT or SIGTERM is pending: the caller blocked them to be told when to
 * give up a long read (sp_recorder_finish, reading replaced images at record
 * end).  A signal not blocked is handled at once and never seen here.
 */
static bool stop_signal_pending(void)
{
	sigset_t set;
	return !sigpending(&set) &&
	       (sigismember(&set, SIGINT) == 1 || sigismember(&set, SIGTERM) == 1);
}

/*
 * The .gnu_debuglink CRC is the CRC-32 of the whole debug file, the same
 * polynomial zlib computes (GDB's "Debugging Information in Separate Files").
 * False on a read error, past max bytes (the file grew), or when a stop
 * signal is pending.
 */
static bool file_crc32(int fd, uint64_t max, uint32_t *out)
{
	unsigned char buf[65536];
	uLong crc = crc32(0L, Z_NULL, 0);
	off_t off = 0;
	for (;;) {
		if (stop_signal_pending())
			return false;
		ssize_t n = pread(fd, buf, sizeof(buf), off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return false;
		if (n == 0)
			break;
		crc = crc32(crc, buf, (uInt)n);
		off += n;
		if ((uint64_t)off > max)
			return false;
	}
	*out = (uint32_t)crc;
	return true;
}

bool sp_debug_file_matches(const struct sp_debug_query *q, int fd)
{
	struct stat st;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		return false;
	if (q->build_id_len) {
		sp_elf_init();
		Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
		if (!elf)
			return false;
		uint8_t id[SP_BUILD_ID_MAX];
		size_t n = elf_kind(elf) == ELF_K_ELF ? sp_elf_build_id(elf, id, sizeof(id)) : 0;
		elf_end(elf);
		return n == q->build_id_len && !memcmp(id, q->build_id, n);
	}
	/* Without a build-id only the debug link's CRC can tell. */
	uint32_t crc;
	struct sp_file_trust trust;
	if (q->debuglink && st.st_size <= DEBUGLINK_CRC_MAX)
		sp_file_trust(fd, &trust);
	return q->debuglink && st.st_size <= DEBUGLINK_CRC_MAX &&
	       take_crc_budget((uint64_t)st.st_size, &trust) &&
	       file_crc32(fd, (uint64_t)st.st_size, &crc) && crc == q->debuglink_crc;
}

/* The search's state: the module file's identity, what was found, what was refused. */
struct search {
	const struct sp_debug_query *q;
	struct stat main_st;
	bool have_main_st;
	struct sp_debug_found *out;
	/* Listing only (sp_debug_file_candidates): every candidate path, none opened. */
	bool listing;
	char **list;
	size_t nlist;
	/* Opening again (sp_debug_file_open): only this candidate is tried. */
	const char *only;
	bool only_seen;
	/* The candidates being tried are in a build-id tree (try_build_id)... */
	bool in_build_id_tree;
	/* ...or beside the module file, in a directory its owner may write. */
	bool beside_module;
};

/*
 * Whose files may stand for a module's debug information: root's, the
 * module file's owner's (who could have written anything into the module
 * itself) and ours; and only files no one else may write (a root-owned file
 * may be writable by its group, which is root's choice).
 */
static bool trusted(const struct search *s, const struct stat *st)
{
	if (st->st_uid != 0 && st->st_uid != geteuid() &&
	    !(s->have_main_st && st->st_uid == s->main_st.st_uid))
		return false;
	if (st->st_mode & S_IWOTH)
		return false;
	return !(st->st_mode & S_IWGRP) || st->st_uid == 0;
}

/*
 * Open one candidate as perf maps are opened (lib/formats/perfmap.c): only a regular
 * file, so that a FIFO planted there can neither hang us nor be opened at
 * all, and no symlink followed, so that one planted beside a module file
 * cannot make us open or read whatever it names (a CRC check reads the whole
 * file).  O_NOFOLLOW guards the last component only, which is enough where
 * only root or the user could have made a symlinked directory
 * (/usr/lib/debug, STACKPULSE_DEBUG_DIRS); beside the module file a symlink
 * anywhere on the path (FILEDIR/.debug -> /etc) is refused too.  Symlinks
 * are followed in build-id trees: Fedora's and Arch's .build-id entries link
 * to the debug files, and a file found there is proven by build-id, which
 * reads a few headers.  Then only a file that trusted() accepts will do.
 * Returns the fd; -1 with *refused set when a file is there but refused, -1
 * alone when there is none (or a directory, a FIFO, the module file itself).
 */
static int open_candidate(const struct search *s, const char *path, bool *refused)
{
	*refused = false;
	int fd = sp_open_regular(path, O_RDONLY | O_NONBLOCK,
				 s->in_build_id_tree ? SP_RESOLVE_FOLLOW
				 : s->beside_module  ? SP_RESOLVE_NO_SYMLINKS
						     : SP_RESOLVE_NOFOLLOW);
	if (fd < 0) {
		/* A symlink on the way: refused, when it leads to something. */
		struct stat st;
		*refused = errno == ELOOP && !lstat(path, &st);
		return -1;
	}
	struct stat st;
	if (fstat(fd, &st) || (s->have_main_st && st.st_dev == s->main_st.st_dev &&
			       st.st_ino == s->main_st.st_ino)) {
		/* The module file itself (a debug link naming its own file). */
		close(fd);
		return -1;
	}
	if (!trusted(s, &st)) {
		close(fd);
		*refused = true;
		return -1;
	}
	return fd;
}

/* Count a refused candidate; the first one's path is kept (path is taken over). */
static void refuse(struct search *s, char *path)
{
	s->out->mismatched++;
	if (!s->out->first_mismatch)
		s->out->first_mismatch = path;
	else
		free(path);
}

/*
 * Try one candidate path.  Returns 1 when it is the debug file (out->fd and
 * out->path set), 0 to go on searching, -ENOMEM.
 */
static int try_path(struct search *s, char *path)
{
	if (s->listing) {
		char **l = realloc(s->list, (s->nlist + 1) * sizeof(*l));
		if (!l) {
			free(path);
			return -ENOMEM;
		}
		s->list = l;
		s->list[s->nlist++] = path;
		return 0;
	}
	if (s->only && strcmp(path, s->only)) {
		free(path);
		return 0;
	}
	s->only_seen = s->only != NULL;
	bool refused;
	int fd = open_candidate(s, path, &refused);
	if (fd < 0) {
		if (refused)
			refuse(s, path);
		else
			free(path);
		return s->only_seen;
	}
	if (sp_debug_file_matches(s->q, fd)) {
		s->out->fd = fd;
		s->out->path = path;
		return 1;
	}
	close(fd);
	refuse(s, path);
	return s->only_seen;
}

static int try_fmt(struct search *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int try_fmt(struct search *s, const char *fmt, ...)
{
	char *path;
	va_list ap;
	va_start(ap, fmt);
	int n = vasprintf(&path, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -ENOMEM;
	return try_path(s, path);
}

/* DIR/.build-id/xx/rest.debug, the layout of Debian's -dbg and -dbgsym packages. */
static int try_build_id(struct search *s, const char *dir, size_t dir_len)
{
	const struct sp_debug_query *q = s->q;
	if (!q->build_id_len)
		return 0;
	char hex[2 * SP_BUILD_ID_MAX + 1];
	for (size_t i = 0; i < q->build_id_len; i++)
		snprintf(hex + 2 * i, 3, "%02x", q->build_id[i]);
	s->in_build_id_tree = true;
	int r = try_fmt(s, "%.*s/.build-id/%.2s/%s.debug", (int)dir_len, dir, hex, hex + 2);
	s->in_build_id_tree = false;
	return r;
}

/* DIR/LINK, then DIR/FILEDIR/LINK (the /usr/lib/debug/usr/bin/prog.debug layout). */
static int try_debuglink_in(struct search *s, const char *dir, size_t dir_len,
			    const char *file_dir, size_t file_dir_len)
{
	const char *link = s->q->debuglink;
	int r = try_fmt(s, "%.*s/%s", (int)dir_len, dir, link);
	if (r || !file_dir_len)
		return r;
	return try_fmt(s, "%.*s%.*s/%s", (int)dir_len, dir, (int)file_dir_len, file_dir, link);
}

static int search(struct search *s);

int sp_debug_file_find(const struct sp_debug_query *q, struct sp_debug_found *out)
{
	*out = (struct sp_debug_found){.fd = -1};
	struct search s = {.q = q, .out = out};
	s.have_main_st = q->path && !stat(q->path, &s.main_st);
	int r = search(&s);
	if (r < 0) {
		sp_debug_found_release(out);
		return r;
	}
	return 0;
}

int sp_debug_file_open(const struct sp_debug_query *q, const char *path)
{
	struct sp_debug_found found = {.fd = -1};
	struct search s = {.q = q, .out = &found, .only = path};
	s.have_main_st = q->path && !stat(q->path, &s.main_st);
	int fd = -1;
	if (search(&s) >= 0 && !s.only_seen) {
		/* Not one of q's candidates (a debuginfod download): no symlink is followed. */
		bool refused;
		fd = open_candidate(&s, path, &refused);
		if (fd >= 0 && !sp_debug_file_matches(q, fd)) {
			close(fd);
			fd = -1;
		}
	} else if (found.fd >= 0) {
		fd = found.fd;
		found.fd = -1;
	}
	sp_debug_found_release(&found);
	return fd;
}

int sp_debug_file_candidates(const struct sp_debug_query *q, char ***paths, size_t *n)
{
	struct sp_debug_found unused = {.fd = -1};
	struct search s = {.q = q, .out = &unused, .listing = true};
	int r = search(&s);
	if (r < 0) {
		for (size_t i = 0; i < s.nlist; i++)
			free(s.list[i]);
		free(s.list);
		return r;
	}
	*paths = s.list;
	*n = s.nlist;
	return 0;
}

/* Every candidate in order, until one is q's debug file: 1 found, 0 none, -ENOMEM. */
static int search(struct search *s)
{
	const struct sp_debug_query *q = s->q;
	/* A link is a file name: one with a '/' could point anywhere, so it is not followed. */
	bool link = q->debuglink && *q->debuglink && !strchr(q->debuglink, '/');
	const char *file_dir = q->path && q->path[0] == '/' ? q->path : NULL;
	size_t file_dir_len = 0;
	if (file_dir) {
		const char *slash = strrchr(file_dir, '/');
		file_dir_len = (size_t)(slash - file_dir);
	}
	int r = 0;

	/* 1. The user's directories, by build-id and by debug link. */
	for (const char *d = q->dirs; d && *d && !r;) {
		size_t len = strcspn(d, ":");
		if (len && d[0] == '/') {
			r = try_build_id(s, d, len);
			if (!r && link)
				r = try_debuglink_in(s, d, len, file_dir, file_dir_len);
		}
		d += len;
		d += *d == ':';
	}
	/* 2. The global build-id tree. */
	if (!r)
		r = try_build_id(s, GLOBAL_DEBUG_DIR, strlen(GLOBAL_DEBUG_DIR));
	/* 3. The debug link beside the file, in .debug/ beside it, under /usr/lib/debug. */
	if (!r && link && file_dir) {
		s->beside_module = true;
		r = try_fmt(s, "%.*s/%s", (int)file_dir_len, file_dir, q->debuglink);
		if (!r)
			r = try_fmt(s, "%.*s/.debug/%s", (int)file_dir_len, file_dir, q->debuglink);
		s->beside_module = false;
		if (!r)
			r = try_fmt(s, GLOBAL_DEBUG_DIR "%.*s/%s", (int)file_dir_len, file_dir,
				    q->debuglink);
	}
	return r;
}

void sp_debug_found_release(struct sp_debug_found *f)
{
	if (f->fd >= 0)
		close(f->fd);
	free(f->path);
	free(f->first_mismatch);
	*f = (struct sp_debug_found){.fd = -1};
}
