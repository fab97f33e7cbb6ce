/* SPDX-License-Identifier: MIT */
/* Module files: each backing file opened once, its ELF facts read once, its CFI shared by build-id. */
#include "record/record.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

void sp_modfile_cache_init(struct sp_modfile_cache *c)
{
	memset(c, 0, sizeof(*c));
	sp_map_init(&c->file_index);
	sp_map_init(&c->build_id_index);
}

static uint64_t file_key(uint64_t dev, uint64_t ino)
{
	return sp_hash64(dev * 0x9e3779b97f4a7c15ULL ^ ino);
}

/* A file by (dev, ino); [vdso] and the like by name. */
static uint64_t index_key(const char *path, uint64_t dev, uint64_t ino)
{
	return path[0] == '[' ? sp_hash64(0x5644534fULL ^ (uint64_t)path[1]) : file_key(dev, ino);
}

static uint64_t build_id_key(const struct sp_elf_info *info)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (unsigned i = 0; i < info->build_id_len; i++)
		h = (h ^ info->build_id[i]) * 0x100000001b3ULL;
	return h;
}

static void modfile_free(struct sp_modfile *f)
{
	if (!f)
		return;
	if (f->cfi && !f->cfi_owner)
		sp_cfi_table_free(f->cfi);
	if (f->elf)
		elf_end(f->elf);
	if (f->fd >= 0)
		close(f->fd);
	free(f->image);
	free(f->path);
	sp_elf_info_release(&f->info);
	free(f);
}

/* Our own [vdso]: the kernel maps the same image into every process. */
static int open_vdso(struct sp_modfile *f)
{
	const void *base;
	size_t size;
	int err = sp_own_vdso(&base, &size);
	if (err)
		return err;
	f->image = malloc(size);
	if (!f->image)
		return -ENOMEM;
	memcpy(f->image, base, size);
	f->elf = elf_memory(f->image, size);
	return f->elf ? 0 : -SP_E_ELF_MALFORMED;
}

/*
 * Open the file behind a mapping once.  The path the kernel reports may no
 * longer be the mapped file (deleted, replaced, another mount namespace), so
 * the inode is checked and /proc/PID/map_files is the fallback.  Whatever is
 * at the path now is the target's choice: maps names a deleted module
 * "PATH (deleted)", a name anyone who could write the directory may take,
 * and its directories may since have become symlinks (to one holding a
 * FIFO, or to /dev).  Only a regular file is opened (a FIFO would wait for a
 * writer and hang record -p; a device's open(2) alone acts), and through no
 * symlink: the kernel's path has none, so one on the way was put there.
 */
static int open_modfile(struct sp_modfile *f, pid_t pid, uint64_t start, uint64_t end,
			const char *path)
{
	struct stat st;
	if (!strcmp(path, "[vdso]"))
		return open_vdso(f);
	int fd = path[0] == '/'
			 ? sp_open_regular(path, O_RDONLY | O_NONBLOCK, SP_RESOLVE_NO_SYMLINKS)
			 : -1;
	if (fd >= 0 && (fstat(fd, &st) || (f->ino && st.st_ino != f->ino))) {
		close(fd);
		fd = -1;
	}
	if (fd < 0) {
		char alt[64];
		snprintf(alt, sizeof(alt), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid,
			 start, end);
		/* A magic link to the mapped file itself: followed, but still checked. */
		fd = open(alt, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0 || fstat(fd, &st)) {
			int e = -errno;
			if (fd >= 0)
				close(fd);
			return e;
		}
		if (!S_ISREG(st.st_mode)) {
			close(fd);
			return -EINVAL;
		}
	}
	f->fd = fd;
	f->size = (uint64_t)st.st_size;
	f->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
	f->elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	return f->elf ? 0 : -SP_E_ELF_MALFORMED;
}

/* Whether the open files a and b (of one size) hold the same bytes. */
static bool same_bytes(struct sp_modfile_cache *r, const struct sp_modfile *a,
		       const struct sp_modfile *b)
{
	enum { CHUNK = 256 << 10 };
	/* Past the recording's reading budget the files count as different. */
	if (2 * a->size > SP_SAME_BYTES_RUN_MAX - r->same_bytes_read)
		return false;
	uint8_t *x = malloc(2 * CHUNK), *y = x + CHUNK;
	bool same = x != NULL;
	for (uint64_t off = 0; same && off < a->size; off += CHUNK) {
		size_t want = a->size - off < CHUNK ? (size_t)(a->size - off) : CHUNK;
		r->same_bytes_read += 2 * (uint64_t)want;
		same = pread(a->fd, x, want, (off_t)off) == (ssize_t)want &&
		       pread(b->fd, y, want, (off_t)off) == (ssize_t)want && !memcmp(x, y, want);
	}
	free(x);
	return same;
}

/*
 * Copies of one program without a build-id (test binaries run from many
 * paths, stripped of it) are one file to the report: the first open file of
 * the same size and bytes is f's group (its cfi_owner).  Only files of equal
 * size are read, SP_SAME_BYTES_CANDIDATES of them at most.
 */
static void find_same_bytes(struct sp_modfile_cache *r, struct sp_modfile *f)
{
	if (!f->info_ok || f->info.build_id_len || f->fd < 0 || !f->size ||
	    f->size > SP_SAME_BYTES_MAX)
		return;
	unsigned tried = 0;
	for (size_t i = 0; i < r->nfiles && tried < SP_SAME_BYTES_CANDIDATES; i++) {
		struct sp_modfile *o = r->files[i];
		if (o->size != f->size || o->cfi_owner || !o->info_ok || o->info.build_id_len ||
		    o->fd < 0)
			continue;
		tried++;
		if (same_bytes(r, o, f)) {
			f->cfi_owner = o;
			return;
		}
	}
}

struct sp_modfile *sp_modfile_get(struct sp_modfile_cache *r, pid_t pid, uint64_t start,
				  uint64_t end, uint64_t dev, uint64_t ino, const char *path)
{
	uint64_t key = index_key(path, dev, ino);
	uint32_t idx;
	if (sp_map_get(&r->file_index, key, &idx))
		return r->files[idx];
	if (sp_array_reserve((void **)&r->files, &r->files_cap, r->nfiles + 1,
			     sizeof(*r->files)))
		return NULL;
	struct sp_modfile *f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->fd = -1;
	f->dev = dev;
	f->ino = ino;
	f->path = strdup(path);
	if (!f->path) {
		free(f);
		return NULL;
	}
	if (open_modfile(f, pid, start, end, path) == 0 && sp_elf_info_read(f->elf, &f->info) == 0)
		f->info_ok = true;
	else
		r->unreadable++;
	if (f->info_ok && f->info.build_id_len) {
		uint32_t other;
		uint64_t bkey = build_id_key(&f->info);
		if (sp_map_get(&r->build_id_index, bkey, &other) &&
		    r->files[other]->info.build_id_len == f->info.build_id_len &&
		    !memcmp(r->files[other]->info.build_id, f->info.build_id, f->info.build_id_len))
			f->cfi_owner = r->files[other];
		else
			sp_map_put(&r->build_id_index, bkey, (uint32_t)r->nfiles);
	}
	find_same_bytes(r, f);
	r->files[r->nfiles] = f;
	sp_map_put(&r->file_index, key, (uint32_t)r->nfiles);
	r->nfiles++;
	return f;
}

bool sp_modfile_replaced(const struct sp_modfile *f)
{
	if (f->fd < 0 || f->path[0] != '/')
		return false;
	/* The kernel marks an unlinked file's path; the name may since hold another file. */
	size_t n = strlen(f->path), k = strlen(" (deleted)");
	char *path = n > k && !strcmp(f->path + n - k, " (deleted)") ? strndup(f->path, n - k)
								    : strdup(f->path);
	struct stat now, held;
	bool same = path && !stat(path, &now) && !fstat(f->fd, &held) &&
		    now.st_dev == held.st_dev && now.st_ino == held.st_ino;
	free(path);
	return !same;
}

/*
 * The rule table is compiled on first use, once per build-id.  It inflates
 * nothing but a .debug_frame within SP_INFLATE_SECTION_MAX (sp_cfi_table_new):
 * what it left compressed is kept in owner->inflate, for the summary.
 */
struct sp_cfi_table *sp_modfile_cfi(struct sp_modfile *f)
{
	struct sp_modfile *owner = f->cfi_owner ? f->cfi_owner : f;
	if (!owner->cfi_tried) {
		owner->cfi_tried = true;
		/* Another user's file draws on the smaller budget (SP_INFLATE_UNTRUSTED_RUN_MAX). */
		struct sp_file_trust trust;
		if (owner->info_ok)
			sp_file_trust(owner->fd, &trust);
		if (!owner->info_ok ||
		    sp_cfi_table_new(owner->elf, &trust, &owner->inflate, &owner->cfi))
			owner->cfi = NULL;
	}
	return owner->cfi;
}

size_t sp_modfile_cache_evict(struct sp_modfile_cache *c)
{
	size_t kept = 0, freed = 0;
	/*
	 * A file kept (in use, or for the summary) keeps the file whose table
	 * it shares: owners have no owner of their own, so one pass marks them.
	 */
	for (size_t i = 0; i < c->nfiles; i++) {
		struct sp_modfile *f = c->files[i];
		if ((f->in_use || f->inflate.over_limit) && f->cfi_owner)
			f->cfi_owner->in_use = true;
	}
	for (size_t i = 0; i < c->nfiles; i++) {
		struct sp_modfile *f = c->files[i];
		if (f->in_use || f->inflate.over_limit) {
			c->files[kept++] = f;
		} else {
			modfile_free(f);
			freed++;
		}
	}
	c->nfiles = kept;
	if (!freed)
		return 0;
	/* the indexes point into files: rebuilt for the files kept */
	sp_map_release(&c->file_index);
	sp_map_release(&c->build_id_index);
	sp_map_init(&c->file_index);
	sp_map_init(&c->build_id_index);
	for (size_t i = 0; i < kept; i++) {
		struct sp_modfile *f = c->files[i];
		sp_map_put(&c->file_index, index_key(f->path, f->dev, f->ino), (uint32_t)i);
		if (f->info_ok && f->info.build_id_len && !f->cfi_owner)
			sp_map_put(&c->build_id_index, build_id_key(&f->info), (uint32_t)i);
	}
	return freed;
}

void sp_modfile_cache_release(struct sp_modfile_cache *c)
{
	for (size_t i = 0; i < c->nfiles; i++)
		modfile_free(c->files[i]);
	free(c->files);
	sp_map_release(&c->file_index);
	sp_map_release(&c->build_id_index);
	memset(c, 0, sizeof(*c));
}
