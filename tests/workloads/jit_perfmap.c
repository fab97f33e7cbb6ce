// SPDX-License-Identifier: MIT
/*
 * A minimal JIT: main -> run_jit -> call_jit calls jit_hot_loop, generated
 * x86-64 machine code this program copies into an anonymous executable page
 * and names in a perf map (/tmp/perf-PID.map, "START SIZE NAME" in hex),
 * for -t SECONDS of CPU time.  jit_hot_loop keeps a frame pointer and calls
 * back into native code (jit_callback, -c ITERATIONS of work, default none)
 * before its countdown loop.  The generated code has no CFI: its callers are
 * found only by reading its instructions.  The map file is left behind for
 * the profiler: whoever runs this removes it (its path is printed).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <unistd.h>

#include "jit_common.h"

#define LOOP_COUNT 1000000u

/*
 * jit_hot_loop(callback), hand-assembled (Intel SDM vol. 2 encodings):
 *   55                push %rbp
 *   48 89 e5          mov  %rsp,%rbp
 *   53                push %rbx
 *   48 83 ec 08       sub  $8,%rsp      (16-byte alignment for the call)
 *   ff d7             call *%rdi        (the native callback)
 *   b9 NN NN NN NN    mov  $LOOP_COUNT,%ecx
 *   ff c9          1: dec  %ecx
 *   75 fc             jnz  1b          (rel8 -4: back to the dec)
 *   89 c8             mov  %ecx,%eax   (returns 0)
 *   48 83 c4 08       add  $8,%rsp
 *   5b                pop  %rbx
 *   5d                pop  %rbp
 *   c3                ret
 */
#define COUNT_AT 12
static const unsigned char code_template[] = {
	0x55, 0x48, 0x89, 0xe5, 0x53, 0x48, 0x83, 0xec, 0x08, 0xff, 0xd7, 0xb9, 0, 0, 0, 0,
	0xff, 0xc9, 0x75, 0xfc, 0x89, 0xc8, 0x48, 0x83, 0xc4, 0x08, 0x5b, 0x5d, 0xc3,
};

static unsigned long callback_iterations;

/* Native code the generated code calls: its caller is the JIT frame. */
NOINLINE void jit_callback(void)
{
	for (volatile unsigned long i = 0; i < callback_iterations; i++)
		;
}

int main(int argc, char **argv)
{
	double seconds = 1;
	int c;
	while ((c = getopt(argc, argv, "t:c:h")) != -1) {
		if (c == 't')
			seconds = strtod(optarg, NULL);
		else if (c == 'c')
			callback_iterations = strtoul(optarg, NULL, 10);
		else
			goto usage;
	}
	if (optind != argc || seconds <= 0)
		goto usage;

	long page = sysconf(_SC_PAGESIZE);
	unsigned char *code = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE | PROT_EXEC,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED) {
		perror("jit_perfmap: mmap");
		return 1;
	}
	/* Not at the page start, so a frame's offset in the page and in the function differ. */
	unsigned char *fn = code + 64;
	memcpy(fn, code_template, sizeof(code_template));
	unsigned count = LOOP_COUNT;
	memcpy(fn + COUNT_AT, &count, sizeof(count));
	__builtin___clear_cache((char *)fn, (char *)fn + sizeof(code_template));

	char path[64];
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	/*
	 * A fresh file, not one an earlier process with this pid left (some
	 * profilers judge a map by its birth time).  0644
	 * whatever the umask says about group write: profilers refuse maps that
	 * others can write.
	 */
	unlink(path);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	FILE *map = fd < 0 ? NULL : fdopen(fd, "w");
	if (!map) {
		perror("jit_perfmap: cannot write the perf map");
		return 1;
	}
	fprintf(map, "%lx %zx jit_hot_loop\n", (unsigned long)(uintptr_t)fn,
		sizeof(code_template));
	if (fclose(map)) {
		perror("jit_perfmap: cannot write the perf map");
		return 1;
	}
	printf("jit_perfmap: perf map %s\n", path);
	fflush(stdout);

	stop_after(seconds);
	unsigned long calls = run_jit((jit_fn)(void *)fn);
	printf("jit_perfmap: %lu calls\n", calls);
	return 0;
usage:
	fprintf(stderr, "usage: jit_perfmap [-t SECONDS] [-c ITERATIONS]\n"
			"Runs generated code named in /tmp/perf-PID.map for SECONDS (default 1)\n"
			"of CPU time, calling back into native code that loops ITERATIONS times\n"
			"(default 0) per call; the map file is left for the profiler to read.\n");
	return 2;
}
