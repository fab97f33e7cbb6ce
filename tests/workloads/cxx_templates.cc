// SPDX-License-Identifier: MIT
// A C++ workload for symbolization checks: the hot loop sits in an inlined member
// function template (Accumulator<T>::add), inlined into a function template
// (reduce<T, N>), inlined into a noinline template (crunch<T>) instantiated for long
// and for double.  Built by tests/e2e/41-addr2line.sh with g++ -O2 -g.
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

namespace shapes {

template <typename T> struct Accumulator {
	T total{};
	__attribute__((always_inline)) inline void add(T v)
	{
		total += v * v + 3;
		__asm__ __volatile__("" : "+x,r"(total));
	}
};

template <typename T, int N> __attribute__((always_inline)) inline T reduce(const std::vector<T> &v)
{
	Accumulator<T> acc;
	for (int r = 0; r < N; r++)
		for (const T &x : v)
			acc.add(x);
	return acc.total;
}

template <typename T> __attribute__((noinline)) T crunch(const std::vector<T> &v)
{
	return reduce<T, 8>(v);
}

} // namespace shapes

static double cpu_seconds()
{
	timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1.0;
	std::vector<long> lv(2048);
	std::vector<double> dv(2048);
	for (size_t i = 0; i < lv.size(); i++) {
		lv[i] = (long)i;
		dv[i] = (double)i / 7.0;
	}
	double end = cpu_seconds() + secs, sink = 0;
	while (cpu_seconds() < end)
		sink += (double)shapes::crunch<long>(lv) + shapes::crunch<double>(dv);
	std::printf("cxx_templates: done %d\n", (int)sink & 1);
	return 0;
}
