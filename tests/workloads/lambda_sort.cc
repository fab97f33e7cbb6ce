// SPDX-License-Identifier: MIT
// Qualified inline names (tests/e2e/65-inline-qualified.sh): a capturing lambda, inside a
// member function in a namespace, compares the elements std::sort orders; the
// lambda's operator() and the std:: helpers are inlined.  Argument: seconds (default 2).
#include <algorithm>
#include <vector>
#include <cstdlib>
#include <ctime>
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
	time_t end = time(0) + (time_t)secs;
	app::Sorter s{5};
	long acc = 0;
	std::vector<int> v(100000);
	while (time(0) < end) {
		for (size_t i = 0; i < v.size(); i++) v[i] = rand();
		acc += s.run(v);
	}
	return acc == 42;
}
