// SPDX-License-Identifier: MIT
/*
 * A minimal JIT that describes its code the way node --perf-prof
 * --perf-prof-unwinding-info and CPython 3.13 -X perf_jit do: a jitdump
 * (Linux tools/perf/Documentation/jitdump-specification.txt) written to
 * jit-PID.dump in the working directory and mapped executable, holding a
 * JIT_CODE_UNWINDING_INFO record (an .eh_frame) and the JIT_CODE_LOAD of
 * jit_work.  main -> run_jit -> call_jit calls jit_work for -t SECONDS of
 * CPU time.  jit_work keeps no frame pointer and no perf map names it: its
 * callers are found only through the jitdump's unwinding information.  The
 * file is left behind for the profiler (its path is printed).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "jit_common.h"

#define LOOP_COUNT 1000000u

/*
 * jit_work(callback), hand-assembled (Intel SDM vol. 2 encodings):
 *    0: 48 83 ec 18        sub  $24,%rsp     (CFA = rsp + 32 from here)
 *    4: ff d7              call *%rdi
 *    6: b9 NN NN NN NN     mov  $LOOP_COUNT,%ecx
 *   11: ff c9           1: dec  %ecx
 *   13: 75 fc              jnz  1b
 *   15: 31 c0              xor  %eax,%eax
 *   17: 48 83 c4 18        add  $24,%rsp     (CFA = rsp + 8 from 21)
 *   21: c3                 ret
 */
#define COUNT_AT 7
static const unsigned char code_template[] = {
	0x48, 0x83, 0xec, 0x18, 0xff, 0xd7, 0xb9, 0, 0, 0, 0, 0xff, 0xc9, 0x75, 0xfc,
	0x31, 0xc0, 0x48, 0x83, 0xc4, 0x18, 0xc3,
};
#define CODE_SIZE sizeof(code_template)
#define ALIGNED_SIZE ((CODE_SIZE + 7) & ~(size_t)7)

/*
 * Its .eh_frame as the runtimes lay it out: placed (for the pc-relative
 * addresses) right after the code, at code + ALIGN_8(size), and followed
 * by an .eh_frame_hdr (LSB 5.0 "Exception Frame Header").
 */
#define FDE_PC_AT 32 /* offset of the FDE's pc_begin in the .eh_frame */
static const unsigned char eh_frame_template[48] = {
	/* CIE: length 20, id 0, version 1, "zR", code align 1, data align -8, RA r16,
	 * augmentation: FDE pointers pcrel sdata4; DW_CFA_def_cfa rsp+8, r16 at CFA-8 */
	20, 0, 0, 0, 0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x78, 0x10, 1, 0x1b,
	0x0c, 0x07, 0x08, 0x90, 0x01, 0, 0,
	/* FDE: length 20, CIE pointer 28, pc_begin (filled in), pc_range, no augmentation;
	 * advance 4, def_cfa_offset 32; advance 17, def_cfa_offset 8 */
	20, 0, 0, 0, 28, 0, 0, 0, 0, 0, 0, 0, CODE_SIZE, 0, 0, 0, 0,
	0x44, 0x0e, 0x20, 0x51, 0x0e, 0x08, 0,
};

static unsigned char *put(unsigned char *p, const void *v, size_t n)
{
	memcpy(p, v, n);
	return p + n;
}

static unsigned char *put32(unsigned char *p, uint32_t v) { return put(p, &v, 4); }
static unsigned char *put64(unsigned char *p, uint64_t v) { return put(p, &v, 8); }

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

/* The jitdump: header, unwinding information, code load.  0 or -1. */
static int write_jitdump(int fd, const unsigned char *fn)
{
	unsigned char buf[1024], *p = buf;
	uint64_t code = (uint64_t)(uintptr_t)fn, ts = now_ns();
	uint32_t pid = (uint32_t)getpid(), tid = (uint32_t)syscall(SYS_gettid);
	/* header: magic, version, size, e_machine (EM_X86_64), pad, pid, timestamp, flags */
	p = put32(p, 0x4A695444);
	p = put32(p, 1);
	p = put32(p, 40);
	p = put32(p, 62);
	p = put32(p, 0);
	p = put32(p, pid);
	p = put64(p, ts);
	p = put64(p, 0);

	unsigned char eh[48 + 20];
	memcpy(eh, eh_frame_template, 48);
	int32_t rel = (int32_t)-(int64_t)(ALIGNED_SIZE + FDE_PC_AT);
	memcpy(eh + FDE_PC_AT, &rel, 4);
	/* .eh_frame_hdr: version 1, eh_frame_ptr pcrel sdata4, count udata4, table datarel sdata4 */
	unsigned char *h = eh + 48;
	h[0] = 1, h[1] = 0x1b, h[2] = 0x03, h[3] = 0x3b;
	int32_t v[4] = {-(48 + 4), 1, -(int32_t)(ALIGNED_SIZE + 48), -24};
	memcpy(h + 4, v, sizeof(v));
	/* JIT_CODE_UNWINDING_INFO (4): unwinding_size, eh_frame_hdr_size, mapped_size, data */
	uint32_t usize = 16 + 24 + sizeof(eh);
	uint32_t upad = (8 - usize % 8) % 8;
	p = put32(p, 4);
	p = put32(p, usize + upad);
	p = put64(p, ts);
	p = put64(p, sizeof(eh));
	p = put64(p, 20);
	p = put64(p, 0);
	p = put(p, eh, sizeof(eh));
	memset(p, 0, upad);
	p += upad;
	/* JIT_CODE_LOAD (0): pid, tid, vma, code_addr, code_size, code_index, name, code */
	static const char name[] = "jit_work";
	p = put32(p, 0);
	p = put32(p, 16 + 40 + sizeof(name) + CODE_SIZE);
	p = put64(p, ts);
	p = put32(p, pid);
	p = put32(p, tid);
	p = put64(p, code);
	p = put64(p, code);
	p = put64(p, CODE_SIZE);
	p = put64(p, 1);
	p = put(p, name, sizeof(name));
	p = put(p, fn, CODE_SIZE);
	return write(fd, buf, (size_t)(p - buf)) == p - buf ? 0 : -1;
}

NOINLINE void jit_callback(void)
{
	__asm__ __volatile__("" ::: "memory");
}

int main(int argc, char **argv)
{
	double seconds = 1;
	int c;
	while ((c = getopt(argc, argv, "t:h")) != -1) {
		if (c == 't')
			seconds = strtod(optarg, NULL);
		else
			goto usage;
	}
	if (optind != argc || seconds <= 0)
		goto usage;

	long page = sysconf(_SC_PAGESIZE);
	unsigned char *code = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE | PROT_EXEC,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED) {
		perror("jit_dump: mmap");
		return 1;
	}
	unsigned char *fn = code + 64;
	memcpy(fn, code_template, CODE_SIZE);
	unsigned count = LOOP_COUNT;
	memcpy(fn + COUNT_AT, &count, sizeof(count));
	__builtin___clear_cache((char *)fn, (char *)fn + CODE_SIZE);

	char path[64];
	snprintf(path, sizeof(path), "jit-%d.dump", (int)getpid());
	unlink(path);
	/* 0644 whatever the umask says: profilers refuse files others can write. */
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0 || fchmod(fd, 0644) || write_jitdump(fd, fn)) {
		perror("jit_dump: cannot write the jitdump");
		return 1;
	}
	/* The mapping is how profilers learn of the file (its mmap record names it). */
	if (mmap(NULL, (size_t)page, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0) == MAP_FAILED) {
		perror("jit_dump: cannot map the jitdump");
		return 1;
	}
	printf("jit_dump: jitdump %s\n", path);
	fflush(stdout);

	stop_after(seconds);
	unsigned long calls = run_jit((jit_fn)(void *)fn);
	printf("jit_dump: %lu calls\n", calls);
	return 0;
usage:
	fprintf(stderr, "usage: jit_dump [-t SECONDS]\n"
			"Runs generated code described by ./jit-PID.dump (a jitdump with unwinding\n"
			"information, no perf map) for SECONDS (default 1) of CPU time; the file is\n"
			"left for the profiler to read.\n");
	return 2;
}
