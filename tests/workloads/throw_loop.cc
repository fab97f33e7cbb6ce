// SPDX-License-Identifier: MIT
// main -> catcher -> [relay ->] thrower throws a std::runtime_error that catcher catches, for -t
// SECONDS (default 2) of wall time: libgcc's unwinder runs most of the time, and
// hands each exception to catcher's handler (e2e 61).
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <stdexcept>
#include <unistd.h>

__attribute__((noinline)) void thrower(int i)
{
	if (i >= 0)
		throw std::runtime_error("thrown");
}

__attribute__((noinline)) void relay(int i)
{
	thrower(i);
	asm volatile("" ::: "memory");
}

/*
 * Half the throws come straight from thrower, half through relay: the
 * stack a rewritten return address slot fakes then fails, or reaches its
 * root with frames missing.
 */
__attribute__((noinline)) int catcher(int i)
{
	try {
		if (i & 1)
			relay(i);
		else
			thrower(i);
	} catch (const std::exception &) {
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	double seconds = 2;
	int c;
	while ((c = getopt(argc, argv, "t:")) != -1) {
		if (c != 't') {
			std::fprintf(stderr, "usage: throw_loop [-t SECONDS]\n");
			return 2;
		}
		seconds = std::strtod(optarg, nullptr);
	}
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	long caught = 0;
	do {
		for (int i = 0; i < 1000; i++)
			caught += catcher(i);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - t0.tv_sec + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
	std::printf("throw_loop: %ld caught\n", caught);
	return 0;
}
