/* SPDX-License-Identifier: MIT */
/* C++ name demangling through the C++ runtime's __cxa_demangle, found at run time. */
#include "symbols/symbols.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

typedef char *(*cxa_demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);

/*
 * The library is C and links no C++ runtime; the demangler is looked up once
 * instead: already loaded (a C++ embedder), else libstdc++.so.6 by soname.
 * Without it names stay mangled, which is still correct output.
 */
static cxa_demangle_fn demangler(void)
{
	static int looked;
	static cxa_demangle_fn fn;
	if (!looked) {
		looked = 1;
		fn = (cxa_demangle_fn)dlsym(RTLD_DEFAULT, "__cxa_demangle");
		if (!fn) {
			void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
			if (h)
				fn = (cxa_demangle_fn)dlsym(h, "__cxa_demangle");
			/* h stays open: fn points into it for the process's life. */
		}
	}
	return fn;
}

char *sp_demangle(const char *name)
{
	/* Only Itanium ABI names; __cxa_demangle would also take plain types ("i" -> "int"). */
	if (!name || strncmp(name, "_Z", 2))
		return NULL;
	cxa_demangle_fn fn = demangler();
	if (!fn)
		return NULL;
	int status = -1;
	char *out = fn(name, NULL, NULL, &status);
	if (status != 0) {
		free(out);
		return NULL;
	}
	return out;
}
