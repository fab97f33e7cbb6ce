/* SPDX-License-Identifier: MIT */
/* Annotation's source files: found where the build left them (or where the user says), read once. */
#include "report/annotate.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* One source file as DWARF names it: its text split into lines, or not found. */
struct source {
	char *name;
	char *text;     /* NULL when not found */
	size_t *starts; /* line i (1-based) starts at text + starts[i - 1] */
	size_t nlines;
};

struct sp_ann_sources {
	char *source_dir;
	struct source *files;
	size_t n, cap;
};

int sp_ann_sources_new(const char *source_dir, struct sp_ann_sources **out)
{
	struct sp_ann_sources *c = calloc(1, sizeof(*c));
	if (!c || (source_dir && !(c->source_dir = strdup(source_dir)))) {
		free(c);
		return -ENOMEM;
	}
	*out = c;
	return 0;
}

void sp_ann_sources_free(struct sp_ann_sources *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++) {
		free(c->files[i].name);
		free(c->files[i].text);
		free(c->files[i].starts);
	}
	free(c->files);
	free(c->source_dir);
	free(c);
}

/* Read a regular file of at most SP_ANN_SOURCE_MAX bytes into f; false when it cannot be. */
static bool read_source(const char *path, struct source *f)
{
	int fd = sp_open_regular(path, O_RDONLY | O_NONBLOCK, SP_RESOLVE_FOLLOW);
	struct stat st;
	if (fd < 0)
		return false;
	if (fstat(fd, &st) || (uint64_t)st.st_size > SP_ANN_SOURCE_MAX ||
	    !(f->text = malloc((size_t)st.st_size + 1))) {
		close(fd);
		return false;
	}
	size_t len = 0;
	ssize_t r;
	while (len < (size_t)st.st_size &&
	       ((r = read(fd, f->text + len, (size_t)st.st_size - len)) > 0 || (r < 0 && errno == EINTR)))
		len += r > 0 ? (size_t)r : 0;
	close(fd);
	f->text[len] = '\0';
	size_t cap = 0;
	for (size_t at = 0; at < len;) {
		if (sp_array_reserve((void **)&f->starts, &cap, f->nlines + 1, sizeof(*f->starts)))
			goto fail;
		f->starts[f->nlines++] = at;
		char *nl = memchr(f->text + at, '\n', len - at);
		if (!nl)
			break;
		*nl = '\0';
		at = (size_t)(nl - f->text) + 1;
	}
	return true;
fail:
	free(f->text);
	free(f->starts);
	f->text = NULL;
	f->starts = NULL;
	f->nlines = 0;
	return false;
}

/* Try dir/rest (either may be empty): true when found and read. */
static bool try_path(struct source *f, const char *dir, size_t dirlen, const char *rest)
{
	char *p = NULL;
	if (asprintf(&p, "%.*s%s%s", (int)dirlen, dir, dirlen ? "/" : "", rest) < 0)
		return false;
	bool ok = read_source(p, f);
	free(p);
	return ok;
}

static void find_source(struct sp_ann_sources *c, struct source *f, const char *comp_dir,
			const char *module_path)
{
	const char *name = f->name, *base = strrchr(name, '/');
	base = base ? base + 1 : name;
	const char *slash = module_path ? strrchr(module_path, '/') : NULL;
	const char *rel = name;
	while (*rel == '/')
		rel++;
	if (c->source_dir && (try_path(f, c->source_dir, strlen(c->source_dir), rel) ||
			      try_path(f, c->source_dir, strlen(c->source_dir), base)))
		return;
	if (name[0] == '/' && try_path(f, "", 0, name))
		return;
	if (name[0] != '/' && comp_dir && try_path(f, comp_dir, strlen(comp_dir), name))
		return;
	if (slash)
		(void)try_path(f, module_path, (size_t)(slash - module_path), base);
}

const char *sp_ann_source_line(struct sp_ann_sources *c, const char *file, uint32_t line,
			       const char *comp_dir, const char *module_path, bool *missing)
{
	*missing = false;
	if (!file || !line)
		return NULL;
	struct source *f = NULL;
	for (size_t i = 0; i < c->n && !f; i++)
		if (!strcmp(c->files[i].name, file))
			f = &c->files[i];
	if (!f) {
		if (sp_array_reserve((void **)&c->files, &c->cap, c->n + 1, sizeof(*c->files)))
			return NULL;
		f = &c->files[c->n];
		*f = (struct source){.name = strdup(file)};
		if (!f->name)
			return NULL;
		c->n++;
		find_source(c, f, comp_dir, module_path);
	}
	if (!f->text) {
		*missing = true;
		return NULL;
	}
	return line <= f->nlines ? f->text + f->starts[line - 1] : "";
}
