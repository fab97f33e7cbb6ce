/* SPDX-License-Identifier: MIT */
/*
 * lib/util/: what every stage builds on (private, not installed).
 *
 * Owns: growable buffers and varints (buf.c), the u64 -> u32 hash map
 * (hashmap.c), string arenas (arena.c), the bounded line reader over
 * untrusted text files (linereader.c), UTF-8, JSON and terminal string
 * escapes (escape.c), facts read from ELF files (elf_util.c), bounds on what
 * compressed ELF sections may inflate to (elf_inflate.c), module path display
 * and Python runtime modules (module_path.c), a process's owner from /proc
 * (procfs.c), online CPUs, perf_event_paranoid, command lines and the PATH
 * search (sysinfo.c), the monotonic clock and re-read pacing (pace.c), opening only regular files in places others control
 * (open_regular.c), durations, sizes and wall-clock times as users type
 * them (units.c), and the error table (errors.c).
 * May call: libc and libelf only, never another stage of lib/.
 */
#ifndef SP_UTIL_H
#define SP_UTIL_H

#include "stackpulse.h"

#include <gelf.h>
#include <libelf.h>

#define SP_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/*
 * a + b, UINT64_MAX when that overflows: sums of a spool's untrusted counters
 * saturate instead of wrapping to a small number.
 */
static inline uint64_t sp_u64_add_sat(uint64_t a, uint64_t b)
{
	uint64_t sum;
	return __builtin_add_overflow(a, b, &sum) ? UINT64_MAX : sum;
}

/* ---- growable byte buffer (buf.c) -------------------------------------- */

struct sp_buf {
	uint8_t *data;
	size_t len, cap;
};

void sp_buf_init(struct sp_buf *b);
void sp_buf_release(struct sp_buf *b);
/* Make room for n more bytes; -ENOMEM on failure. */
int sp_buf_reserve(struct sp_buf *b, size_t n);
int sp_buf_append(struct sp_buf *b, const void *p, size_t n);
/* LEB128 unsigned varint; zigzag for signed. */
int sp_buf_put_uvarint(struct sp_buf *b, uint64_t v);
int sp_buf_put_svarint(struct sp_buf *b, int64_t v);
/* Length-prefixed (uvarint) string. */
int sp_buf_put_str(struct sp_buf *b, const char *s);
/* write(2) all n bytes of p to fd, again after EINTR: 0, -errno, or -EIO when it writes nothing. */
int sp_write_all(int fd, const void *p, size_t n);

/*
 * Make *p, an array of *cap elements of elem bytes, hold at least need:
 * realloc'd to the next power-of-two capacity (64 at least), *cap updated.
 * 0, or -ENOMEM (also when the size would overflow); *p is kept on failure.
 */
int sp_array_reserve(void **p, size_t *cap, size_t need, size_t elem);

/*
 * The one binary search of a sorted array: the first index I in [0, N) for which PRED, an
 * expression of the variable I (declared by the macro, a size_t), is false, or N when it is
 * true everywhere.  PRED must be true for a prefix of the indexes and false for the rest,
 * as "a[I] < key" (the lower bound of key) or "a[I].start <= addr" (one past the last entry
 * starting at or below addr: the entry holding addr, if any, is the one before).  At most
 * about log2(N) + 1 evaluations of PRED; a statement expression, so the predicate is
 * inlined where it is used (the unwinder's row lookup runs per frame).
 */
#define sp_partition_point(N, I, PRED)                                                 \
	({                                                                             \
		size_t sp_pp_lo_ = 0, sp_pp_hi_ = (N);                                 \
		while (sp_pp_lo_ < sp_pp_hi_) {                                        \
			size_t I = sp_pp_lo_ + (sp_pp_hi_ - sp_pp_lo_) / 2;            \
			if (PRED)                                                      \
				sp_pp_lo_ = I + 1;                                     \
			else                                                           \
				sp_pp_hi_ = I;                                         \
		}                                                                      \
		sp_pp_lo_;                                                             \
	})

/*
 * Bounded readers over untrusted bytes.  Each returns 0 and advances *p, or
 * -SP_E_SPOOL_CORRUPT when the value runs past end or overflows 64 bits.
 */
int sp_get_uvarint_long(const uint8_t **p, const uint8_t *end, uint64_t *v);
/* Most varints of a spool fit one byte: that case inline, the rest out of line. */
static inline int sp_get_uvarint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	if (*p < end && **p < 0x80) {
		*v = *(*p)++;
		return 0;
	}
	return sp_get_uvarint_long(p, end, v);
}
static inline int sp_get_svarint(const uint8_t **p, const uint8_t *end, int64_t *v)
{
	uint64_t u;
	int err = sp_get_uvarint(p, end, &u);
	if (!err)
		*v = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
	return err;
}

/* ---- open-addressing hash map, u64 key -> u32 value (hashmap.c) -------- */

/*
 * A slot's key, value and use side by side: a lookup the recorder makes at
 * every sample reads one cache line, not one in each of three arrays.
 */
struct sp_map_slot {
	uint64_t key;
	uint32_t val;
	uint32_t used;
};

struct sp_map {
	struct sp_map_slot *slots;
	size_t cap, len;
};

void sp_map_init(struct sp_map *m);
void sp_map_release(struct sp_map *m);
/* Returns 1 and *val when present, 0 when absent. */
int sp_map_get(const struct sp_map *m, uint64_t key, uint32_t *val);
/* Insert or replace; 0 or -ENOMEM. */
int sp_map_put(struct sp_map *m, uint64_t key, uint32_t val);
/* 64-bit mixer used to combine keys (e.g. (parent, frame) pairs). */
static inline uint64_t sp_hash64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

/* ---- ELF helpers (elf_util.c) ------------------------------------------ */

struct sp_load_segment {
	uint64_t vaddr, memsz, offset, filesz;
	bool exec;
};

/* Facts read once from a module file. */
struct sp_elf_info {
	uint16_t e_type; /* ET_EXEC / ET_DYN */
	uint8_t build_id_len;
	uint8_t build_id[SP_BUILD_ID_MAX];
	size_t nsegs;
	struct sp_load_segment *segs; /* PT_LOAD, owned */
};

/* ---- pacing re-reads (pace.c) ------------------------------------------- */

/* sp_monotonic_ns, CLOCK_MONOTONIC in ns, is public (stackpulse.h). */
/*
 * A file the target keeps growing (a perf map, a jitdump) is re-read at most
 * a tenth of the reader's CPU time: the next read waits SP_PACE_SPACING times
 * the CPU time the last took, so a hostile file that grows without end cannot
 * take the recorder over.  CPU time, not wall time: a read that lost its CPU
 * to other work on a busy machine (100 ms, say) would otherwise shut the
 * reader out of new lines for nine times that, and a JIT's code compiled in
 * the meantime would go unwound.  Zero-initialise; sp_pace_begin says whether
 * a read may start now (*start: the thread's CPU time at its start, in ns),
 * sp_pace_end closes it.  Begin and end must run on the same thread.
 */
#define SP_PACE_SPACING 9
struct sp_pace {
	uint64_t next_ns; /* CLOCK_MONOTONIC: no read before this */
};
bool sp_pace_begin(const struct sp_pace *p, uint64_t *start);
void sp_pace_end(struct sp_pace *p, uint64_t start);

/* Ensure libelf's version handshake was done (idempotent). */
void sp_elf_init(void);
/*
 * This process's vDSO (getauxval(AT_SYSINFO_EHDR), its extent from
 * /proc/self/maps): the kernel maps the same image into every process of
 * the same ABI, so it stands for a target's [vdso] whose build-id matches.
 * *image stays valid for the process's life.  0, or -ENOENT.
 */
int sp_own_vdso(const void **image, size_t *size);
/* A memfd holding a copy of sp_own_vdso's image, the caller's to close; -errno. */
int sp_own_vdso_fd(void);
/* Fill info from an open Elf.  -SP_E_ELF_MALFORMED on bad headers. */
int sp_elf_info_read(Elf *elf, struct sp_elf_info *info);
void sp_elf_info_release(struct sp_elf_info *info);
/*
 * The load bias (avma - svma) of a mapping that starts at avma `start` and
 * maps file offset `file_offset`: from the PT_LOAD segment containing that
 * offset (docs/DESIGN.md, decision 7).  -ENOENT when no segment contains it.
 */
int sp_elf_load_bias(const struct sp_elf_info *info, uint64_t start, uint64_t file_offset,
		     uint64_t *bias);
/* Find the NT_GNU_BUILD_ID note; returns its length (0 when absent). */
size_t sp_elf_build_id(Elf *elf, uint8_t *out, size_t cap);

/* ---- compressed sections bounded (elf_inflate.c) ----------------------- */

/*
 * Whether scn is a compressed section: SHF_COMPRESSED (gABI, its Elf32_Chdr
 * or Elf64_Chdr), a GNU .zdebug_* section ("ZLIB" and a big-endian 64-bit
 * size) or MiniDebugInfo (.gnu_debugdata, xz).  When it is, *size is the
 * size it claims to inflate to, read from its header without inflating
 * anything (for xz, found by a decode bounded by SP_INFLATE_DEBUGDATA_MAX
 * into scratch); UINT64_MAX when the header cannot be read or xz's bounds
 * are passed.
 */
bool sp_elf_section_inflated_size(Elf *elf, Elf_Scn *scn, uint64_t *size);

/* What sp_elf_bound_inflation found: counts of compressed sections, sizes as claimed. */
struct sp_inflate_stats {
	uint32_t kept;             /* left to be inflated by whoever needs them */
	uint64_t kept_bytes;       /* their inflated sizes, summed (<= SP_INFLATE_FILE_MAX) */
	uint32_t over_limit;       /* hidden: over SP_INFLATE_SECTION_MAX, _FILE_MAX or _RUN_MAX */
	uint32_t over_run;         /* of those, hidden for the pass's or the process's budget */
	uint64_t over_limit_bytes; /* their claimed sizes, summed (saturating) */
	uint32_t unwanted;         /* hidden because the caller's want() refused them */
	/* Of over_limit, hidden for SP_INFLATE_UNTRUSTED_RUN_MAX alone (not in over_run). */
	uint32_t over_untrusted;
	char untrusted_why[64];    /* then why the file is another user's to influence */
};

/*
 * Can a user other than root influence the file open on fd?  Its owner and
 * mode (fstat), then its directory, found from the descriptor
 * (/proc/self/fd) without following a symlink: untrusted when the file is
 * not root's or group/others may write it, or its directory is not root's
 * or group/others may write it (sticky or not), or the directory cannot be
 * checked.  An unlinked file of root's has no directory to be replaced
 * through.  why says which, for warnings ("owned by uid 1000").
 */
struct sp_file_trust {
	bool untrusted;
	char why[64];
};
void sp_file_trust(int fd, struct sp_file_trust *t);

/*
 * Bound what libelf and libdw may later inflate from elf (stackpulse.h,
 * SP_INFLATE_SECTION_MAX and SP_INFLATE_FILE_MAX): every compressed section
 * that want(name) refuses (want NULL: none), that claims more than
 * SP_INFLATE_SECTION_MAX, or whose claim would take the sections kept
 * before it (in section order) past SP_INFLATE_FILE_MAX, or whose claim
 * no longer fits in what is left of the process's SP_INFLATE_RUN_MAX (taken
 * from it for good when the section is kept, across files), is hidden: its
 * header in elf's memory becomes SHT_NOBITS without SHF_COMPRESSED, so
 * dwarf_begin_elf and libdwfl skip it; the file is not written.  A file
 * whose trust (NULL: root's own) says another user can influence it takes
 * its claims from SP_INFLATE_UNTRUSTED_RUN_MAX as well.  Call it
 * before the Elf reaches libdw.  Fills *st.  0, or -SP_E_ELF_MALFORMED when
 * some section could not be hidden (then elf must not reach libdw).
 */
int sp_elf_bound_inflation(Elf *elf, bool (*want)(const char *name),
			   const struct sp_file_trust *trust, struct sp_inflate_stats *st);
/*
 * The same for a handle that is ended without inflating anything (a look at
 * a file before libdw opens it again): what is left of SP_INFLATE_RUN_MAX is
 * checked, never taken, so that the file is charged once.
 */
int sp_elf_bound_inflation_probe(Elf *elf, bool (*want)(const char *name),
				 const struct sp_file_trust *trust, struct sp_inflate_stats *st);
/*
 * What one pass of reading names (a symbolizer: one spool's names, each side
 * of report --diff; renewed at each refresh of top) took of the per-pass
 * budgets, SP_INFLATE_RUN_MAX and SP_DEBUGLINK_CRC_RUN_MAX.  The process's
 * totals (SP_INFLATE_PROCESS_MAX, SP_DEBUGLINK_CRC_PROCESS_MAX) bound all
 * passes together; inflated bytes go back to the process's total when the
 * pass's files are closed (sp_budget_account_release).  Zeroed by its owner.
 */
struct sp_budget_account {
	uint64_t inflated;    /* compressed sections kept this pass, bytes as claimed */
	uint64_t crc_read;    /* debug-link candidates read for their CRC this pass, bytes */
	uint64_t crc_refused; /* candidates refused unread for a budget (counted for good) */
	uint64_t held;        /* inflated bytes still charged to the process's total */
	/* The same for files another user can influence (sp_file_trust), this pass. */
	uint64_t inflated_untrusted, crc_read_untrusted;
	uint64_t crc_refused_untrusted; /* of crc_refused, for SP_DEBUGLINK_CRC_UNTRUSTED_RUN_MAX */
	int crc_why_set;                /* crc_untrusted_why is being or was written */
	char crc_untrusted_why[64];     /* why the first of those was untrusted */
};
/*
 * Charge what this thread inflates and reads for CRCs to a (NULL: the
 * process's own account, which the recorder and annotate use) until the
 * next call; returns the account charged before, to be set back.
 */
struct sp_budget_account *sp_budget_charge_to(struct sp_budget_account *a);
/* The account charged now (never NULL). */
struct sp_budget_account *sp_budget_charged(void);
/* A new pass for a: its budgets full again; what it holds stays charged to the process. */
void sp_budget_account_renew(struct sp_budget_account *a);
/* a's files are closed: what it holds goes back to the process's total. */
void sp_budget_account_release(struct sp_budget_account *a);
/*
 * A budget shared by a whole process (threads too): add size to *used when
 * the sum stays within max (only see whether it would, when !take).  False,
 * and nothing added, when it would not.
 */
bool sp_budget_take(uint64_t *used, uint64_t max, uint64_t size, bool take);
/* Bytes this process's open files' compressed sections were let inflate to (<= SP_INFLATE_PROCESS_MAX). */
uint64_t sp_elf_inflate_run_used(void);

/* ---- module paths (module_path.c) -------------------------------------- */

/*
 * The display part of a module path (lib/util/module_path.c): its basename
 * without the kernel's " (deleted)" suffix, as a span of path (not
 * NUL-terminated: *len bytes).
 */
const char *sp_path_name_span(const char *path, size_t *len);
/* Length of path without the " (deleted)" suffix the kernel appends in maps. */
size_t sp_path_len_undeleted(const char *path);

/* ---- string arena (arena.c) -------------------------------------------- */

/* Strings that live as long as their owner; freed all at once. */
struct sp_arena {
	struct sp_arena_block *blocks;
};

void sp_arena_init(struct sp_arena *a);
void sp_arena_release(struct sp_arena *a);
/* Copy n bytes of s plus a NUL terminator; NULL on allocation failure. */
const char *sp_arena_strndup(struct sp_arena *a, const char *s, size_t n);
const char *sp_arena_printf(struct sp_arena *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* ---- bounded line reader over untrusted text files (linereader.c) ------ */

/*
 * Lines of a file read through a fixed buffer: a line longer than max_line
 * bytes is skipped whole (never returned in pieces), and at most max_bytes
 * are read from the file, so a hostile or runaway file costs bounded memory
 * and time.
 */
struct sp_line_reader {
	int fd;               /* borrowed */
	char *buf;            /* owned */
	size_t cap, start, end;
	size_t max_line;
	uint64_t bytes;       /* bytes read from fd so far */
	uint64_t max_bytes;
	bool eof;             /* no more bytes will come (end of file or max_bytes) */
	bool limited;         /* reading stopped at max_bytes, not at the end of the file */
};

/* What sp_line_reader_next says about the line it returns. */
enum sp_line_flags {
	SP_LINE_TOO_LONG = 1u << 0,     /* longer than max_line: skipped, *len is 0 */
	SP_LINE_UNTERMINATED = 1u << 1, /* the last line, without a final newline */
};

/* max_line >= 1; max_bytes 0 means no limit.  0 or -ENOMEM. */
int sp_line_reader_init(struct sp_line_reader *r, int fd, size_t max_line, uint64_t max_bytes);
void sp_line_reader_release(struct sp_line_reader *r);
/*
 * The next line, without its '\n', in *line (valid until the next call) and
 * *len; it may hold NUL bytes.  *flags gets enum sp_line_flags.  Returns 1 for
 * a line, 0 at the end, -errno when read(2) fails.  A line cut by max_bytes is
 * not returned: r->limited then says the file was read only in part.
 */
int sp_line_reader_next(struct sp_line_reader *r, const char **line, size_t *len,
			unsigned *flags);

/* ---- text fields (linereader.c) ---------------------------------------- */

/* Shared by the kallsyms and perf-map parsers. */
static inline bool sp_text_is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/*
 * A hex number (an optional 0x, leading zeros allowed, at most 64 significant
 * bits) at *p before end: true and *p advanced past it, or false.
 */
bool sp_text_parse_hex(const char **p, const char *end, uint64_t *v);

/* ---- process facts from /proc (procfs.c) ------------------------------- */

/*
 * The effective uid of pid, the second field of the "Uid:" line of
 * /proc/PID/status (proc_pid_status(5)): who owns the files it writes, its
 * perf map among them.  0; -SP_E_NO_PROCESS when it is gone; -SP_E_BAD_ARG
 * for pid <= 0 or a line that does not parse; -errno.
 */
int sp_pid_euid(pid_t pid, uint32_t *uid);

/*
 * When pid started, in µs since the epoch: /proc/PID/stat's starttime (clock
 * ticks since boot, field 22) plus /proc/stat's btime.  0 when unknown.
 */
uint64_t sp_pid_start_us(pid_t pid);

/*
 * Where pid's perf map is when it runs in a container (another mount or PID
 * namespace): "/proc/PID/root/tmp/perf-NSPID.map" into buf (size bytes), its
 * own pid in its innermost PID namespace (the last field of /proc/PID/status
 * "NSpid:") into *nspid, returns 1.  Returns 0 when its /tmp is ours and its
 * pid the same: its map is the usual /tmp/perf-PID.map (jit-interface.txt).
 * -SP_E_NO_PROCESS when it is gone, -SP_E_BAD_ARG when buf is too small.
 */
int sp_pid_perf_map_path(pid_t pid, char *buf, size_t size, int32_t *nspid);

/* One executable mapping, a line of /proc/PID/maps (proc(5)). */
struct sp_proc_maps_line {
	uint64_t start, end, pgoff, dev, ino;
	const char *path; /* inside the line, "" for anonymous memory */
};
/* line (its '\n' cut) as an executable mapping other than [vsyscall], or false. */
bool sp_proc_maps_line_parse(char *line, struct sp_proc_maps_line *out);
/*
 * fn for each executable mapping a /proc maps file lists (sp_proc_maps_line_parse),
 * until it returns false: how many were seen, or -errno (-SP_E_NO_PROCESS
 * when the file is gone).
 */
int sp_proc_maps_each(const char *path, bool (*fn)(void *arg, const struct sp_proc_maps_line *m),
		      void *arg);

/* ---- system facts (sysinfo.c) ------------------------------------------ */

/*
 * The online CPUs (/sys/devices/system/cpu/online) as a malloc'd array in
 * *out that the caller frees, every configured CPU when that file is
 * unreadable.  Returns how many, or -ENOMEM.  The public facts of sysinfo.c
 * (sp_online_cpus_text, sp_perf_event_paranoid, sp_pid_cmdline,
 * sp_command_runnable) are declared in stackpulse.h, for cmd/.
 */
int sp_online_cpus(int **out);

/* ---- opening files others control (open_regular.c) --------------------- */

/* How a path's symlinks are treated. */
enum sp_resolve {
	SP_RESOLVE_FOLLOW,	/* followed, as open(2) does */
	SP_RESOLVE_NOFOLLOW,	/* none as the last component (O_NOFOLLOW) */
	SP_RESOLVE_NO_SYMLINKS, /* none anywhere (openat2(2) RESOLVE_NO_SYMLINKS; before
				   Linux 5.6, as SP_RESOLVE_NOFOLLOW) */
};

/*
 * open(2) path with flags (O_CLOEXEC added) only when it names a regular file,
 * reached as resolve says.  Nothing else is ever opened, not even for a look:
 * the path is taken as an O_PATH handle first, which acts on nothing (a FIFO's
 * open wakes or waits for a writer, a device's open can act), and the file the
 * handle holds is reopened through /proc/self/fd, so a file swapped in
 * between is not the one opened.  Returns the fd, or -1 with errno: ELOOP for
 * a symlink refused, EINVAL for a FIFO, device, socket or directory, or what
 * open(2) says (ENOENT when /proc is not mounted).
 */
int sp_open_regular(const char *path, int flags, enum sp_resolve resolve);

/* ---- string escapes (escape.c) ----------------------------------------- */

/* Append s with every byte that is not well-formed UTF-8 replaced by U+FFFD. */
int sp_buf_put_utf8(struct sp_buf *b, const char *s);
/*
 * Append s as a quoted JSON string (RFC 8259) that a reader decodes to the
 * same code points: the characters sp_text_is_printable refuses as \uXXXX (a
 * surrogate pair past U+FFFF), and each byte that is not well-formed UTF-8,
 * which JSON cannot hold, as the text views' \xHH (written "\\xHH").
 */
int sp_json_put_string(struct sp_buf *b, const char *s);

/*
 * Text for a terminal.  Names a target or another user chose (thread names,
 * perf-map and ELF symbols, module paths, the recorded command) reach root's
 * terminal, where an escape sequence would be obeyed: every byte of a C0 or
 * C1 control, DEL, a bidirectional mark, embedding, override or isolate
 * (U+061C, U+200E-U+200F, U+202A-U+202E, U+2066-U+2069), an invisible
 * character (U+200B-U+200D, U+2028-U+2029, U+2060-U+206F, U+FEFF,
 * U+FFF9-U+FFFB, U+E0000-U+E007F), a backslash, or a byte that is not
 * well-formed UTF-8 is shown as \xHH; the rest as it is.  The backslash is
 * escaped (\x5c) so that every \xHH shown is an escape, never a name's own
 * text; the escape is therefore not idempotent: escape a string once.
 */
/* True when s needs no escape. */
bool sp_text_is_printable(const char *s);
/* Append s escaped; 0 or -ENOMEM. */
int sp_buf_put_printable(struct sp_buf *b, const char *s);
/* s itself when printable, else an escaped copy in a; NULL on allocation failure. */
const char *sp_arena_printable(struct sp_arena *a, const char *s);
/*
 * The same for text escaped once already (names a spool stores, which
 * `symbolize` wrote escaped): backslashes stay, so "\x1b" is not escaped
 * again, and anything else a terminal would obey is still escaped.
 */
const char *sp_arena_printable_escaped(struct sp_arena *a, const char *s);
/* sp_fputs_printable (stackpulse.h) writes the same escapes to a FILE. */

/*
 * sp_output_create for a spool: a fresh inode, created under a temporary
 * name beside path, locked (fcntl(2) F_OFD_SETLK, F_WRLCK; held until closed)
 * and then renamed over path, so no reader's lock on the file there keeps the
 * spool unlocked, and a spool another recording still writes keeps its name:
 * -SP_E_SPOOL_BUSY.  The new file keeps the old one's mode and (for root)
 * owner.  Only where the directory refuses a new file or the rename is the
 * file at path locked and truncated in place.  A mode that gives group and others nothing (0600,
 * a system-wide spool) makes the output private: a regular file there that
 * another user owns, or that others may read, is unlinked and the output
 * created anew (O_EXCL), or -SP_E_OUTPUT_NOT_OURS when it cannot be.
 * (lib/util/open_regular.c)
 */
int sp_output_create_locked(const char *path, unsigned int mode);
/*
 * A new file beside path, for what is renamed over it: ".BASENAME.XXXXXX" in
 * path's directory, made as mkostemp(3) does (O_CREAT | O_EXCL, mode 0600,
 * O_CLOEXEC; a symlink at the name fails).  Returns the descriptor and sets
 * *tmp (the caller frees it), or -errno with *tmp NULL.
 */
int sp_temp_beside(const char *path, char **tmp);
/*
 * Give fd the owner and group of the file old describes, which it replaces.
 * Only root can give a file away (chown(2)); anyone else keeps at most the
 * group, and the file stays theirs.  0 or -errno.
 */
struct stat;
int sp_fd_keep_owner(int fd, const struct stat *old);
/* Whether a writer holds fd's file write-locked (F_OFD_GETLK; any descriptor). */
bool sp_fd_write_locked(int fd);

#endif
