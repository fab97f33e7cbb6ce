/* SPDX-License-Identifier: MIT */
/* Whether a function's change between two spools is beyond sampling noise. */
#include "report/diff.h"

#include <math.h>

#define Z95 1.959964 /* two-sided 95% of the normal distribution */
#define ZERO_COUNT 0.5 /* a count of 0 in the interval: Haldane's half sample */

/*
 * Samples of one function are Poisson counts (a rare event in many periods):
 * the log of a ratio of two rates has variance 1/n0 + 1/n1 (the Wald
 * interval of a Poisson rate ratio).  A ratio of two shares, each n of N
 * samples, has variance 1/n0 - 1/N0 + 1/n1 - 1/N1 (Katz's log interval of a
 * ratio of proportions).  The ratio of the measures is the ratio of the
 * counts times the ratio of what one sample stands for in each spool.
 */
void sp_diff_interval(struct sp_diff_measure *m, double whole0_n, double whole1_n, bool shares)
{
	double n0 = m->base_n > 0 ? m->base_n : ZERO_COUNT;
	double n1 = m->cur_n > 0 ? m->cur_n : ZERO_COUNT;
	if (m->base > 0)
		m->ratio = m->cur / m->base;
	else
		m->ratio = m->cur > 0 ? INFINITY : NAN;
	if (m->base_n <= 0 && m->cur_n <= 0) {
		m->low = m->high = NAN;
		m->beyond_noise = false;
		return;
	}
	/* each sample's worth on either side, so a zero count still gives a bound */
	double w0 = m->base_n > 0 ? m->base / m->base_n : 0, w1 = m->cur_n > 0 ? m->cur / m->cur_n : 0;
	if (!(w0 > 0))
		w0 = w1;
	if (!(w1 > 0))
		w1 = w0;
	double est = n1 * w1 / (n0 * w0);
	double var = 1 / n0 + 1 / n1;
	if (shares) {
		if (whole0_n > 0)
			var -= 1 / whole0_n;
		if (whole1_n > 0)
			var -= 1 / whole1_n;
		if (var < 0)
			var = 0;
	}
	double half = Z95 * sqrt(var);
	m->low = est * exp(-half);
	m->high = est * exp(half);
	m->beyond_noise = m->low > 1 || m->high < 1;
}
