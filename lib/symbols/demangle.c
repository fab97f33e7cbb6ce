/* SPDX-License-Identifier: MIT */
/*
 * Name demangling through libiberty (Debian libiberty-dev), the demangler of
 * GNU binutils and GDB: C++ (Itanium ABI), Rust legacy and Rust v0.
 */
#include "symbols/symbols.h"

#include <libiberty/demangle.h>
#include <string.h>

/*
 * Rust's legacy scheme is an Itanium name whose last component is the hash
 * "17h" + 16 hex digits; libiberty's Rust demangler recognizes it by that
 * and decodes the "$u7b$"-style escapes, so it is tried before C++.  Without
 * DMGL_VERBOSE the hash is dropped (as perf and rustfilt print it).  Rust v0
 * names start "_R".  DMGL_PARAMS keeps C++ parameter lists, DMGL_ANSI their
 * qualifiers, as __cxa_demangle prints them.
 */
char *sp_demangle(const char *name)
{
	if (!name)
		return NULL;
	int opts = DMGL_PARAMS | DMGL_ANSI;
	if (!strncmp(name, "_R", 2))
		return rust_demangle(name, opts);
	/* Only mangled names: the C++ demangler would also take types ("i" -> "int"). */
	if (strncmp(name, "_Z", 2))
		return NULL;
	char *out = rust_demangle(name, opts);
	return out ? out : cplus_demangle_v3(name, opts);
}
