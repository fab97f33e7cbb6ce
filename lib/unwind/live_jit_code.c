/* SPDX-License-Identifier: MIT */
/* Generated code of one live process: function entries and code bytes for frames proven from code. */
#include "unwind/unwind.h"
#include "formats/formats.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

/*
 * JIT code without CFI proven from its code, at record time
 * (docs/DESIGN.md, decision 4).  A frame in anonymous executable memory
 * is proven from the instructions between its function's entry and the pc
 * (lib/unwind/codeframe.c).  The entry comes from one of two places, never from a
 * scan backwards (which cannot tell code from data):
 *
 *  - the process's perf map (/tmp/perf-PID.map, or in a container its
 *    /tmp/perf-NSPID.map through /proc/PID/root; the JIT interface of
 *    Linux tools/perf/Documentation/jit-interface.txt): the start of the
 *    function whose line covers the pc;
 *  - a trampoline arena: a region that is nothing but copies of one short
 *    straight-line function laid out back to back at a fixed stride, as
 *    CPython 3.12/3.13 fill theirs for -X perf (11-byte trampolines, at an
 *    11-byte stride in 3.12 and a 16-byte one in 3.13).  The region's first
 *    copy gives the template and its stride (checked against the second
 *    copy); the copy holding the pc is checked byte for byte.
 *
 * Code bytes are read once per entry with process_vm_readv(2) and kept until
 * an executable mapping over them arrives or the perf map changes (JIT code
 * is rewritten in place only after such a change).
 */

#define CODE_MAX 4096       /* bytes read per function: a pc further in proves nothing */
#define ARENA_PROBE 64      /* bytes read at a region's start to recognise an arena */
#define MAP_RECHECK 1024    /* look at the perf map's size every this many lookups */
#define MAP_DIR "/tmp"
#define ROW_CACHE 256       /* rows proven from code, two ways a set, the set by pc */
/*
 * What of a live process's perf map is read at record time: a map that grows
 * without end (a target's own choice) cost the recorder memory in step with
 * it (114 MB for a 156 MB map in 3 s) and, re-parsed whole, lost samples.
 * Past this the map is cut once, counted, and never read again while the
 * process lives; the report reads it (to its own bound) for names.
 */
#define LIVE_MAP_MAX_BYTES ((uint64_t)8 << 20)
#define LIVE_MAP_MAX_LINES ((size_t)1 << 17)

/* Live perf maps cut at LIVE_MAP_MAX_BYTES or _LINES, this process's whole run. */
static uint64_t maps_cut;

struct jit_fn {
	uint64_t entry;
	uint32_t pool_off, len; /* len 0: the bytes could not be read */
};

struct jit_arena {
	uint32_t stride, len; /* stride 0: the region is not an arena */
};

/* A row proven from the bytes read, for pc in [start, end): valid while gen is the code's. */
struct jit_row {
	uint64_t pc, start, end;
	uint32_t gen;
	bool after_call;
	bool had_line; /* the perf map read has a line covering pc (or ra - 1) */
	bool none;     /* no row: the code proves nothing at pc (a branch before it, say) */
	struct sp_cfi_row row;
};

struct sp_jit_code {
	pid_t pid;
	char map_path[128];     /* /tmp/perf-PID.map, or in a container its own, through its root */
	uint64_t not_before_us; /* the process's start: older maps belong to someone else */
	struct sp_perf_map map;
	int64_t map_size;       /* file size when the map was read; -1: never read */
	uint32_t since_check;   /* lookups since the map's size was looked at */
	bool map_tried;
	bool map_cut;           /* read to LIVE_MAP_MAX_*: not read again */
	struct sp_pace map_pace; /* a grown map, re-parsed whole, gets a tenth of the recorder */
	struct sp_map fn_index; /* entry -> index into fns */
	struct jit_fn *fns;
	size_t nfns, fns_cap;
	uint8_t *pool;
	size_t pool_len, pool_cap;
	struct sp_map arena_index; /* region start -> index into arenas */
	struct jit_arena *arenas;
	size_t narenas, arenas_cap;
	struct sp_jitdump_cfi *jitdump; /* NULL: the process maps none (or it failed the checks) */
	bool jitdump_tried;
	/*
	 * The same pc is proven again in sample after sample (a hot loop's
	 * frames): decoding from the entry cost node's recording half its
	 * CPU.  A row depends only on the code bytes kept, the perf map read
	 * and the mapping, so it stands until forget_code.
	 */
	uint32_t code_gen; /* starts at 1: a zeroed entry is empty */
	struct jit_row rows[ROW_CACHE];
};

struct sp_jit_code *sp_jit_code_new(pid_t pid)
{
	struct sp_jit_code *j = calloc(1, sizeof(*j));
	if (!j)
		return NULL;
	j->pid = pid;
	j->not_before_us = sp_pid_start_us(pid);
	int32_t nspid;
	if (sp_pid_perf_map_path(pid, j->map_path, sizeof(j->map_path), &nspid) != 1)
		snprintf(j->map_path, sizeof(j->map_path), MAP_DIR "/perf-%d.map", (int)pid);
	j->map_size = -1;
	j->code_gen = 1;
	sp_perf_map_init(&j->map);
	sp_map_init(&j->fn_index);
	sp_map_init(&j->arena_index);
	return j;
}

static void forget_code(struct sp_jit_code *j)
{
	sp_map_release(&j->fn_index);
	sp_map_init(&j->fn_index);
	sp_map_release(&j->arena_index);
	sp_map_init(&j->arena_index);
	j->nfns = j->narenas = j->pool_len = 0;
	j->code_gen++;
}

void sp_jit_code_invalidate(struct sp_jit_code *j, uint64_t start, uint64_t end)
{
	if (!j)
		return;
	bool hit = false;
	for (size_t i = 0; i < j->nfns && !hit; i++)
		hit = j->fns[i].entry >= start && j->fns[i].entry < end;
	for (size_t i = 0; i < j->arena_index.cap && !hit; i++)
		hit = j->arena_index.slots[i].used && j->arena_index.slots[i].key >= start &&
		      j->arena_index.slots[i].key < end;
	if (hit)
		forget_code(j);
}

void sp_jit_code_free(struct sp_jit_code *j)
{
	if (!j)
		return;
	forget_code(j);
	sp_map_release(&j->fn_index);
	sp_map_release(&j->arena_index);
	sp_perf_map_release(&j->map);
	sp_jitdump_cfi_free(j->jitdump);
	free(j->fns);
	free(j->pool);
	free(j->arenas);
	free(j);
}

int sp_jit_code_use_jitdump(struct sp_jit_code *j, const char *path)
{
	if (j->jitdump_tried)
		return 0;
	j->jitdump_tried = true;
	uint32_t uid;
	int64_t owner = sp_pid_euid(j->pid, &uid) ? SP_PERF_MAP_OWNER_UNKNOWN : (int64_t)uid;
	/* The path is the process's own: through its root, it names the same file in a container. */
	char at[4096 + 64];
	if (path[0] != '/' ||
	    snprintf(at, sizeof(at), "/proc/%d/root%s", (int)j->pid, path) >= (int)sizeof(at))
		return -ENOENT;
	return sp_jitdump_cfi_open(at, owner, j->not_before_us, &j->jitdump);
}

bool sp_jit_code_has_jitdump(const struct sp_jit_code *j)
{
	return j->jitdump_tried;
}

uint64_t sp_jit_code_jitdump_rows(const struct sp_jit_code *j)
{
	return j && j->jitdump ? sp_jitdump_cfi_stats(j->jitdump)->rows : 0;
}

size_t sp_target_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = {.iov_base = buf, .iov_len = len};
	struct iovec remote = {.iov_base = (void *)(uintptr_t)addr, .iov_len = len};
	ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	return n > 0 ? (size_t)n : 0;
}

/* (Re)read the perf map when its size changed (it only grows while the process lives). */
static void refresh_map(struct sp_jit_code *j)
{
	struct stat st;
	j->since_check = 0;
	if (j->map_cut || lstat(j->map_path, &st) || st.st_size == j->map_size)
		return;
	uint64_t start;
	if (!sp_pace_begin(&j->map_pace, &start)) {
		/* A grown map waits its turn: look again 16 lookups on, not MAP_RECHECK. */
		j->since_check = MAP_RECHECK - 16;
		return;
	}
	struct sp_perf_map m;
	unsigned verdict;
	sp_perf_map_init(&m);
	/* The process's user now: only its map (or root's) may name its code. */
	uint32_t uid;
	int64_t owner = sp_pid_euid(j->pid, &uid) ? SP_PERF_MAP_OWNER_UNKNOWN : (int64_t)uid;
	int fd;
	int err = sp_perf_map_open(j->map_path, owner, j->not_before_us, &verdict, &fd);
	if (!err && fd >= 0) {
		const struct sp_perf_map_limits lim = {.max_bytes = LIVE_MAP_MAX_BYTES,
						       .max_lines = LIVE_MAP_MAX_LINES};
		err = sp_perf_map_read_fd(&m, fd, &lim);
		close(fd);
	}
	sp_pace_end(&j->map_pace, start);
	if (!err && verdict == SP_PERF_MAP_USED && m.stats.limited) {
		j->map_cut = true;
		__atomic_add_fetch(&maps_cut, 1, __ATOMIC_RELAXED);
	}
	if (err || verdict != SP_PERF_MAP_USED) {
		sp_perf_map_release(&m);
		return;
	}
	sp_perf_map_release(&j->map);
	j->map = m;
	j->map_size = st.st_size;
	/* A later line may name new code at an old address: read the bytes again. */
	forget_code(j);
}

bool sp_jit_code_read_map(struct sp_jit_code *j)
{
	j->map_pace = (struct sp_pace){0};
	j->map_tried = true;
	refresh_map(j);
	return j->map_size >= 0;
}

/* Index in fns of the function at entry, its bytes read (at most len) on first use; -1: no memory. */
static ptrdiff_t code_at(struct sp_jit_code *j, uint64_t entry, size_t len)
{
	uint32_t idx;
	if (sp_map_get(&j->fn_index, entry, &idx))
		return idx;
	if (len > CODE_MAX)
		len = CODE_MAX;
	if (sp_array_reserve((void **)&j->fns, &j->fns_cap, j->nfns + 1,
			     sizeof(*j->fns)))
		return -1;
	if (sp_array_reserve((void **)&j->pool, &j->pool_cap, j->pool_len + len, 1))
		return -1;
	struct jit_fn *f = &j->fns[j->nfns];
	f->entry = entry;
	f->pool_off = (uint32_t)j->pool_len;
	f->len = (uint32_t)sp_target_read(j->pid, entry, j->pool + j->pool_len, len);
	if (sp_map_put(&j->fn_index, entry, (uint32_t)j->nfns))
		return -1;
	j->pool_len += f->len;
	return (ptrdiff_t)j->nfns++;
}

/* Recognise (once per region) a trampoline arena; NULL when the region is none. */
static const struct jit_arena *arena_of(struct sp_jit_code *j, uint64_t start, uint64_t end)
{
	uint32_t idx;
	if (sp_map_get(&j->arena_index, start, &idx))
		return j->arenas[idx].stride ? &j->arenas[idx] : NULL;
	uint8_t b[ARENA_PROBE];
	size_t n = sp_target_read(j->pid, start, b, end - start < sizeof(b) ? end - start : sizeof(b));
	struct jit_arena a = {0};
	size_t len = sp_codeframe_return_end(b, n);
	for (size_t stride = len; len && stride <= (len + 15) / 16 * 16; stride++) {
		/* The gap between copies must hold padding only: zeros or int3. */
		bool pad = stride + len <= n;
		for (size_t i = len; pad && i < stride; i++)
			pad = b[i] == 0 || b[i] == 0xcc;
		if (pad && !memcmp(b, b + stride, len)) {
			a.stride = (uint32_t)stride;
			a.len = (uint32_t)len;
			break;
		}
	}
	if (sp_array_reserve((void **)&j->arenas, &j->arenas_cap, j->narenas + 1,
			     sizeof(*j->arenas)))
		return NULL;
	j->arenas[j->narenas] = a;
	if (sp_map_put(&j->arena_index, start, (uint32_t)j->narenas))
		return NULL;
	j->narenas++;
	return a.stride ? &j->arenas[j->narenas - 1] : NULL;
}

/* Does c hold the row proven (or not) at pc in [start, end) from the code kept now? */
static inline bool row_known(const struct sp_jit_code *j, const struct jit_row *c, uint64_t pc,
			     bool after_call, uint64_t start, uint64_t end)
{
	return c->gen == j->code_gen && c->pc == pc && c->after_call == after_call &&
	       c->start == start && c->end == end;
}

/* sp_jit_code_row past its jitdump, for a pc not proven before or when the map is due a look. */
static __attribute__((noinline)) const struct sp_cfi_row *
row_slow(struct sp_jit_code *j, uint64_t start, uint64_t end, uint64_t pc, bool after_call,
	 struct jit_row *c, struct sp_cfi_row *out)
{
	uint64_t at = after_call ? pc - 1 : pc, entry, size;
	/*
	 * A pc proven before needs no perf map lookup either: whether the map
	 * had a line for it is kept (had_line), since a map read anew forgets
	 * the code.  The map is looked at again exactly when it would be.
	 */
	bool known = row_known(j, c, pc, after_call, start, end);
	const struct sp_perf_map_range *r = known ? NULL : sp_perf_map_find(&j->map, at);
	bool had_line = known ? c->had_line : r != NULL;
	/* New code gets its line before it runs: look again on a miss, now and then. */
	if (++j->since_check >= MAP_RECHECK || !j->map_tried || (!had_line && j->since_check >= 16)) {
		j->map_tried = true;
		refresh_map(j);
		known = known && c->gen == j->code_gen;
		r = known ? NULL : sp_perf_map_find(&j->map, at);
	}
	if (known) {
		if (c->none)
			return NULL;
		*out = c->row;
		return out;
	}
	had_line = r != NULL;
	/* A line whose function reaches outside the mapping describes some other code. */
	if (r && r->sym_start >= start && r->sym_size <= end - r->sym_start &&
	    at - r->sym_start < r->sym_size) {
		entry = r->sym_start;
		size = r->sym_size;
	} else {
		const struct jit_arena *a = arena_of(j, start, end);
		if (!a)
			return NULL;
		entry = start + (at - start) / a->stride * a->stride;
		size = a->len;
		if (size > end - entry)
			return NULL;
		r = NULL;
	}
	/* pool offsets are 32-bit: start over rather than let them wrap (two reads follow) */
	if (j->pool_len > UINT32_MAX - 2 * CODE_MAX)
		forget_code(j);
	ptrdiff_t fi = code_at(j, entry, size), ti = fi;
	if (fi >= 0 && !r)
		ti = code_at(j, start, size); /* an arena copy: it must be the template */
	if (fi < 0 || ti < 0)
		return NULL;
	const struct jit_fn *f = &j->fns[fi], *t = &j->fns[ti];
	*c = (struct jit_row){.pc = pc, .start = start, .end = end, .gen = j->code_gen,
			      .after_call = after_call, .had_line = had_line, .none = true};
	if (!f->len || t->len != f->len ||
	    (fi != ti && memcmp(j->pool + t->pool_off, j->pool + f->pool_off, f->len)))
		return NULL;
	if (sp_codeframe_row(j->pool + f->pool_off, f->len, pc - entry, after_call, out))
		return NULL;
	c->none = false;
	c->row = *out;
	return out;
}

const struct sp_cfi_row *sp_jit_code_row(struct sp_jit_code *j, uint64_t start, uint64_t end,
					 uint64_t pc, bool after_call, struct sp_cfi_row *out)
{
	/* A return address may end its function (a call as the last instruction): look up ra - 1. */
	uint64_t at = after_call ? pc - 1 : pc;
	if (at < start || at >= end)
		return NULL;
	/* The runtime's own unwinding information, where it wrote some, is exact. */
	if (j->jitdump && sp_jitdump_cfi_row(j->jitdump, pc, after_call, out))
		return out;
	/*
	 * Most lookups are of a pc proven (or not) before, with the perf map not
	 * due for a look (row_slow's test, with the count not yet taken): the
	 * row kept, and nothing else.
	 */
	struct jit_row *c = &j->rows[(sp_hash64(pc) ^ after_call) % ROW_CACHE & ~(size_t)1];
	/*
	 * Two ways: two pcs of one stack that share a set were proven again at
	 * every sample, one over the other (two of node's, 1,483 times each in
	 * 5 s).  A miss moves the first way's row to the second and takes the
	 * first (row_slow fills c).
	 */
	bool known = row_known(j, c, pc, after_call, start, end);
	if (!known && (known = row_known(j, c + 1, pc, after_call, start, end)))
		c++;
	else if (!known)
		c[1] = c[0];
	if (known && j->map_tried &&
	    j->since_check + 1 < MAP_RECHECK && (c->had_line || j->since_check + 1 < 16)) {
		j->since_check++;
		if (c->none)
			return NULL;
		*out = c->row;
		return out;
	}
	return row_slow(j, start, end, pc, after_call, c, out);
}

uint64_t sp_jit_perf_maps_cut(void)
{
	return __atomic_load_n(&maps_cut, __ATOMIC_RELAXED);
}
