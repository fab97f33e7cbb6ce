/* SPDX-License-Identifier: MIT */
/* The harnesses' check: a broken promise of the code under test aborts, so libFuzzer keeps the input. */
#ifndef SP_FUZZ_CHECK_H
#define SP_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                                  \
	do {                                                                         \
		if (!(cond)) {                                                       \
			fprintf(stderr, "%s:%d: broken promise: %s\n", __FILE__, __LINE__, \
				#cond);                                              \
			abort();                                                     \
		}                                                                    \
	} while (0)

#endif
