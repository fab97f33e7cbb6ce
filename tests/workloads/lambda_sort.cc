// SPDX-License-Identifier: MIT
// Qualified inline names (tests/e2e/65-inline-qualified.sh): a capturing lambda, inside a
// member function in a namespace, compares the elements std::sort orders; the
// lambda's operator() and the std:: helpers are inlined.  Argument: seconds (default 2).
#include <algorithm>
#include <vector>
#include <cstdlib>
#include <ctime>
#include <time.h>
namespace app {
struct Sorter {
	int bias;
	long run(std::vector<int> &v) {
		std::sort(v.begin(), v.end(), [this](int a, int b) { return (a ^ bias) < (b ^ bias); });
		return v[0];
	}
};
}
int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 2;
	// The end on a monotonic clock: time(0) + (time_t)secs ran 0 to 1 s for "1.5",
	// by where in its second the run began, and then sampled no sort at all.
	timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	double end = now.tv_sec + now.tv_nsec / 1e9 + secs;
	app::Sorter s{5};
	long acc = 0;
	std::vector<int> v(100000);
	for (;;) {
		for (size_t i = 0; i < v.size(); i++) v[i] = rand();
		acc += s.run(v);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec + now.tv_nsec / 1e9 >= end)
			break;
	}
	return acc == 42;
}
