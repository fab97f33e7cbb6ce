/* SPDX-License-Identifier: MIT */
/* Kernel function names from kallsyms, keeping only the symbols a spool's kernel frames need. */
#include "formats/formats.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* KSYM_NAME_LEN is 512 since Linux 6.1; a module name is at most 56 bytes. */
#define MAX_LINE 1024
/* /proc/kallsyms is ~20 MB on a large distribution kernel; a copy ten times that is not one. */
#define MAX_BYTES (256ull << 20)
#define NO_KEPT UINT32_MAX

/*
 * The needed addresses cut the address space into buckets: bucket j holds
 * the symbols x with A[j-1] < x <= A[j], bucket n those above every A.  A
 * bucket remembers only its highest text symbol (with its name) and the
 * lowest and highest address of any symbol, which is all that the nearest
 * symbol below an A and the next symbol above it depend on.  The file is
 * mostly sorted but module symbols are not, so nothing more can be assumed.
 */
struct bucket {
	uint64_t text_addr, any_min, any_max;
	char *text;         /* "name\0module\0", owned; module "" for vmlinux */
	size_t text_cap;
	uint8_t rank;       /* preference among symbols at one address, lower wins */
	bool has_text, has_any;
};

struct sp_kallsyms {
	uint64_t *addrs;    /* the needed addresses, sorted */
	uint32_t *sym_of;   /* by needed address: index into syms, or NO_KEPT */
	size_t n;
	struct sp_ksym *syms;
	size_t nsyms;
	struct sp_kallsyms_stats stats;
};

struct ksym_line {
	uint64_t addr;
	char type;
	const char *name, *module;
	size_t name_len, module_len;
};

/* "ADDRESS TYPE NAME" with an optional "[MODULE]"; false when the line is not that. */
static bool parse_line(const char *p, size_t len, struct ksym_line *out)
{
	const char *end = p + len;
	if (memchr(p, '\0', len))
		return false;
	if (end > p && end[-1] == '\r')
		end--;
	uint64_t addr = 0;
	bool digits = sp_text_parse_hex(&p, end, &addr);
	if (!digits || p == end || !sp_text_is_blank(*p))
		return false;
	while (p < end && sp_text_is_blank(*p))
		p++;
	if (p == end || !((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')))
		return false;
	out->type = *p++;
	if (p == end || !sp_text_is_blank(*p))
		return false;
	while (p < end && sp_text_is_blank(*p))
		p++;
	out->name = p;
	while (p < end && !sp_text_is_blank(*p))
		p++;
	out->name_len = (size_t)(p - out->name);
	if (!out->name_len)
		return false;
	while (p < end && sp_text_is_blank(*p))
		p++;
	out->module = NULL;
	out->module_len = 0;
	if (p < end) {
		if (*p != '[')
			return false;
		const char *m = ++p;
		while (p < end && *p != ']' && !sp_text_is_blank(*p))
			p++;
		if (p == end || *p != ']' || p == m)
			return false;
		out->module = m;
		out->module_len = (size_t)(p - m);
		for (p++; p < end && sp_text_is_blank(*p); p++)
			;
		if (p != end)
			return false;
	}
	out->addr = addr;
	return true;
}

static bool is_text(char t)
{
	return t == 't' || t == 'T' || t == 'w' || t == 'W';
}

/* Global before weak before local, as the global name is the one callers know. */
static uint8_t rank_of(const struct ksym_line *l)
{
	uint8_t r = l->type == 'T' ? 0 : l->type == 't' ? 2 : 1;
	/*
	 * x86's SYSCALL_DEFINE0 gives a 64-bit kernel's syscall both its name
	 * and a 32-bit compat alias at the same address (__x64_sys_getpid,
	 * __ia32_sys_getpid); the compat one comes first in kallsyms.
	 */
	uint8_t compat = l->name_len > 7 && !memcmp(l->name, "__ia32_", 7);
	/* Then fewer leading underscores: "ksys_read" over "__ksys_read" aliases. */
	size_t u = 0;
	while (u < l->name_len && l->name[u] == '_' && u < 15)
		u++;
	return (uint8_t)(r << 5 | compat << 4 | u);
}

static int set_text(struct bucket *b, const struct ksym_line *l, uint8_t rank)
{
	size_t need = l->name_len + 1 + l->module_len + 1;
	if (need > b->text_cap) {
		char *t = realloc(b->text, need);
		if (!t)
			return -ENOMEM;
		b->text = t;
		b->text_cap = need;
	}
	memcpy(b->text, l->name, l->name_len);
	b->text[l->name_len] = '\0';
	if (l->module_len)
		memcpy(b->text + l->name_len + 1, l->module, l->module_len);
	b->text[l->name_len + 1 + l->module_len] = '\0';
	b->text_addr = l->addr;
	b->rank = rank;
	b->has_text = true;
	return 0;
}

/* First index j with addrs[j] >= x (n when none). */
static size_t lower_bound(const uint64_t *a, size_t n, uint64_t x)
{
	return sp_partition_point(n, i, a[i] < x);
}

static int add_symbol(struct sp_kallsyms *k, struct bucket *buckets, const struct ksym_line *l)
{
	struct bucket *b = &buckets[lower_bound(k->addrs, k->n, l->addr)];
	if (!b->has_any || l->addr < b->any_min)
		b->any_min = l->addr;
	if (!b->has_any || l->addr > b->any_max)
		b->any_max = l->addr;
	b->has_any = true;
	/* Bucket n lies above every needed address: only its lowest address matters. */
	if (!is_text(l->type) || b == &buckets[k->n])
		return 0;
	uint8_t rank = rank_of(l);
	if (b->has_text && (l->addr < b->text_addr ||
			    (l->addr == b->text_addr && rank >= b->rank)))
		return 0;
	return set_text(b, l, rank);
}

static int read_file(struct sp_kallsyms *k, int fd, struct bucket *buckets, bool *usable)
{
	struct sp_line_reader r;
	int err = sp_line_reader_init(&r, fd, MAX_LINE, MAX_BYTES);
	if (err)
		return err;
	const char *line;
	size_t len;
	unsigned flags;
	while ((err = sp_line_reader_next(&r, &line, &len, &flags)) == 1) {
		k->stats.lines++;
		struct ksym_line l;
		if ((flags & SP_LINE_TOO_LONG) || !parse_line(line, len, &l)) {
			k->stats.malformed++;
			continue;
		}
		if (l.addr == 0) {
			/* kernel.kptr_restrict prints every address as 0: no position at all. */
			k->stats.zero_addresses++;
			continue;
		}
		if (l.type == 'a' || l.type == 'A')
			continue; /* absolute values (per-CPU offsets), not places in the text */
		if (is_text(l.type))
			*usable = true;
		if ((err = add_symbol(k, buckets, &l)))
			break;
	}
	k->stats.limited = r.limited;
	sp_line_reader_release(&r);
	return err < 0 ? err : 0;
}

/* From the buckets, the kept symbols and each needed address's symbol. */
static int select_symbols(struct sp_kallsyms *k, struct bucket *buckets)
{
	size_t n = k->n;
	uint64_t *next = malloc((n ? n : 1) * sizeof(*next));
	k->syms = calloc(n ? n : 1, sizeof(*k->syms));
	if (!next || !k->syms) {
		free(next);
		return -ENOMEM;
	}
	/* next[j]: the lowest symbol above A[j], in buckets j+1..n. */
	uint64_t lowest = UINT64_MAX;
	for (size_t j = n + 1; j-- > 0;) {
		if (j < n)
			next[j] = lowest;
		if (buckets[j].has_any && buckets[j].any_min < lowest)
			lowest = buckets[j].any_min;
	}
	size_t best = SIZE_MAX;  /* bucket of the highest text symbol at or below A[j] */
	uint64_t any_max = 0;
	bool any = false;
	uint32_t kept = NO_KEPT;
	for (size_t j = 0; j < n; j++) {
		struct bucket *b = &buckets[j];
		if (b->has_text)
			best = j;
		if (b->has_any && (!any || b->any_max > any_max)) {
			any_max = b->any_max;
			any = true;
		}
		k->sym_of[j] = NO_KEPT;
		/* A symbol of another kind between them ends the text symbol before A[j]. */
		if (best == SIZE_MAX || any_max != buckets[best].text_addr)
			continue;
		if (kept == NO_KEPT || k->syms[kept].addr != buckets[best].text_addr) {
			kept = (uint32_t)k->nsyms++;
			struct sp_ksym *s = &k->syms[kept];
			struct bucket *w = &buckets[best];
			s->addr = w->text_addr;
			s->end = next[j];
			s->name = w->text;
			const char *mod = w->text + strlen(w->text) + 1;
			s->module = *mod ? mod : NULL;
			w->text = NULL; /* now owned by syms */
		}
		k->sym_of[j] = kept;
		k->stats.resolved++;
	}
	k->stats.kept = k->nsyms;
	free(next);
	return 0;
}

int sp_kallsyms_load(const char *path, const uint64_t *addrs, size_t n,
		     struct sp_kallsyms **out)
{
	for (size_t i = 1; i < n; i++)
		if (addrs[i] <= addrs[i - 1])
			return -SP_E_BAD_ARG;
	if (n > UINT32_MAX - 1)
		return -SP_E_BAD_ARG;
	struct sp_kallsyms *k = calloc(1, sizeof(*k));
	struct bucket *buckets = calloc(n + 1, sizeof(*buckets));
	int err = -ENOMEM, fd = -1;
	if (!k || !buckets)
		goto fail;
	k->n = n;
	k->addrs = malloc((n ? n : 1) * sizeof(*k->addrs));
	k->sym_of = malloc((n ? n : 1) * sizeof(*k->sym_of));
	if (!k->addrs || !k->sym_of)
		goto fail;
	if (n)
		memcpy(k->addrs, addrs, n * sizeof(*addrs));
	/* O_NONBLOCK: a path naming a FIFO must not hang the report. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		err = -errno;
		goto fail;
	}
	bool usable = false;
	if ((err = read_file(k, fd, buckets, &usable)))
		goto fail;
	if (!usable && k->stats.zero_addresses) {
		k->stats.restricted = true;
		for (size_t j = 0; j < n; j++)
			k->sym_of[j] = NO_KEPT;
	} else if ((err = select_symbols(k, buckets))) {
		goto fail;
	}
	close(fd);
	for (size_t j = 0; j <= n; j++)
		free(buckets[j].text);
	free(buckets);
	*out = k;
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	if (buckets)
		for (size_t j = 0; j <= n; j++)
			free(buckets[j].text);
	free(buckets);
	sp_kallsyms_free(k);
	return err;
}

const struct sp_ksym *sp_kallsyms_find(const struct sp_kallsyms *k, uint64_t addr)
{
	size_t j = lower_bound(k->addrs, k->n, addr);
	if (j < k->n && k->addrs[j] == addr)
		return k->sym_of[j] == NO_KEPT ? NULL : &k->syms[k->sym_of[j]];
	/* Not a needed address: a kept symbol may still hold it. */
	size_t lo = sp_partition_point(k->nsyms, i, k->syms[i].addr <= addr);
	if (lo == 0 || addr >= k->syms[lo - 1].end)
		return NULL;
	return &k->syms[lo - 1];
}

const struct sp_kallsyms_stats *sp_kallsyms_stats(const struct sp_kallsyms *k)
{
	return &k->stats;
}

void sp_kallsyms_free(struct sp_kallsyms *k)
{
	if (!k)
		return;
	for (size_t i = 0; i < k->nsyms; i++)
		free((char *)k->syms[i].name);
	free(k->syms);
	free(k->addrs);
	free(k->sym_of);
	free(k);
}
