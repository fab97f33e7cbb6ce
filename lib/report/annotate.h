/* SPDX-License-Identifier: MIT */
/*
 * Annotation (private): where in a function its self samples fell.
 *
 * Bottom up: the counting of leaf samples per function, frame and source
 * line (annotate_count.c), the module file's code, symbols and line table
 * read with libdwfl (annotate_image.c), source files found and read
 * (annotate_source.c), the decoding of the code with capstone
 * (annotate_disasm.c), the text and JSON renderers of one function's view
 * (annotate_text.c, annotate_json.c), and on top the public
 * sp_annotate_write that builds each view (annotate.c).  The flat table by
 * source line of `report --by=line` is report_lines.c.  Beside the views;
 * includes report/aggregate.h.
 */
#ifndef SP_REPORT_ANNOTATE_H
#define SP_REPORT_ANNOTATE_H

#include "report/aggregate.h"

#include <stdio.h>

/* ---- counting (annotate_count.c) --------------------------------------- */

/* One sampled leaf frame of a function and its samples. */
struct sp_ann_frame {
	uint32_t frame_id;
	uint64_t samples;
};

/*
 * One source position samples fell on: the function's own line (file, line:
 * where its frame's address sits, or the line of the inlined call), and when
 * the address is inlined code, the innermost inlined function's own line.
 */
struct sp_ann_line {
	const char *file;     /* borrowed from the symbolizer; NULL when unknown */
	uint32_t line;        /* 0 when unknown */
	const char *inl_func; /* the innermost inlined function, NULL for the function's own code */
	const char *inl_file;
	uint32_t inl_line;
	uint64_t samples;
};

/* A function (the one holding the code, inlined functions folded in) with self samples. */
struct sp_ann_func {
	const char *name, *module; /* borrowed from the symbolizer (escaped) */
	uint64_t samples;          /* leaf samples in its code, inlined code included */
	struct sp_ann_frame *frames;
	size_t nframes, frames_cap;
	struct sp_ann_line *lines; /* sorted by file, line, then inlined position, merged */
	size_t nlines, lines_cap;
};

/* The functions of a spool with self samples, most samples first (ties by name, module). */
struct sp_ann_profile {
	uint64_t samples;          /* every sample of the spool: the profile's whole */
	struct sp_ann_func *funcs;
	size_t nfuncs, funcs_cap;
};

/*
 * Count every sample of s by its leaf frame, resolve each distinct leaf
 * once (sp_symbolizer_resolve_all) and attribute it to the function that
 * holds its code and to its source position.  Work proportional to the
 * samples plus the distinct leaf frames.  0, -ENOMEM or a resolve error;
 * release p either way.
 */
int sp_ann_count(struct sp_ann_profile *p, const struct sp_spool *s, struct sp_symbolizer *sym);
void sp_ann_profile_release(struct sp_ann_profile *p);

/* ---- the module file (annotate_image.c) -------------------------------- */

struct sp_ann_image;

/*
 * Open m's file proven to be the recorded one (build-id, else inode + size
 * + mtime): its path, then /proc/PID/map_files while its process runs.
 * 0 and *out, or -errno / -SP_E_* with *why (static text: why it could not
 * be used, for the reader) set.
 */
int sp_ann_image_open(const struct sp_module *m, struct sp_ann_image **out, const char **why);
void sp_ann_image_free(struct sp_ann_image *img);
/* The path it was read from (borrowed). */
const char *sp_ann_image_path(const struct sp_ann_image *img);
/* The static address (svma) of a frame recorded in m, whose file img is; false when none. */
bool sp_ann_image_svma(const struct sp_ann_image *img, const struct sp_module *m,
		       const struct sp_frame *f, uint64_t *svma);

/* A function's code as the file holds it. */
struct sp_ann_code {
	uint64_t start, end;  /* static addresses [start, end) */
	const uint8_t *bytes; /* end - start bytes, borrowed from img */
	uint16_t machine;     /* ELF e_machine */
};

/*
 * The function whose symbol (else DWARF subprogram) holds svma: its range
 * and bytes.  0, or -ENOENT when no symbol holds it or its bytes are not in
 * the file (SHT_NOBITS).
 */
int sp_ann_image_code(struct sp_ann_image *img, uint64_t svma, struct sp_ann_code *out);

/*
 * The symbol holding addr and addr's offset in it: its name (borrowed from
 * img), or NULL.
 */
const char *sp_ann_image_symbol(struct sp_ann_image *img, uint64_t addr, uint64_t *offset);

/* One row of a line table: from addr on, code belongs to file:line. */
struct sp_ann_row {
	uint64_t addr;
	const char *file; /* borrowed from img */
	uint32_t line;
	uint32_t order;   /* its place in the table: of rows at one address, the last applies */
};

/*
 * The line table rows of the compilation unit holding [start, end) that
 * apply inside it, by address: a malloc'd *rows of *n (the row in force at
 * start first, when there is one), and the unit's compilation directory
 * (borrowed, or NULL).  0 with *n 0 when the file has no line table there;
 * -ENOMEM.
 */
int sp_ann_image_rows(struct sp_ann_image *img, uint64_t start, uint64_t end,
		      struct sp_ann_row **rows, size_t *n, const char **comp_dir);

/* ---- source files (annotate_source.c) ---------------------------------- */

struct sp_ann_sources;

/*
 * A cache of source files read for one annotation.  source_dir (copied, may
 * be NULL) is searched first.  0 or -ENOMEM.
 */
int sp_ann_sources_new(const char *source_dir, struct sp_ann_sources **out);
void sp_ann_sources_free(struct sp_ann_sources *c);

/*
 * Where a source named file (as DWARF names it) is looked for, in order:
 * source_dir/FILE (without its leading '/'), source_dir/BASENAME, FILE when
 * absolute, comp_dir/FILE when relative, then BASENAME beside module_path.
 * Returns line's text (1-based; borrowed from c, without its newline, never
 * NULL once the file was found: "" past its end), or NULL when the file was
 * not found (*missing true) or line is 0.  Files are read once, at most
 * SP_ANN_SOURCE_MAX bytes.
 */
#define SP_ANN_SOURCE_MAX ((size_t)64 << 20)
const char *sp_ann_source_line(struct sp_ann_sources *c, const char *file, uint32_t line,
			       const char *comp_dir, const char *module_path, bool *missing);

/* ---- disassembly (annotate_disasm.c) ----------------------------------- */

/* One decoded instruction. */
struct sp_ann_insn {
	uint64_t addr;
	uint32_t text;   /* offset of its text ("mnemonic operands") in the listing's text */
	uint16_t size;
	bool has_target; /* a direct branch or call to target */
	uint64_t target;
};

struct sp_ann_listing {
	struct sp_ann_insn *insns;
	size_t n, cap;
	char *text; /* every instruction's NUL-terminated text, back to back */
	size_t text_len, text_cap;
};

/*
 * Decode code (capstone: x86-64 in AT&T syntax, AArch64) into l; bytes that
 * do not decode are listed as "(bad)", one byte each.  0, -ENOMEM, or
 * -ENOTSUP for another machine.
 */
int sp_ann_disasm(const struct sp_ann_code *code, struct sp_ann_listing *l);
void sp_ann_listing_release(struct sp_ann_listing *l);

/* ---- one function's view and its renderers ----------------------------- */

/*
 * What a renderer shows of one function.  lines and rows are the source
 * view; insns (NULL when the code could not be read: unreadable says why)
 * the disassembly, each with its samples and its source position.
 */
struct sp_ann_view {
	const struct sp_ann_func *func;
	uint64_t profile_samples;      /* the profile's whole */
	const char *module_path;       /* the file read, or the recorded path */
	const char *unreadable;        /* why the code is not shown, or NULL */
	const struct sp_ann_code *code;
	const struct sp_ann_listing *listing;
	const uint64_t *insn_samples;  /* by instruction */
	const char **insn_file;        /* by instruction: its line table position, or NULL */
	const uint32_t *insn_line;
	const char **insn_target;      /* by instruction: "<symbol+0xoff>" of its target, or NULL */
	const char *comp_dir;          /* of the function's compilation unit, or NULL */
	uint64_t unplaced;             /* samples at addresses outside the code shown */
	struct sp_ann_sources *sources;
};

/* A share of whole, in percent (0 when whole is 0). */
static inline double sp_ann_pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* Instructions at or above this share of the function's samples are marked hot. */
#define SP_ANN_HOT_PCT 5.0

/* The text layout of stackpulse-annotate(1) (annotate_text.c).  0 or -errno. */
int sp_ann_write_text(const struct sp_ann_view *v, FILE *out);
/*
 * One function's JSON object (annotate_json.c), written to out through b (a
 * scratch buffer, left empty; whatever it held is written first).  0,
 * -ENOMEM or -EIO.
 */
int sp_ann_write_json(const struct sp_ann_view *v, struct sp_buf *b, FILE *out);

/* ---- report --by=line (report_lines.c) --------------------------------- */

/* The flat table by source line: a (lines) aggregation's functions merged by file:line. */
int sp_report_lines(struct sp_agg *a, const struct sp_report_opts *opts, FILE *out);

#endif
