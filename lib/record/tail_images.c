/* SPDX-License-Identifier: MIT */
/* A tail following the recorder's spool, handed the open images of modules deleted or replaced. */
#include "record/record.h"
#include "spool/spool.h"

#include <fcntl.h>

/*
 * A tail's poll read modules [first, end): each one whose file was deleted
 * or replaced gets a copy of the recorder's open image, named from it as
 * the end of the recording would (store_replaced_images).
 */
static void tail_images(void *ctx, struct sp_tail *t, size_t first, size_t end)
{
	struct sp_recorder *r = ctx;
	for (size_t i = 0; i < r->procs.n; i++) {
		const struct sp_process *p = r->procs.all[i];
		for (size_t j = 0; j < p->nmods; j++) {
			const struct sp_proc_module *pm = &p->mods[j];
			if (pm->module_id < first || pm->module_id >= end || !pm->file ||
			    sp_tail_image_fd(t, pm->module_id) >= 0 || !sp_modfile_replaced(pm->file))
				continue;
			int fd = fcntl(pm->file->fd, F_DUPFD_CLOEXEC, 0);
			if (fd >= 0)
				sp_tail_put_image(t, pm->module_id, fd);
		}
	}
}

static void tail_gone(void *ctx)
{
	((struct sp_recorder *)ctx)->tail = NULL;
}

int sp_recorder_tail(struct sp_recorder *r, struct sp_tail **out)
{
	if (!r || !out || r->tail || !r->spool_path)
		return -SP_E_BAD_ARG;
	int err = sp_recorder_flush(r);
	if (!err)
		err = sp_tail_open(r->spool_path, out);
	if (err)
		return err;
	r->tail = *out;
	sp_tail_set_images(r->tail, tail_images, tail_gone, r);
	return 0;
}
