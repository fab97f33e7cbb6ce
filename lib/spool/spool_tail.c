/* SPDX-License-Identifier: MIT */
/* Following a spool while it is written: whole records read as they come, batch by batch. */
#include "spool/spool.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct sp_tail {
	int fd;
	struct sp_spool *s;  /* created with the tail, header read by the first poll */
	struct sp_buf pending; /* bytes read past the last whole record */
	bool header_read;
	bool finished;       /* the summary trailer came */
	int *images;         /* by module id: an image fd handed over, or -1 */
	size_t nimages;
	sp_tail_images_fn images_fn;
	void (*on_free)(void *ctx);
	void *images_ctx;
};

int sp_tail_open(const char *path, struct sp_tail **out)
{
	if (!path || !out)
		return -SP_E_BAD_ARG;
	struct sp_tail *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	sp_buf_init(&t->pending);
	/* what sp_spool_open accepts: a regular file, never a FIFO whose read could wait */
	t->fd = sp_open_regular(path, O_RDONLY, SP_RESOLVE_FOLLOW);
	int err = t->fd < 0 ? -errno : sp_spool_new_empty(&t->s);
	if (err == -EINVAL)
		err = -SP_E_NOT_REGULAR;
	if (err) {
		sp_tail_free(t);
		return err;
	}
	*out = t;
	return 0;
}

void sp_tail_set_images(struct sp_tail *t, sp_tail_images_fn fn, void (*on_free)(void *ctx),
			void *ctx)
{
	t->images_fn = fn;
	t->on_free = on_free;
	t->images_ctx = ctx;
}

int sp_tail_put_image(struct sp_tail *t, uint32_t module_id, int fd)
{
	if (module_id >= t->nimages) {
		size_t n = t->nimages ? t->nimages : 16;
		while (n <= module_id)
			n *= 2;
		int *g = realloc(t->images, n * sizeof(*g));
		if (!g) {
			close(fd);
			return -ENOMEM;
		}
		for (size_t i = t->nimages; i < n; i++)
			g[i] = -1;
		t->images = g;
		t->nimages = n;
	}
	if (t->images[module_id] >= 0)
		close(t->images[module_id]);
	t->images[module_id] = fd;
	return 0;
}

int sp_tail_image_fd(const struct sp_tail *t, uint32_t module_id)
{
	return t && module_id < t->nimages ? t->images[module_id] : -1;
}

/*
 * Append up to want bytes of the file past what was read to pending.
 * *more: the file holds more than was read.
 */
static int read_more(struct sp_tail *t, size_t want, bool *more)
{
	*more = false;
	size_t limit = t->pending.len + want;
	int err = sp_spool_read_into(t->fd, &t->pending, limit);
	if (err || t->pending.len < limit)
		return err;
	/* the cap was reached: is there more behind it? */
	struct stat st;
	off_t at = lseek(t->fd, 0, SEEK_CUR);
	*more = !fstat(t->fd, &st) && at >= 0 && st.st_size > at;
	return 0;
}

int sp_tail_poll(struct sp_tail *t, struct sp_tail_batch *out)
{
	if (!t || !out)
		return -SP_E_BAD_ARG;
	struct sp_spool *s = t->s;
	memset(out, 0, sizeof(*out));
	out->first_sample = s->nsamples;
	out->first_module = s->nmodules;
	out->first_frame = s->nframes;
	out->first_stack = s->nstacks;
	out->first_thread = s->nthreads;
	out->first_exec = s->nexecs;
	bool more = false;
	int err = 0;
	if (!t->finished)
		err = read_more(t, SP_TAIL_BATCH_BYTES, &more);
	size_t used = 0;
	if (!err && t->pending.len)
		err = sp_spool_feed(s, t->pending.data, t->pending.len, &used);
	/* whole records are in s (even those before an error): keep only what follows them */
	if (used) {
		memmove(t->pending.data, t->pending.data + used, t->pending.len - used);
		t->pending.len -= used;
		s->intact_len += used;
	}
	if (s->version && s->nlog)
		t->header_read = true;
	if (!err && !t->header_read)
		err = -SP_E_SPOOL_TRUNCATED;
	t->finished = s->nsummaries > 0 && !t->pending.len && !more;
	out->end_sample = s->nsamples;
	out->end_module = s->nmodules;
	out->end_frame = s->nframes;
	out->end_stack = s->nstacks;
	out->end_thread = s->nthreads;
	out->end_exec = s->nexecs;
	out->has_more = more;
	out->finished = t->finished;
	if (t->images_fn && out->end_module > out->first_module)
		t->images_fn(t->images_ctx, t, out->first_module, out->end_module);
	return err;
}

const struct sp_spool *sp_tail_spool(const struct sp_tail *t)
{
	return t && t->header_read ? t->s : NULL;
}

void sp_tail_free(struct sp_tail *t)
{
	if (!t)
		return;
	if (t->on_free)
		t->on_free(t->images_ctx);
	if (t->fd >= 0)
		close(t->fd);
	for (size_t i = 0; i < t->nimages; i++)
		if (t->images[i] >= 0)
			close(t->images[i]);
	free(t->images);
	sp_spool_free(t->s);
	sp_buf_release(&t->pending);
	free(t);
}

bool sp_spool_is_growing(const char *path)
{
	int fd = sp_open_regular(path, O_RDONLY, SP_RESOLVE_FOLLOW);
	if (fd < 0)
		return false;
	bool held = sp_fd_write_locked(fd);
	close(fd);
	return held;
}
