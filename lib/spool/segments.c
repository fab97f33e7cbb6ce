/* SPDX-License-Identifier: MIT */
/* A directory of segment spools: names, atomic publication, retention (docs/DESIGN.md, decision 13). */
#include "spool/spool.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PREFIX "stackpulse-"
#define SUFFIX ".spool"
#define PARTIAL ".partial"

struct sp_segments {
	int dirfd;
	char *dir;
	struct sp_segments_opts o;
	uint64_t next_seq;
	char cur[SP_SEGMENT_NAME_MAX]; /* the final name of the segment being written */
	bool writing;                 /* cur's partial file exists, not yet published */
	uint64_t cur_start_ns;        /* CLOCK_MONOTONIC when it began */
	struct sp_spool_meta meta;    /* strings point at the owned copies below */
	char *command, *hostname, *kernel_release;
	struct sp_summary base;       /* the recording's counters when cur began */
	struct sp_segments_stats stats;
};

static bool digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

bool sp_segment_name_parse(const char *name, bool *partial, uint64_t *seq, uint64_t *start_ms)
{
	size_t len = strlen(name);
	*partial = name[0] == '.';
	if (*partial) {
		if (len < sizeof(PARTIAL) || strcmp(name + len - (sizeof(PARTIAL) - 1), PARTIAL))
			return false;
		name++;
		len -= 1 + sizeof(PARTIAL) - 1;
	}
	/* PREFIX YYYYMMDD T HHMMSS . mmm Z - SEQ SUFFIX */
	size_t fixed = sizeof(PREFIX) - 1 + 8 + 1 + 6 + 4 + 1 + 1;
	if (len <= fixed + sizeof(SUFFIX) - 1 || len > fixed + 19 + sizeof(SUFFIX) - 1 ||
	    strncmp(name, PREFIX, sizeof(PREFIX) - 1) ||
	    strncmp(name + len - (sizeof(SUFFIX) - 1), SUFFIX, sizeof(SUFFIX) - 1))
		return false;
	const char *t = name + sizeof(PREFIX) - 1;
	if (!digits(t, 8) || t[8] != 'T' || !digits(t + 9, 6) || t[15] != '.' ||
	    !digits(t + 16, 3) || t[19] != 'Z' || t[20] != '-')
		return false;
	const char *q = t + 21;
	size_t nseq = len - fixed - (sizeof(SUFFIX) - 1);
	if (!digits(q, nseq))
		return false;
	uint64_t v = 0;
	for (size_t i = 0; i < nseq; i++)
		v = v * 10 + (uint64_t)(q[i] - '0');
	struct tm tm = {0};
	tm.tm_year = (t[0] - '0') * 1000 + (t[1] - '0') * 100 + (t[2] - '0') * 10 + (t[3] - '0') - 1900;
	tm.tm_mon = (t[4] - '0') * 10 + (t[5] - '0') - 1;
	tm.tm_mday = (t[6] - '0') * 10 + (t[7] - '0');
	tm.tm_hour = (t[9] - '0') * 10 + (t[10] - '0');
	tm.tm_min = (t[11] - '0') * 10 + (t[12] - '0');
	tm.tm_sec = (t[13] - '0') * 10 + (t[14] - '0');
	time_t secs = timegm(&tm);
	*seq = v;
	*start_ms = secs < 0 ? 0 : (uint64_t)secs * 1000 + (uint64_t)((t[16] - '0') * 100 +
									 (t[17] - '0') * 10 + (t[18] - '0'));
	return true;
}

static int by_seq(const void *a, const void *b)
{
	const struct sp_segment_entry *x = a, *y = b;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return (int)x->partial - (int)y->partial;
}

int sp_segment_list(int dirfd, struct sp_segment_entry **out, size_t *n)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	struct sp_segment_entry *v = NULL;
	size_t cnt = 0, cap = 0;
	int err = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		struct sp_segment_entry e = {0};
		if (strlen(de->d_name) >= sizeof(e.name) ||
		    !sp_segment_name_parse(de->d_name, &e.partial, &e.seq, &e.start_ms))
			continue;
		struct stat st;
		/* never through a symlink: what is there, as it is */
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW))
			continue; /* gone meanwhile */
		strcpy(e.name, de->d_name);
		e.regular = S_ISREG(st.st_mode);
		e.uid = st.st_uid;
		e.size = (uint64_t)st.st_size;
		if ((err = SP_GROW(v, cnt, cap)))
			break;
		v[cnt++] = e;
	}
	closedir(d);
	if (err) {
		free(v);
		return err;
	}
	if (cnt)
		qsort(v, cnt, sizeof(*v), by_seq);
	*out = v;
	*n = cnt;
	return 0;
}

int sp_segments_open(const char *dir, const struct sp_segments_opts *o, struct sp_segments **out)
{
	if (!dir || !*dir || !o || !out || (!o->segment_ns && !o->segment_bytes))
		return -SP_E_BAD_ARG;
	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ELOOP ? -ENOTDIR : -errno;
	struct stat st;
	int err = fstat(fd, &st) ? -errno : 0;
	/* retention deletes here: nobody else may put files in it */
	if (!err && ((st.st_uid != geteuid() && st.st_uid != 0) || (st.st_mode & 022)))
		err = -SP_E_SEGMENT_DIR_SHARED;
	/* segments are created there: refuse now, not once the target runs */
	if (!err && faccessat(fd, ".", W_OK | X_OK, AT_EACCESS))
		err = -errno;
	struct sp_segments *g = err ? NULL : calloc(1, sizeof(*g));
	if (!err && (!g || !(g->dir = strdup(dir))))
		err = -ENOMEM;
	struct sp_segment_entry *v = NULL;
	size_t n = 0;
	if (!err)
		err = sp_segment_list(fd, &v, &n);
	if (err) {
		if (g)
			free(g->dir);
		free(g);
		close(fd);
		return err;
	}
	g->dirfd = fd;
	g->o = *o;
	g->next_seq = n ? v[n - 1].seq + 1 : 1;
	free(v);
	*out = g;
	return 0;
}

/* Take a copy of meta's strings so that every segment's header repeats them. */
static int keep_meta(struct sp_segments *g, const struct sp_spool_meta *m)
{
	g->meta = *m;
	g->command = strdup(m->command ? m->command : "");
	g->hostname = strdup(m->hostname ? m->hostname : "");
	g->kernel_release = strdup(m->kernel_release ? m->kernel_release : "");
	if (!g->command || !g->hostname || !g->kernel_release)
		return -ENOMEM;
	g->meta.command = g->command;
	g->meta.hostname = g->hostname;
	g->meta.kernel_release = g->kernel_release;
	return 0;
}

/* Create the partial file of the next segment, starting at start_us; its fd (locked) or -errno. */
static int create_next(struct sp_segments *g, uint64_t start_us, char *name)
{
	time_t secs = (time_t)(start_us / 1000000);
	struct tm tm;
	if (!gmtime_r(&secs, &tm))
		return -EINVAL;
	char stamp[32];
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S", &tm);
	snprintf(name, SP_SEGMENT_NAME_MAX, PREFIX "%s.%03uZ-%06llu" SUFFIX, stamp,
		 (unsigned)(start_us / 1000 % 1000), (unsigned long long)g->next_seq);
	char partial[SP_SEGMENT_NAME_MAX + 16];
	snprintf(partial, sizeof(partial), ".%s" PARTIAL, name);
	unsigned mode = (g->meta.flags & SP_META_SYSTEM_WIDE) ? 0600 : 0666;
	int fd = openat(g->dirfd, partial, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			mode);
	if (fd < 0)
		return -errno;
	/* as a single spool: readers tell one being written (sp_spool_is_growing) */
	struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	(void)fcntl(fd, F_OFD_SETLK, &l);
	g->next_seq++;
	return fd;
}

/* Rename cur's partial file to its final name, and make the rename durable. */
static int publish(struct sp_segments *g)
{
	char partial[SP_SEGMENT_NAME_MAX + 16];
	snprintf(partial, sizeof(partial), ".%s" PARTIAL, g->cur);
	struct stat st;
	uint64_t size = fstatat(g->dirfd, partial, &st, AT_SYMLINK_NOFOLLOW) ? 0 : (uint64_t)st.st_size;
	if (renameat(g->dirfd, partial, g->dirfd, g->cur))
		return -errno;
	g->writing = false;
	(void)fsync(g->dirfd);
	g->stats.published++;
	g->stats.published_bytes += size;
	return 0;
}

/*
 * A partial segment no recorder writes any more: a killed one left it (the
 * writer holds an open-file-description lock on its partial while it lives;
 * this recorder's own, taken through another open, conflicts as well).
 */
static bool dead_partial(const struct sp_segments *g, const char *name)
{
	int fd = openat(g->dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return false;
	struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	bool dead = !fcntl(fd, F_OFD_GETLK, &l) && l.l_type == F_UNLCK;
	close(fd);
	return dead;
}

/*
 * Delete the oldest segments past the retention: only names of this
 * layout, regular files the recording user owns (published ones, and
 * partial ones a killed recorder left), never the newest one; unlinkat
 * removes a name and never follows it.
 */
static void retain(struct sp_segments *g, uint64_t now_us)
{
	struct sp_segment_entry *v = NULL;
	size_t n = 0;
	if (sp_segment_list(g->dirfd, &v, &n))
		return;
	size_t k = 0;
	uint64_t total = 0;
	for (size_t i = 0; i < n; i++) {
		if (!v[i].regular || v[i].uid != geteuid() ||
		    (v[i].partial && !dead_partial(g, v[i].name)))
			continue;
		v[k++] = v[i];
		total += v[i].size;
	}
	uint64_t cutoff_ms = g->o.retain_ns && now_us * 1000 > g->o.retain_ns
				     ? (now_us * 1000 - g->o.retain_ns) / 1000000 : 0;
	size_t first = 0;
	for (size_t i = 0; i + 1 < k; i++) {
		/* a segment ends where the next begins */
		bool old = g->o.retain_ns && v[i + 1].start_ms < cutoff_ms;
		bool big = g->o.retain_bytes && total > g->o.retain_bytes;
		if (!old && !big)
			break;
		if (unlinkat(g->dirfd, v[i].name, 0) && errno != ENOENT) {
			g->stats.retention_error = -errno;
			break;
		}
		g->stats.deleted++;
		total -= v[i].size;
		first = i + 1;
	}
	g->stats.kept = k - first;
	g->stats.kept_bytes = total;
	free(v);
}

static uint64_t wall_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

int sp_segments_begin(struct sp_segments *g, const struct sp_spool_meta *meta,
		      struct sp_spool_writer **w)
{
	if (!g || !meta || !w || g->writing)
		return -SP_E_BAD_ARG;
	int err = keep_meta(g, meta);
	if (err)
		return err;
	int fd = create_next(g, meta->start_timestamp_us, g->cur);
	if (fd < 0)
		return fd;
	g->writing = true;
	g->cur_start_ns = meta->start_monotonic_ns;
	memset(&g->base, 0, sizeof(g->base));
	return sp_spool_writer_open_fd(fd, &g->meta, true, w);
}

bool sp_segments_due(const struct sp_segments *g, const struct sp_spool_writer *w, uint64_t now_ns)
{
	if (!g || !g->writing)
		return false;
	if (g->o.segment_ns && now_ns - g->cur_start_ns >= g->o.segment_ns)
		return true;
	return g->o.segment_bytes && sp_spool_writer_bytes(w) >= g->o.segment_bytes;
}

void sp_summary_counters_add(struct sp_summary *d, const struct sp_summary *s, bool subtract)
{
#define STEP(f) d->f = subtract ? (d->f >= s->f ? d->f - s->f : 0) : sp_u64_add_sat(d->f, s->f);
	SP_SUMMARY_COUNTERS(STEP)
	for (unsigned i = 0; i < SP_STOP_COUNT_; i++)
		STEP(stop_reasons[i])
	for (unsigned i = 0; i < SP_ERR_COUNT_; i++)
		STEP(error_stats[i])
#undef STEP
}

/* What happened since base: the stored counters' differences (the rest as they are). */
static void since(struct sp_summary *d, const struct sp_summary *total, const struct sp_summary *base)
{
	*d = *total;
	sp_summary_counters_add(d, base, true);
}

int sp_segments_rotate(struct sp_segments *g, struct sp_spool_writer *w,
		       const struct sp_summary *total, uint64_t now_ns)
{
	if (!g || !w || !total || !g->writing)
		return -SP_E_BAD_ARG;
	uint64_t now_us = wall_us();
	char next[SP_SEGMENT_NAME_MAX];
	int fd = create_next(g, now_us, next);
	if (fd < 0)
		return fd;
	struct sp_summary d;
	since(&d, total, &g->base);
	g->meta.start_timestamp_us = now_us;
	g->meta.start_monotonic_ns = now_ns;
	int err = sp_spool_writer_rotate(w, fd, &g->meta, &d);
	/* the finished one is published even when the next could not start */
	int perr = publish(g);
	if (err) {
		char partial[SP_SEGMENT_NAME_MAX + 16];
		snprintf(partial, sizeof(partial), ".%s" PARTIAL, next);
		unlinkat(g->dirfd, partial, 0);
		return err;
	}
	memcpy(g->cur, next, sizeof(next));
	g->writing = true;
	g->cur_start_ns = now_ns;
	g->base = *total;
	retain(g, now_us);
	return perr;
}

int sp_segments_finish(struct sp_segments *g, struct sp_spool_writer *w,
		       const struct sp_summary *total)
{
	if (!g || !w || !g->writing)
		return -SP_E_BAD_ARG;
	struct sp_summary d;
	since(&d, total ? total : &g->base, &g->base);
	/* a stop just after a rotation leaves a segment of nothing: unless it is the only one */
	bool empty = !sp_spool_writer_events(w) && g->stats.published;
	int err = sp_spool_writer_finish(w, &d);
	int perr = 0;
	if (empty && !err) {
		char partial[SP_SEGMENT_NAME_MAX + 16];
		snprintf(partial, sizeof(partial), ".%s" PARTIAL, g->cur);
		unlinkat(g->dirfd, partial, 0);
		g->writing = false;
	} else {
		perr = publish(g);
	}
	retain(g, wall_us());
	return err ? err : perr;
}

void sp_segments_stats(const struct sp_segments *g, struct sp_segments_stats *out)
{
	*out = g->stats;
}

const char *sp_segments_dir(const struct sp_segments *g)
{
	return g->dir;
}

void sp_segments_free(struct sp_segments *g)
{
	if (!g)
		return;
	if (g->writing) {
		char partial[SP_SEGMENT_NAME_MAX + 16];
		snprintf(partial, sizeof(partial), ".%s" PARTIAL, g->cur);
		unlinkat(g->dirfd, partial, 0);
	}
	close(g->dirfd);
	free(g->dir);
	free(g->command);
	free(g->hostname);
	free(g->kernel_release);
	free(g);
}

int sp_snapshot_create(const char *tmpl, uint64_t wall_us, bool private_file, char *path,
		       size_t size)
{
	time_t secs = (time_t)(wall_us / 1000000);
	struct tm tm;
	char stamp[48];
	if (!tmpl || !*tmpl || !gmtime_r(&secs, &tm))
		return -SP_E_BAD_ARG;
	size_t n = strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S", &tm);
	snprintf(stamp + n, sizeof(stamp) - n, ".%03uZ", (unsigned)(wall_us / 1000 % 1000));
	/* "dir/run.spool" -> "dir/run-STAMP.spool"; without that extension, "-STAMP" appended */
	const char *base = strrchr(tmpl, '/');
	base = base ? base + 1 : tmpl;
	size_t len = strlen(tmpl), stem = len;
	if (len - (size_t)(base - tmpl) > sizeof(SUFFIX) - 1 &&
	    !strcmp(tmpl + len - (sizeof(SUFFIX) - 1), SUFFIX))
		stem = len - (sizeof(SUFFIX) - 1);
	for (int k = 1; k < 10; k++) {
		char extra[8] = "";
		if (k > 1)
			snprintf(extra, sizeof(extra), "-%d", k);
		if ((size_t)snprintf(path, size, "%.*s-%s%s%s", (int)stem, tmpl, stamp, extra,
				     tmpl + stem) >= size)
			return -ENAMETOOLONG;
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			      private_file ? 0600 : 0666);
		if (fd >= 0 || errno != EEXIST)
			return fd >= 0 ? fd : -errno;
	}
	return -EEXIST;
}
