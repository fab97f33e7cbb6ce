/* SPDX-License-Identifier: MIT */
/* What a module path says by itself: its display name, and whether it is a Python runtime. */
#include "util/util.h"

#include <ctype.h>
#include <string.h>

#define DELETED_SUFFIX " (deleted)"

size_t sp_path_len_undeleted(const char *path)
{
	size_t n = strlen(path), k = strlen(DELETED_SUFFIX);
	/* The kernel appends " (deleted)" in maps when the file was unlinked. */
	return n > k && !strcmp(path + n - k, DELETED_SUFFIX) ? n - k : n;
}

const char *sp_path_name_span(const char *path, size_t *len)
{
	size_t n = sp_path_len_undeleted(path);
	const char *slash = memrchr(path, '/', n);
	/* "/usr/lib/" keeps its whole text: a name cut to nothing says less. */
	if (slash && (size_t)(slash - path) + 1 < n) {
		n -= (size_t)(slash - path) + 1;
		path = slash + 1;
	}
	*len = n;
	return path;
}

size_t sp_path_to_name(const char *path, char *buf, size_t size)
{
	size_t n;
	const char *name;
	/* perf names anonymous executable mappings "//anon". */
	if (!path || !*path || !strcmp(path, "//anon")) {
		name = "[anon]";
		n = strlen(name);
	} else {
		name = sp_path_name_span(path, &n);
	}
	if (size) {
		size_t c = n < size - 1 ? n : size - 1;
		memcpy(buf, name, c);
		buf[c] = '\0';
	}
	return n;
}

/* Version digits and dots, then ABI flags: "3.12", "3.12d", "3.13t"; "" too. */
static bool version_and_flags(const char *p, const char *end)
{
	while (p < end && (isdigit((unsigned char)*p) || *p == '.'))
		p++;
	while (p < end && strchr("dmtu", *p))
		p++;
	return p == end;
}

bool sp_is_python_module(const char *path)
{
	if (!path)
		return false;
	size_t n;
	const char *base = sp_path_name_span(path, &n), *end = base + n;
	if (n > 9 && !strncmp(base, "libpython", 9)) {
		/* libpython3.so, libpython3.12.so.1.0, libpython3.12d.so */
		const char *so = strstr(base + 9, ".so");
		if (!so || so >= end || !isdigit((unsigned char)base[9]) ||
		    !version_and_flags(base + 9, so))
			return false;
		for (const char *c = so + 3; c < end; c++)
			if (!isdigit((unsigned char)*c) && *c != '.')
				return false;
		return true;
	}
	/* python, python3, python3.12, python3.12d: not python3-config, not pythonista. */
	return n >= 6 && !strncmp(base, "python", 6) && version_and_flags(base + 6, end);
}
