/* SPDX-License-Identifier: MIT */
/* Callchain splicing: perf's frame-pointer chain where DWARF stopped early, and thread roots. */
#include "record/record.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/*
 * Split perf's callchain at its context markers: kernel entries (when -k) into
 * kpcs as lookup addresses, and the user frame-pointer chain returned in place.
 */
size_t sp_callchain_split(const struct sp_perf_sample *s, uint64_t *kpcs, size_t max,
			  const uint64_t **user, size_t *nuser)
{
	size_t nk = 0;
	int ctx = 0; /* 1 kernel, 2 user (its entries are counted at its marker) */
	*user = NULL;
	*nuser = 0;
	for (uint64_t i = 0; i < s->nr_callchain; i++) {
		uint64_t ip;
		memcpy(&ip, &s->callchain[i], sizeof(ip));
		if (ip >= (uint64_t)PERF_CONTEXT_MAX) {
			ctx = ip == (uint64_t)PERF_CONTEXT_KERNEL ? 1 :
			      ip == (uint64_t)PERF_CONTEXT_USER ? 2 : 0;
			if (ctx == 2) {
				/* the user chain: up to the next marker, if any */
				uint64_t j = i + 1;
				*user = &s->callchain[j];
				for (; j < s->nr_callchain; j++) {
					memcpy(&ip, &s->callchain[j], sizeof(ip));
					if (ip >= (uint64_t)PERF_CONTEXT_MAX)
						break;
				}
				*nuser = (size_t)(j - i - 1);
				i = j - 1;
			}
			continue;
		}
		if (ctx == 1 && nk < max) {
			/* Like user frames: return addresses are looked up at ra - 1. */
			kpcs[nk] = nk == 0 ? ip : ip - 1;
			nk++;
		}
	}
	return nk;
}

/*
 * docs/DESIGN.md, decision 3: when DWARF stopped early, continue with the frame-pointer
 * chain only from where both chains hold the same return address.  Appends to
 * pcs[n..] and returns the new count; *used says whether a splice happened.
 * Spliced frames stop at the first address no module of p maps.
 */
size_t sp_callchain_splice(uint64_t *pcs, size_t n, struct sp_process *p, const uint64_t *user,
			   size_t nuser, bool *used, uint64_t *ignored)
{
	*used = false;
	if (n < 2 || !user) {
		*ignored += nuser;
		return n;
	}
	/*
	 * user[0] is the sampled IP, user[k] the k-th return address.  The chain
	 * is trusted only where it agrees with every DWARF frame they share, at
	 * one fixed shift d: a leaf that sets up no frame pointer makes the
	 * frame-pointer walk skip its caller (d = 1).  Agreement over the whole
	 * overlap, not one matching address, is the proof: in a recursion one
	 * return address repeats at every depth.
	 */
	size_t d = 0, j = 0;
	for (; d <= 2; d++) {
		if (n < 2 + d || nuser < 2)
			break;
		size_t last = n - 1 - d < nuser - 1 ? n - 1 - d : nuser - 1;
		bool agree = last >= 1;
		for (size_t k = 1; agree && k <= last; k++) {
			uint64_t v;
			memcpy(&v, &user[k], sizeof(v));
			agree = v == pcs[k + d] + 1;
		}
		if (agree) {
			j = n - 1 - d; /* user[j] is the DWARF chain's last frame */
			break;
		}
	}
	if (!j || j >= nuser) {
		*ignored += nuser;
		return n;
	}
	*ignored += j + 1;
	for (size_t k = j + 1; k < nuser && n < SP_RECORD_MAX_FRAMES; k++) {
		uint64_t v;
		memcpy(&v, &user[k], sizeof(v));
		if (!v || !sp_process_find(p, v - 1))
			break;
		pcs[n++] = v - 1;
		*used = true;
	}
	return n;
}

/* Index of tid's chain: the one found last, or from the index. */
static bool chain_of(struct sp_root_chains *rc, uint32_t tid, uint32_t *idx)
{
	if (rc->hint < rc->n && rc->hint_tid == tid) {
		*idx = (uint32_t)rc->hint;
		return true;
	}
	if (!sp_map_get(&rc->index, tid, idx))
		return false;
	rc->hint = *idx;
	rc->hint_tid = tid;
	return true;
}

/* Remember the root end of a thread's latest complete stack (128 bytes copied). */
void sp_root_chains_remember(struct sp_root_chains *rc, uint32_t tid, const uint64_t *pcs, size_t n)
{
	uint32_t idx;
	if (n < 2)
		return;
	if (chain_of(rc, tid, &idx)) {
		struct sp_root_chain *c = &rc->chains[idx];
		c->n = n < SP_ROOT_CHAIN_MAX ? (uint32_t)n : SP_ROOT_CHAIN_MAX;
		memcpy(c->pcs, pcs + n - c->n, c->n * sizeof(uint64_t));
		return;
	}
	if (sp_array_reserve((void **)&rc->chains, &rc->cap, rc->n + 1, sizeof(*rc->chains)))
		return;
	struct sp_root_chain *c = &rc->chains[rc->n];
	c->n = n < SP_ROOT_CHAIN_MAX ? (uint32_t)n : SP_ROOT_CHAIN_MAX;
	memcpy(c->pcs, pcs + n - c->n, c->n * sizeof(uint64_t));
	if (!sp_map_put(&rc->index, tid, (uint32_t)rc->n))
		rc->n++;
}

void sp_root_chains_forget(struct sp_root_chains *rc, uint32_t tid)
{
	uint32_t idx;
	if (chain_of(rc, tid, &idx))
		rc->chains[idx].n = 0;
}

/*
 * A spliced stack ends where the frame-pointer chain ends, often in start-up
 * code that keeps no frame pointer.  A thread's outermost frames do not change
 * while the frames above them live, so when the stack's last frame occurs
 * exactly once in the thread's remembered complete stack, the frames below it
 * there are this stack's too.  Returns true when the root was reached.
 */
bool sp_root_chains_complete(struct sp_root_chains *rc, uint32_t tid, uint64_t *pcs,
			     size_t *n)
{
	uint32_t idx;
	if (!*n || !chain_of(rc, tid, &idx))
		return false;
	const struct sp_root_chain *c = &rc->chains[idx];
	uint64_t last = pcs[*n - 1];
	size_t at = SIZE_MAX;
	for (size_t i = 0; i < c->n; i++) {
		if (c->pcs[i] != last)
			continue;
		if (at != SIZE_MAX)
			return false; /* twice: no unique meeting point */
		at = i;
	}
	if (at == SIZE_MAX)
		return false;
	for (size_t i = at + 1; i < c->n && *n < SP_RECORD_MAX_FRAMES; i++)
		pcs[(*n)++] = c->pcs[i];
	return true;
}

void sp_root_chains_init(struct sp_root_chains *rc)
{
	memset(rc, 0, sizeof(*rc));
	rc->hint = SIZE_MAX;
	sp_map_init(&rc->index);
}

void sp_root_chains_release(struct sp_root_chains *rc)
{
	sp_map_release(&rc->index);
	free(rc->chains);
	sp_root_chains_init(rc); /* empty, the hint with it */
}
