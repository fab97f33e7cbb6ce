/* SPDX-License-Identifier: MIT */
/* What the exporters share: time order, interning. */
#include "report/export.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int by_time(const void *pa, const void *pb, void *ctx)
{
	const struct sp_spool *s = ctx;
	uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
	uint64_t ta = sp_spool_sample(s, a)->timestamp_ns, tb = sp_spool_sample(s, b)->timestamp_ns;
	if (ta != tb)
		return ta < tb ? -1 : 1;
	return a < b ? -1 : a > b;
}

int sp_export_time_order(const struct sp_spool *s, uint32_t **order)
{
	size_t n = sp_spool_sample_count(s);
	if (n >= UINT32_MAX)
		return -SP_E_BAD_ARG;
	uint32_t *v = malloc((n ? n : 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	bool sorted = true;
	for (size_t i = 0; i < n; i++) {
		v[i] = (uint32_t)i;
		if (i && sp_spool_sample(s, i)->timestamp_ns < sp_spool_sample(s, i - 1)->timestamp_ns)
			sorted = false;
	}
	/*
	 * Ties keep file order, so the same spool always gives the same order.
	 * The recorder writes rings merged in time order, so most spools need no
	 * sort at all (a tenth of a second per million samples saved).
	 */
	if (!sorted)
		qsort_r(v, n, sizeof(*v), by_time, (void *)s);
	*order = v;
	return 0;
}

static int interval_by_time(const void *pa, const void *pb, void *ctx)
{
	const struct sp_spool *s = ctx;
	uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
	uint64_t ta = sp_spool_offcpu(s, a)->start_ns, tb = sp_spool_offcpu(s, b)->start_ns;
	if (ta != tb)
		return ta < tb ? -1 : 1;
	return a < b ? -1 : a > b;
}

int sp_export_time_events(struct sp_agg *a, uint64_t **events, size_t *n)
{
	const struct sp_spool *s = a->spool;
	size_t nintervals = sp_spool_offcpu_count(s), nsamples = 0, ni = 0, k = 0;
	uint32_t *samples = NULL, *iv = malloc((nintervals ? nintervals : 1) * sizeof(*iv));
	int err = iv ? 0 : -ENOMEM;
	if (!err && a->metric == SP_METRIC_WALL) {
		err = sp_export_time_order(s, &samples);
		nsamples = err ? 0 : sp_spool_sample_count(s);
	}
	uint64_t *v = err ? NULL : malloc((nsamples + nintervals + 1) * sizeof(*v));
	if (!v) {
		free(samples);
		free(iv);
		return err ? err : -ENOMEM;
	}
	/* Intervals with time that the filters keep, by their start (they are written as they end). */
	for (size_t i = 0; i < nintervals && nintervals < UINT32_MAX; i++) {
		const struct sp_offcpu *o = sp_spool_offcpu(s, i);
		if (o->duration_ns && sp_agg_interval_kept(a, o))
			iv[ni++] = (uint32_t)i;
	}
	qsort_r(iv, ni, sizeof(*iv), interval_by_time, (void *)s);
	/* Merged with the kept samples, a sample first at a tie. */
	size_t si = 0, ii = 0;
	while (si < nsamples || ii < ni) {
		if (si < nsamples && !sp_agg_kept(a, samples[si])) {
			si++;
			continue;
		}
		bool take_sample = si < nsamples &&
				   (ii == ni || sp_spool_sample(s, samples[si])->timestamp_ns <=
							sp_spool_offcpu(s, iv[ii])->start_ns);
		v[k++] = take_sample ? samples[si++] : SP_EXPORT_INTERVAL | iv[ii++];
	}
	free(samples);
	free(iv);
	*events = v;
	*n = k;
	return 0;
}

uint64_t sp_export_output_budget(const struct sp_spool *s)
{
	uint64_t past = s->intact_len > (1u << 20) ? s->intact_len - (1u << 20) : 0;
	return sp_u64_add_sat(SP_EXPORT_OUTPUT_MIN, past > UINT64_MAX / 64 ? UINT64_MAX : past * 64);
}

/* ---- interning --------------------------------------------------------- */

void sp_intern_init(struct sp_intern *t)
{
	memset(t, 0, sizeof(*t));
	sp_map_init(&t->index);
	sp_buf_init(&t->keys);
}

void sp_intern_release(struct sp_intern *t)
{
	sp_map_release(&t->index);
	sp_buf_release(&t->keys);
	free(t->off);
	memset(t, 0, sizeof(*t));
}

static uint64_t hash_key(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ n;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return sp_hash64(h);
}

int sp_intern(struct sp_intern *t, const void *key, size_t len, uint32_t *id, bool *added)
{
	uint64_t h = hash_key(key, len);
	uint32_t v;
	/* The map holds hashes; the stored keys decide, probing past collisions. */
	while (sp_map_get(&t->index, h, &v)) {
		size_t klen;
		const void *k = sp_intern_key(t, v, &klen);
		if (klen == len && (!len || !memcmp(k, key, len))) {
			*id = v;
			if (added)
				*added = false;
			return 0;
		}
		h = sp_hash64(h + 1);
	}
	if (t->n + 1 >= UINT32_MAX)
		return -ENOMEM;
	if (sp_array_reserve((void **)&t->off, &t->cap, t->n + 2, sizeof(*t->off)))
		return -ENOMEM;
	int err = len ? sp_buf_append(&t->keys, key, len) : 0;
	if (!err)
		err = sp_map_put(&t->index, h, (uint32_t)t->n);
	if (err)
		return err;
	t->off[t->n] = t->keys.len - len;
	t->off[t->n + 1] = t->keys.len;
	*id = (uint32_t)t->n++;
	if (added)
		*added = true;
	return 0;
}

const void *sp_intern_key(const struct sp_intern *t, uint32_t id, size_t *len)
{
	*len = t->off[id + 1] - t->off[id];
	/* Only empty keys so far: no bytes are stored, and NULL + 0 is undefined in C. */
	return t->keys.data ? t->keys.data + t->off[id] : (const void *)"";
}
