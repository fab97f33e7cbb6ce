/* SPDX-License-Identifier: MIT */
/* pprof export: the Profile message of pprof's profile.proto, protobuf-encoded and gzip'd. */
#include "report/export.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* Field numbers of github.com/google/pprof proto/profile.proto (package perftools.profiles). */
enum {
	PROFILE_SAMPLE_TYPE = 1,
	PROFILE_SAMPLE = 2,
	PROFILE_MAPPING = 3,
	PROFILE_LOCATION = 4,
	PROFILE_FUNCTION = 5,
	PROFILE_STRING_TABLE = 6,
	PROFILE_TIME_NANOS = 9,
	PROFILE_DURATION_NANOS = 10,
	PROFILE_PERIOD_TYPE = 11,
	PROFILE_PERIOD = 12,
	PROFILE_COMMENT = 13,
	PROFILE_DEFAULT_SAMPLE_TYPE = 14,
};
enum { VALUE_TYPE_TYPE = 1, VALUE_TYPE_UNIT = 2 };
enum { SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE = 2, SAMPLE_LABEL = 3 };
enum { LABEL_KEY = 1, LABEL_STR = 2, LABEL_NUM = 3 };
enum {
	MAPPING_ID = 1,
	MAPPING_MEMORY_START = 2,
	MAPPING_MEMORY_LIMIT = 3,
	MAPPING_FILE_OFFSET = 4,
	MAPPING_FILENAME = 5,
	MAPPING_BUILD_ID = 6,
	MAPPING_HAS_FUNCTIONS = 7,
	MAPPING_HAS_FILENAMES = 8,
	MAPPING_HAS_LINE_NUMBERS = 9,
	MAPPING_HAS_INLINE_FRAMES = 10,
};
enum { LOCATION_ID = 1, LOCATION_MAPPING_ID = 2, LOCATION_ADDRESS = 3, LOCATION_LINE = 4 };
enum { LINE_FUNCTION_ID = 1, LINE_LINE = 2 };
enum { FUNCTION_ID = 1, FUNCTION_NAME = 2, FUNCTION_SYSTEM_NAME = 3, FUNCTION_FILENAME = 4 };

/* Protobuf wire types: profile.proto needs only varints and length-delimited fields. */
enum { WIRE_VARINT = 0, WIRE_LEN = 2 };

static int pb_key(struct sp_buf *b, unsigned field, unsigned wire)
{
	return sp_buf_put_uvarint(b, (uint64_t)field << 3 | wire);
}

/*
 * A varint field (uint64, int64 as its two's complement, bool).  Zero is
 * proto3's default and is left out, as proto3 encoders do.
 */
static int pb_varint(struct sp_buf *b, unsigned field, uint64_t v)
{
	if (!v)
		return 0;
	int err = pb_key(b, field, WIRE_VARINT);
	return err ? err : sp_buf_put_uvarint(b, v);
}

/* A length-delimited field: a string, bytes, an embedded message or a packed array. */
static int pb_bytes(struct sp_buf *b, unsigned field, const void *p, size_t n)
{
	int err = pb_key(b, field, WIRE_LEN);
	if (!err)
		err = sp_buf_put_uvarint(b, n);
	return err ? err : sp_buf_append(b, p, n);
}

static int pb_message(struct sp_buf *b, unsigned field, const struct sp_buf *msg)
{
	return pb_bytes(b, field, msg->data, msg->len);
}

/* Flags of a mapping, from the lines of its locations. */
enum {
	MAP_USED = 1u << 0,
	MAP_FILENAMES = 1u << 1,
	MAP_LINE_NUMBERS = 1u << 2,
	MAP_INLINE_FRAMES = 1u << 3,
};

/* A location without an address: the truncation marker, an interval's cause frame. */
enum { LOC_CODE, LOC_TRUNCATED, LOC_BLOCKED, LOC_PREEMPTED };

/* One Location: a distinct (module, address), or a marker (LOC_*). */
struct loc {
	uint32_t frame_id; /* the first frame met there; it names the location */
	uint32_t module;   /* spool module id, or SP_NO_MODULE */
	uint32_t marker;   /* LOC_* */
};

struct loc_key {
	uint32_t module;
	uint32_t marker;
	uint64_t addr;
};

struct pprof {
	struct sp_agg *a;
	const struct sp_spool *s;
	struct sp_intern strings;   /* the string table: id = index, "" first */
	struct sp_intern modnames;  /* module display names, only to keep functions apart */
	struct sp_intern functions; /* (name, file, module) string ids -> function id - 1 */
	struct sp_intern locations; /* struct loc_key -> location id - 1 */
	struct sp_intern groups;    /* (thread index, stack id, LOC_* cause) -> sample */
	struct loc *locs;
	size_t locs_cap;
	uint64_t *group_count;
	size_t groups_cap;
	uint32_t *frame_loc; /* by frame id: location index + 1, 0 before the frame is met */
	uint32_t *mapping;   /* by module id: mapping id, 0 = no location in that module */
	uint8_t *map_flags;  /* by module id: MAP_* */
	struct sp_buf clean, sub, packed; /* scratch */
	struct sp_buf samples, mappings, locations_msg, functions_msg, tail, profile;
	struct gz *gz;       /* the output: samples are compressed as they are made */
	/*
	 * Samples past the output budget are left out: an eighth of
	 * sp_export_output_budget in encoded bytes, for a frame here takes a
	 * varint of 1-3 bytes, not a line of text (and all of it is deflated).
	 */
	uint64_t encoded, samples_all, samples_left_out;
};

/*
 * The message through zlib with a gzip wrapper (pprof files are gzip'd on
 * disk), fed piece by piece so the samples never sit in memory whole.
 */
struct gz {
	z_stream z;
	unsigned char *chunk;
	FILE *out;
	bool open;
};

enum { GZ_CHUNK = 65536 };

static int gz_open(struct gz *g, FILE *out)
{
	memset(g, 0, sizeof(*g));
	g->out = out;
	/* windowBits 15 + 16: a gzip header (mtime 0, so output is reproducible) and trailer. */
	if (!(g->chunk = malloc(GZ_CHUNK)))
		return -ENOMEM;
	/* Level 1: samples repeat whole location lists, which the fastest level squeezes well. */
	if (deflateInit2(&g->z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	g->open = true;
	return 0;
}

/* Compress buf's bytes (and empty buf); with finish, end the stream. */
static int gz_put(struct gz *g, struct sp_buf *buf, bool finish)
{
	const uint8_t *in = buf->data;
	size_t left = buf->len;
	int err = 0, zerr;
	do {
		/* avail_in is 32 bits: feed at most 1 GiB at a time, Z_FINISH with the last. */
		size_t take = left < (1u << 30) ? left : (1u << 30);
		g->z.next_in = (Bytef *)in;
		g->z.avail_in = (uInt)take;
		in += take;
		left -= take;
		int flush = left || !finish ? Z_NO_FLUSH : Z_FINISH;
		do {
			g->z.next_out = g->chunk;
			g->z.avail_out = GZ_CHUNK;
			zerr = deflate(&g->z, flush);
			size_t n = GZ_CHUNK - g->z.avail_out;
			if (zerr == Z_STREAM_ERROR)
				err = -SP_E_BAD_ARG;
			else if (n && fwrite(g->chunk, 1, n, g->out) != n)
				err = -EIO;
		} while (!err && (g->z.avail_out == 0 || (flush == Z_FINISH && zerr != Z_STREAM_END)));
	} while (!err && left);
	buf->len = 0;
	return err;
}

static void gz_close(struct gz *g)
{
	if (g->open)
		deflateEnd(&g->z);
	free(g->chunk);
	memset(g, 0, sizeof(*g));
}

/* String table index of the clean text in p->clean. */
static int clean_id(struct pprof *p, uint64_t *id)
{
	uint32_t v;
	int err = sp_intern(&p->strings, p->clean.data, p->clean.len, &v, NULL);
	if (!err)
		*id = v;
	return err;
}

/*
 * String table index of s, made valid UTF-8 (proto3 strings must be): for
 * our own text and the symbolizer's names, which are escaped already.
 */
static int str_id(struct pprof *p, const char *s, uint64_t *id)
{
	p->clean.len = 0;
	int err = sp_buf_put_utf8(&p->clean, s ? s : "");
	return err ? err : clean_id(p, id);
}

/*
 * String table index of s as the spool has it (a thread name, a module
 * path, the command), escaped as the symbolizer escapes names: `go tool
 * pprof -tags` and `-raw` print them to a terminal.
 */
static int raw_str_id(struct pprof *p, const char *s, uint64_t *id)
{
	p->clean.len = 0;
	int err = sp_buf_put_printable(&p->clean, s ? s : "");
	return err ? err : clean_id(p, id);
}

/* Location index of a frame, made on first use. */
static int location_of(struct pprof *p, uint32_t frame_id, uint32_t *index)
{
	if (p->frame_loc[frame_id]) {
		*index = p->frame_loc[frame_id] - 1;
		return 0;
	}
	const struct sp_frame *fr = sp_spool_frame(p->s, frame_id);
	struct loc_key key;
	memset(&key, 0, sizeof(key));
	key.module = SP_NO_MODULE;
	if (fr->mode == SP_FRAME_TRUNCATED) {
		/* Every marker is one "[truncated]" location, as in the folded view. */
		key.marker = LOC_TRUNCATED;
	} else {
		if (fr->module_id < sp_spool_module_count(p->s))
			key.module = fr->module_id;
		key.addr = fr->abs_ip;
	}
	uint32_t v;
	bool added;
	int err = sp_intern(&p->locations, &key, sizeof(key), &v, &added);
	if (!err && added)
		err = sp_array_reserve((void **)&p->locs, &p->locs_cap, (size_t)v + 1, sizeof(*p->locs));
	if (err)
		return err;
	if (added) {
		p->locs[v] = (struct loc){.frame_id = frame_id, .module = key.module,
					  .marker = key.marker};
		if (key.module != SP_NO_MODULE)
			p->map_flags[key.module] |= MAP_USED;
	}
	p->frame_loc[frame_id] = v + 1;
	*index = v;
	return 0;
}

/* The location of an interval's cause frame (LOC_BLOCKED, LOC_PREEMPTED), made on first use. */
static int cause_location(struct pprof *p, uint32_t cause, uint32_t *index)
{
	struct loc_key key;
	memset(&key, 0, sizeof(key));
	key.module = SP_NO_MODULE;
	key.marker = cause;
	bool added;
	int err = sp_intern(&p->locations, &key, sizeof(key), index, &added);
	if (!err && added)
		err = sp_array_reserve((void **)&p->locs, &p->locs_cap, (size_t)*index + 1,
				       sizeof(*p->locs));
	if (!err && added)
		p->locs[*index] = (struct loc){.module = SP_NO_MODULE, .marker = cause};
	return err;
}

/* Function id of one line, made on first use. */
static int function_of(struct pprof *p, const struct sp_resolved_frame *rf, uint64_t *id)
{
	uint64_t name, file;
	uint32_t key[3], v;
	int err = str_id(p, rf->name, &name);
	if (!err)
		err = str_id(p, rf->file, &file);
	if (!err)
		err = sp_intern(&p->modnames, rf->module ? rf->module : "",
				strlen(rf->module ? rf->module : ""), &key[2], NULL);
	if (err)
		return err;
	key[0] = (uint32_t)name;
	key[1] = (uint32_t)file;
	if ((err = sp_intern(&p->functions, key, sizeof(key), &v, NULL)))
		return err;
	*id = (uint64_t)v + 1;
	return 0;
}

static int value_type(struct pprof *p, struct sp_buf *msg, unsigned field, const char *type,
		      const char *unit)
{
	uint64_t t, u;
	int err = str_id(p, type, &t);
	if (!err)
		err = str_id(p, unit, &u);
	if (err)
		return err;
	p->sub.len = 0;
	if ((err = pb_varint(&p->sub, VALUE_TYPE_TYPE, t)) ||
	    (err = pb_varint(&p->sub, VALUE_TYPE_UNIT, u)))
		return err;
	return pb_message(msg, field, &p->sub);
}

/* Append a Label to the Sample msg: a number, or a string (a thread name) when str is not NULL. */
static int label(struct pprof *p, struct sp_buf *msg, const char *key, const char *str, int64_t num)
{
	uint64_t k, s = 0;
	int err = str_id(p, key, &k);
	if (!err && str)
		err = raw_str_id(p, str, &s);
	if (err)
		return err;
	p->sub.len = 0;
	if ((err = pb_varint(&p->sub, LABEL_KEY, k)))
		return err;
	err = str ? pb_varint(&p->sub, LABEL_STR, s)
		  : pb_varint(&p->sub, LABEL_NUM, (uint64_t)num);
	return err ? err : pb_message(msg, SAMPLE_LABEL, &p->sub);
}

/*
 * Add one sample (cause LOC_CODE) or interval (LOC_BLOCKED, LOC_PREEMPTED) of
 * thread at stack sid weighing w to its (thread, stack, cause) group.
 */
static int group_add(struct pprof *p, uint32_t thread, uint32_t sid, uint32_t cause, uint64_t w)
{
	/* Stacks spelled twice in the spool (same frames) are one sample. */
	uint32_t key[3] = {thread, sid ? p->a->stack_canon[sid] : 0, cause};
	uint32_t g;
	bool added;
	int err = sp_intern(&p->groups, key, sizeof(key), &g, &added);
	if (!err && added)
		err = sp_array_reserve((void **)&p->group_count, &p->groups_cap, (size_t)g * 2 + 2,
				       sizeof(*p->group_count));
	if (err)
		return err;
	if (added)
		p->group_count[2 * g] = p->group_count[2 * g + 1] = 0;
	p->group_count[2 * g]++;
	p->group_count[2 * g + 1] += w;
	return 0;
}

/*
 * Group the samples by (thread, stack): one Sample each, with the count and
 * weight; with a time metric the off-CPU intervals too, weights in ns.
 */
static int group_samples(struct pprof *p)
{
	const struct sp_agg *a = p->a;
	size_t n = sp_spool_sample_count(p->s);
	int err = 0;
	for (size_t i = 0; !err && i < n; i++) {
		if (!sp_agg_kept(a, i))
			continue; /* filtered out */
		const struct sp_sample *smp = sp_spool_sample(p->s, i);
		uint32_t sid = smp->stack_id < a->nstacks ? smp->stack_id : 0;
		err = group_add(p, smp->thread, sid, LOC_CODE,
				a->metric != SP_METRIC_CPU ? a->unit.period : sp_sample_weight(&a->unit, smp));
	}
	for (size_t i = 0; !err && a->metric != SP_METRIC_CPU && i < sp_spool_offcpu_count(p->s); i++) {
		const struct sp_offcpu *o = sp_spool_offcpu(p->s, i);
		/* Under its cause frame, as in every other view: off-CPU time never merges with CPU time. */
		if (sp_agg_interval_kept(a, o))
			err = group_add(p, o->thread, o->stack_id < a->nstacks ? o->stack_id : 0,
					o->flags & SP_OFFCPU_PREEMPTED ? LOC_PREEMPTED : LOC_BLOCKED,
					o->duration_ns);
	}
	return err;
}

static int encode_samples(struct pprof *p, uint64_t scale)
{
	struct sp_buf msg;
	sp_buf_init(&msg);
	int err = 0;
	uint64_t budget = sp_export_output_budget(p->s) / 8;
	for (uint32_t g = 0; !err && g < p->groups.n; g++) {
		p->samples_all += p->group_count[2 * g];
		if (p->encoded >= budget) {
			p->samples_left_out += p->group_count[2 * g];
			continue;
		}
		size_t klen;
		uint32_t key[3];
		memcpy(key, sp_intern_key(&p->groups, g, &klen), sizeof(key));
		const struct sp_thread *t = sp_spool_thread(p->s, key[0]);
		const uint32_t *fr;
		size_t depth = sp_agg_stack_frames(p->a, key[1], &fr);
		msg.len = 0;
		/* Location ids, leaf first, as profile.proto wants them. */
		p->packed.len = 0;
		if (key[2] != LOC_CODE) {
			uint32_t li;
			if (!(err = cause_location(p, key[2], &li)))
				err = sp_buf_put_uvarint(&p->packed, (uint64_t)li + 1);
		}
		for (size_t i = 0; !err && i < depth; i++) {
			uint32_t li;
			if (!(err = location_of(p, fr[i], &li)))
				err = sp_buf_put_uvarint(&p->packed, (uint64_t)li + 1);
		}
		if (!err && p->packed.len)
			err = pb_bytes(&msg, SAMPLE_LOCATION_ID, p->packed.data, p->packed.len);
		uint64_t count = p->group_count[2 * g], weight = p->group_count[2 * g + 1];
		p->packed.len = 0;
		if (!err)
			err = sp_buf_put_uvarint(&p->packed, count);
		if (!err)
			err = sp_buf_put_uvarint(&p->packed, weight * scale);
		if (!err)
			err = pb_bytes(&msg, SAMPLE_VALUE, p->packed.data, p->packed.len);
		if (!err && t) {
			err = label(p, &msg, "pid", NULL, t->pid);
			if (!err)
				err = label(p, &msg, "tid", NULL, t->tid);
			if (!err && t->name[0])
				err = label(p, &msg, "thread", t->name, 0);
		}
		if (!err)
			err = pb_message(&p->samples, PROFILE_SAMPLE, &msg);
		p->encoded += msg.len;
		if (!err && p->samples.len >= (1u << 20))
			err = gz_put(p->gz, &p->samples, false);
	}
	sp_buf_release(&msg);
	return err;
}

/* The names of the markers' locations, by LOC_*. */
static const struct sp_resolved_frame markers[] = {
	[LOC_TRUNCATED] = {.name = "[truncated]", .module = ""},
	[LOC_BLOCKED] = {.name = "[blocked]", .module = ""},
	[LOC_PREEMPTED] = {.name = "[preempted]", .module = ""},
};

static int encode_locations(struct pprof *p)
{
	struct sp_buf msg, line;
	sp_buf_init(&msg);
	sp_buf_init(&line);
	int err = 0;
	for (uint32_t i = 0; !err && i < p->locations.n; i++) {
		const struct loc *l = &p->locs[i];
		const struct sp_frame *fr = sp_spool_frame(p->s, l->frame_id);
		msg.len = 0;
		err = pb_varint(&msg, LOCATION_ID, (uint64_t)i + 1);
		if (!err && l->module != SP_NO_MODULE)
			err = pb_varint(&msg, LOCATION_MAPPING_ID, p->mapping[l->module]);
		if (!err && !l->marker)
			err = pb_varint(&msg, LOCATION_ADDRESS, fr->abs_ip);
		/* Lines: inlined functions first, the function holding the code last. */
		const struct sp_resolved_frame *lines = &markers[l->marker];
		size_t nlines = 1;
		if (!err && !l->marker)
			err = sp_symbolizer_resolve_all(p->a->sym, l->frame_id, &lines, &nlines);
		for (size_t j = 0; !err && j < nlines; j++) {
			uint64_t fid;
			if ((err = function_of(p, &lines[j], &fid)))
				break;
			line.len = 0;
			if (!(err = pb_varint(&line, LINE_FUNCTION_ID, fid)))
				err = pb_varint(&line, LINE_LINE, lines[j].line);
			if (!err)
				err = pb_message(&msg, LOCATION_LINE, &line);
			if (l->module != SP_NO_MODULE) {
				if (lines[j].file)
					p->map_flags[l->module] |= MAP_FILENAMES;
				if (lines[j].line)
					p->map_flags[l->module] |= MAP_LINE_NUMBERS;
			}
		}
		if (!err && nlines > 1 && l->module != SP_NO_MODULE)
			p->map_flags[l->module] |= MAP_INLINE_FRAMES;
		if (!err)
			err = pb_message(&p->locations_msg, PROFILE_LOCATION, &msg);
	}
	sp_buf_release(&msg);
	sp_buf_release(&line);
	return err;
}

static int encode_functions(struct pprof *p)
{
	struct sp_buf msg;
	sp_buf_init(&msg);
	int err = 0;
	for (uint32_t i = 0; !err && i < p->functions.n; i++) {
		size_t klen;
		uint32_t key[3];
		memcpy(key, sp_intern_key(&p->functions, i, &klen), sizeof(key));
		msg.len = 0;
		/* Mangled names are not kept: the system name is the name, as in Go's own. */
		if (!(err = pb_varint(&msg, FUNCTION_ID, (uint64_t)i + 1)) &&
		    !(err = pb_varint(&msg, FUNCTION_NAME, key[0])) &&
		    !(err = pb_varint(&msg, FUNCTION_SYSTEM_NAME, key[0])) &&
		    !(err = pb_varint(&msg, FUNCTION_FILENAME, key[1])))
			err = pb_message(&p->functions_msg, PROFILE_FUNCTION, &msg);
	}
	sp_buf_release(&msg);
	return err;
}

static int encode_mappings(struct pprof *p)
{
	struct sp_buf msg;
	sp_buf_init(&msg);
	int err = 0;
	size_t n = sp_spool_module_count(p->s);
	for (uint32_t m = 0; !err && m < n; m++) {
		if (!p->mapping[m])
			continue;
		const struct sp_module *mod = sp_spool_module(p->s, m);
		char hex[2 * SP_BUILD_ID_MAX + 1];
		unsigned nb = mod->build_id_len;
		if (nb > SP_BUILD_ID_MAX)
			nb = SP_BUILD_ID_MAX;
		for (unsigned i = 0; i < nb; i++)
			snprintf(hex + 2 * i, 3, "%02x", mod->build_id[i]);
		hex[2 * nb] = '\0';
		uint64_t file, build_id;
		uint8_t fl = p->map_flags[m];
		/* An anonymous mapping's page offset is no file offset (mmap(2) ignores it). */
		bool anon = mod->flags & SP_MODULE_ANON;
		if ((err = raw_str_id(p, mod->path, &file)) || (err = str_id(p, hex, &build_id)))
			break;
		msg.len = 0;
		/* Every location carries a function, at worst the module+0xOFFSET name. */
		if (!(err = pb_varint(&msg, MAPPING_ID, p->mapping[m])) &&
		    !(err = pb_varint(&msg, MAPPING_MEMORY_START, mod->start)) &&
		    !(err = pb_varint(&msg, MAPPING_MEMORY_LIMIT, mod->end)) &&
		    !(err = pb_varint(&msg, MAPPING_FILE_OFFSET, anon ? 0 : mod->file_offset)) &&
		    !(err = pb_varint(&msg, MAPPING_FILENAME, file)) &&
		    !(err = pb_varint(&msg, MAPPING_BUILD_ID, build_id)) &&
		    !(err = pb_varint(&msg, MAPPING_HAS_FUNCTIONS, 1)) &&
		    !(err = pb_varint(&msg, MAPPING_HAS_FILENAMES, !!(fl & MAP_FILENAMES))) &&
		    !(err = pb_varint(&msg, MAPPING_HAS_LINE_NUMBERS, !!(fl & MAP_LINE_NUMBERS))) &&
		    !(err = pb_varint(&msg, MAPPING_HAS_INLINE_FRAMES, !!(fl & MAP_INLINE_FRAMES))))
			err = pb_message(&p->mappings, PROFILE_MAPPING, &msg);
	}
	sp_buf_release(&msg);
	return err;
}

static void pprof_release(struct pprof *p)
{
	sp_intern_release(&p->strings);
	sp_intern_release(&p->modnames);
	sp_intern_release(&p->functions);
	sp_intern_release(&p->locations);
	sp_intern_release(&p->groups);
	free(p->locs);
	free(p->group_count);
	free(p->frame_loc);
	free(p->mapping);
	free(p->map_flags);
	struct sp_buf *bufs[] = {&p->clean, &p->sub, &p->packed, &p->samples, &p->mappings,
				 &p->locations_msg, &p->functions_msg, &p->tail, &p->profile};
	for (size_t i = 0; i < SP_ARRAY_SIZE(bufs); i++)
		sp_buf_release(bufs[i]);
}

int sp_export_pprof(struct sp_agg *a, const struct sp_report_opts *opts, FILE *out)
{
	struct pprof p;
	memset(&p, 0, sizeof(p));
	struct gz gz = {0};
	p.a = a;
	p.s = a->spool;
	p.gz = &gz;
	sp_intern_init(&p.strings);
	sp_intern_init(&p.modnames);
	sp_intern_init(&p.functions);
	sp_intern_init(&p.locations);
	sp_intern_init(&p.groups);
	struct sp_buf *bufs[] = {&p.clean, &p.sub, &p.packed, &p.samples, &p.mappings,
				 &p.locations_msg, &p.functions_msg, &p.tail, &p.profile};
	for (size_t i = 0; i < SP_ARRAY_SIZE(bufs); i++)
		sp_buf_init(bufs[i]);
	const struct sp_spool_meta *meta = sp_spool_meta(p.s);
	struct sp_sample_unit u;
	sp_sample_unit_of(p.s, &u);
	/*
	 * The second value: CPU time as Go's own profiles have it, or the
	 * events the samples stand for, named after the event.
	 */
	const char *type = u.time ? "cpu" : u.event, *unit = u.time ? "nanoseconds" : "count";
	/*
	 * Weights are samples of a time event (u.period ns each), else events
	 * (docs/DESIGN.md, decision 12).
	 */
	uint64_t period = u.period, scale = u.time ? u.period : 1, id;
	/*
	 * A time metric's weights are ns already: "wall" or "off-cpu" time.  Its
	 * period is one ns: an interval's value is its measured time, no multiple
	 * of a sampling period (with wall time, the CPU samples' period is in
	 * their values).
	 */
	if (a->metric != SP_METRIC_CPU) {
		type = a->metric == SP_METRIC_WALL ? "wall" : "off-cpu";
		unit = "nanoseconds";
		scale = 1;
		period = 1;
	}
	size_t nframes = sp_spool_frame_count(p.s), nmodules = sp_spool_module_count(p.s);
	int err = -ENOMEM;
	p.frame_loc = calloc(nframes ? nframes : 1, sizeof(*p.frame_loc));
	p.mapping = calloc(nmodules ? nmodules : 1, sizeof(*p.mapping));
	p.map_flags = calloc(nmodules ? nmodules : 1, sizeof(*p.map_flags));
	if (!p.frame_loc || !p.mapping || !p.map_flags)
		goto out;

	/* string_table[0] must be "". */
	if ((err = str_id(&p, "", &id)))
		goto out;
	/* Index 0 counts samples, by profile.proto's convention; the second is the default view. */
	if ((err = value_type(&p, &p.profile, PROFILE_SAMPLE_TYPE, "samples", "count")) ||
	    (err = value_type(&p, &p.profile, PROFILE_SAMPLE_TYPE, type, unit)) ||
	    (err = gz_open(&gz, out)) || (err = gz_put(&gz, &p.profile, false)) ||
	    (err = group_samples(&p)) || (err = encode_samples(&p, scale)))
		goto out;
	/* Mapping ids in module order: the recorded command's executable comes first. */
	uint32_t next = 0;
	for (size_t m = 0; m < nmodules; m++)
		if (p.map_flags[m] & MAP_USED)
			p.mapping[m] = ++next;
	if ((err = encode_locations(&p)) || (err = encode_functions(&p)) ||
	    (err = encode_mappings(&p)))
		goto out;

	/* The fields after the string table, first: every string must be in the table. */
	uint64_t type_id, comment = 0, cut_id = 0;
	if ((err = str_id(&p, type, &type_id)) ||
	    (meta->command && meta->command[0] && (err = raw_str_id(&p, meta->command, &comment))))
		goto out;
	/* What the budget left out, as a second comment (pprof -comments shows them). */
	char cut[160];
	snprintf(cut, sizeof(cut), "%" PRIu64 " of %" PRIu64 " samples left out: output stops past "
		 "%" PRIu64 " MiB for this spool's size", p.samples_left_out, p.samples_all,
		 sp_export_output_budget(p.s) >> 23);
	if (p.samples_left_out && (err = str_id(&p, cut, &cut_id)))
		goto out;
	if ((err = pb_varint(&p.tail, PROFILE_TIME_NANOS, meta->start_timestamp_us * 1000)) ||
	    (err = pb_varint(&p.tail, PROFILE_DURATION_NANOS, a->last_ns - a->first_ns)) ||
	    (err = value_type(&p, &p.tail, PROFILE_PERIOD_TYPE, type, unit)) ||
	    (err = pb_varint(&p.tail, PROFILE_PERIOD, period)) ||
	    (err = pb_varint(&p.tail, PROFILE_COMMENT, comment)) ||
	    (cut_id && (err = pb_varint(&p.tail, PROFILE_COMMENT, cut_id))) ||
	    (err = pb_varint(&p.tail, PROFILE_DEFAULT_SAMPLE_TYPE, type_id)))
		goto out;

	/* Fields in number order: sample types and samples are already out; the rest follow. */
	if ((err = sp_buf_append(&p.profile, p.samples.data, p.samples.len)) ||
	    (err = sp_buf_append(&p.profile, p.mappings.data, p.mappings.len)) ||
	    (err = sp_buf_append(&p.profile, p.locations_msg.data, p.locations_msg.len)) ||
	    (err = sp_buf_append(&p.profile, p.functions_msg.data, p.functions_msg.len)))
		goto out;
	for (uint32_t i = 0; i < p.strings.n; i++) {
		size_t len;
		const void *s = sp_intern_key(&p.strings, i, &len);
		if ((err = pb_bytes(&p.profile, PROFILE_STRING_TABLE, s, len)))
			goto out;
	}
	if ((err = sp_buf_append(&p.profile, p.tail.data, p.tail.len)))
		goto out;
	err = gz_put(&gz, &p.profile, true);
out:
	gz_close(&gz);
	pprof_release(&p);
	return err;
}
