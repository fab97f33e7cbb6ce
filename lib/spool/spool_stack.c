/* SPDX-License-Identifier: MIT */
/* Raw replay over a read spool: stacks walked leaf to root with their recorded module context. */
#include "spool/spool.h"

uint64_t sp_spool_sample_time_us(const struct sp_spool *s, const struct sp_sample *sample)
{
	return s->meta.start_timestamp_us + sp_spool_timestamp_us(s, sample);
}

bool sp_spool_kernel_frame_next(const struct sp_spool *s, size_t *cursor, uint64_t *addr)
{
	for (; *cursor < s->nframes; ++*cursor) {
		const struct sp_frame *f = &s->frames[*cursor];
		const struct sp_module *m =
			f->module_id < s->nmodules ? &s->modules[f->module_id] : NULL;
		if (f->mode == SP_FRAME_KERNEL ||
		    (f->mode == SP_FRAME_USER && m && (m->flags & SP_MODULE_KERNEL))) {
			*addr = f->abs_ip;
			++*cursor;
			return true;
		}
	}
	return false;
}

int sp_spool_frame_context(const struct sp_spool *s, uint32_t frame_id,
			   struct sp_frame_context *out)
{
	if (frame_id >= s->nframes)
		return -SP_E_BAD_ARG;
	const struct sp_frame *f = &s->frames[frame_id];
	/* The reader checked module ids against the modules read before the frame. */
	const struct sp_module *m = f->mode != SP_FRAME_TRUNCATED && f->module_id < s->nmodules
					    ? &s->modules[f->module_id] : NULL;
	*out = (struct sp_frame_context){
		.frame_id = frame_id,
		.frame = f,
		.module = m,
		.rel_ip = m ? f->rel_ip : 0,
	};
	return 0;
}

void sp_spool_stack_iter_init(struct sp_stack_iter *it, const struct sp_spool *s,
			      uint32_t stack_id)
{
	it->spool = s;
	it->node = stack_id < s->nstacks ? stack_id : 0;
	it->left = (uint32_t)s->nstacks;
}

bool sp_spool_stack_iter_next(struct sp_stack_iter *it, struct sp_frame_context *out)
{
	const struct sp_spool *s = it->spool;
	/* Parents are strictly smaller ids (checked on read); left bounds it anyway. */
	if (!it->node || !it->left)
		return false;
	uint32_t node = it->node;
	it->node = s->stack_parent[node];
	it->left--;
	return sp_spool_frame_context(s, s->stack_frame[node], out) == 0;
}
