/* SPDX-License-Identifier: MIT */
/* Durations, sizes and wall-clock times as users type them (perf's --switch-output spellings, ISO 8601). */
#include "util/util.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_TEXT 64

/* s[0, len) copied into buf as a C string: false when it is empty or too long. */
static bool copy_text(const char *s, size_t len, char *buf)
{
	if (!len || len >= MAX_TEXT)
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	return true;
}

/* A decimal number and what follows it; false unless it starts with a digit or '.'. */
static bool number(const char *s, double *v, char **end)
{
	if (!(isdigit((unsigned char)*s) || *s == '.'))
		return false;
	errno = 0;
	*v = strtod(s, end);
	return !errno && *end != s && isfinite(*v) && *v >= 0;
}

static bool duration(const char *s, uint64_t *ns)
{
	double v, unit = 1;
	char *end;
	if (!number(s, &v, &end))
		return false;
	if (*end) {
		if (end[1])
			return false;
		switch (*end) {
		case 's': unit = 1; break;
		case 'm': unit = 60; break;
		case 'h': unit = 3600; break;
		case 'd': unit = 86400; break;
		default: return false;
		}
	}
	v *= unit;
	/* a century at most: anything longer is a typo */
	if (v > 100.0 * 366 * 86400)
		return false;
	*ns = (uint64_t)(v * 1e9 + 0.5);
	return true;
}

int sp_parse_duration_ns(const char *s, uint64_t *ns)
{
	char buf[MAX_TEXT];
	if (!s || !copy_text(s, strlen(s), buf) || !duration(buf, ns) || !*ns)
		return -SP_E_BAD_ARG;
	return 0;
}

int sp_parse_size_bytes(const char *s, uint64_t *bytes)
{
	char buf[MAX_TEXT], *end;
	double v, unit = 1;
	if (!s || !copy_text(s, strlen(s), buf) || !number(buf, &v, &end))
		return -SP_E_BAD_ARG;
	switch (toupper((unsigned char)*end)) {
	case 'B': unit = 1; break;
	case 'K': unit = 1024.0; break;
	case 'M': unit = 1024.0 * 1024; break;
	case 'G': unit = 1024.0 * 1024 * 1024; break;
	case 'T': unit = 1024.0 * 1024 * 1024 * 1024; break;
	default: return -SP_E_BAD_ARG;
	}
	end++;
	/* "K", "KB", "KiB" alike */
	if (*end == 'i' && unit > 1)
		end++;
	if ((*end == 'B' || *end == 'b') && unit > 1)
		end++;
	v *= unit;
	if (*end || v < 1 || v > 1e18)
		return -SP_E_BAD_ARG;
	*bytes = (uint64_t)v;
	return 0;
}

int sp_parse_duration_or_size(const char *s, uint64_t *ns, uint64_t *bytes)
{
	*ns = *bytes = 0;
	if (!sp_parse_duration_ns(s, ns))
		return 0;
	*ns = 0;
	return sp_parse_size_bytes(s, bytes);
}

/* "HH:MM[:SS[.fff]]" into *sec_of_day (seconds) and *frac (µs); the rest in *end. */
static bool clock_time(const char *s, long *sec_of_day, uint64_t *frac, const char **end)
{
	int h, m, sec = 0, n = 0;
	if (sscanf(s, "%2d:%2d%n", &h, &m, &n) != 2 || n != 5)
		return false;
	s += n;
	if (*s == ':') {
		if (!isdigit((unsigned char)s[1]) || !isdigit((unsigned char)s[2]))
			return false;
		sec = (s[1] - '0') * 10 + (s[2] - '0');
		s += 3;
	}
	*frac = 0;
	if (*s == '.' || *s == ',') {
		uint64_t scale = 100000;
		for (s++; isdigit((unsigned char)*s); s++) {
			*frac += (uint64_t)(*s - '0') * scale;
			scale /= 10;
		}
	}
	if (h > 23 || m > 59 || sec > 60)
		return false;
	*sec_of_day = h * 3600L + m * 60L + sec;
	*end = s;
	return true;
}

int sp_parse_wall_time_us(const char *s, size_t len, uint64_t now_us, uint64_t *us)
{
	char buf[MAX_TEXT];
	if (!s || !copy_text(s, len, buf))
		return -SP_E_BAD_ARG;
	if (!strcmp(buf, "now")) {
		*us = now_us;
		return 0;
	}
	/* "-10m": that long before now */
	if (buf[0] == '-') {
		uint64_t ns;
		if (!duration(buf + 1, &ns) || ns / 1000 > now_us)
			return -SP_E_BAD_ARG;
		*us = now_us - ns / 1000;
		return 0;
	}
	/* ISO 8601: YYYY-MM-DD[THH:MM[:SS[.fff]][Z|+HH:MM|-HH:MM]], or HH:MM[:SS] today */
	struct tm tm = {0};
	const char *p = buf;
	long sec_of_day = 0;
	uint64_t frac = 0;
	int y, mo, d, n = 0;
	bool has_date = sscanf(p, "%4d-%2d-%2d%n", &y, &mo, &d, &n) == 3 && n == 10;
	if (has_date) {
		if (mo < 1 || mo > 12 || d < 1 || d > 31 || y < 1970)
			return -SP_E_BAD_ARG;
		p += n;
		if (*p == 'T' || *p == 't' || *p == ' ') {
			if (!clock_time(p + 1, &sec_of_day, &frac, &p))
				return -SP_E_BAD_ARG;
		}
	} else if (!clock_time(p, &sec_of_day, &frac, &p)) {
		return -SP_E_BAD_ARG;
	}
	bool utc = false;
	long offset = 0;
	if (*p == 'Z' || *p == 'z') {
		utc = true;
		p++;
	} else if (*p == '+' || *p == '-') {
		int oh, om = 0, k = 0;
		if (sscanf(p + 1, "%2d:%2d%n", &oh, &om, &k) == 2 && k == 5)
			k += 1;
		else if (sscanf(p + 1, "%2d%n", &oh, &k) == 1 && k == 2)
			k += 1;
		else
			return -SP_E_BAD_ARG;
		if (oh > 23 || om > 59)
			return -SP_E_BAD_ARG;
		offset = (*p == '-' ? -1 : 1) * (oh * 3600L + om * 60L);
		utc = true;
		p += k;
	}
	if (*p)
		return -SP_E_BAD_ARG;
	if (!has_date) {
		/* a time of day alone: today's, in the same zone */
		time_t now = (time_t)(now_us / 1000000);
		struct tm today;
		if (!(utc ? gmtime_r(&now, &today) : localtime_r(&now, &today)))
			return -SP_E_BAD_ARG;
		y = today.tm_year + 1900;
		mo = today.tm_mon + 1;
		d = today.tm_mday;
	}
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = (int)(sec_of_day / 3600);
	tm.tm_min = (int)(sec_of_day / 60 % 60);
	tm.tm_sec = (int)(sec_of_day % 60);
	tm.tm_isdst = -1;
	time_t t = utc ? timegm(&tm) : mktime(&tm);
	if (t == (time_t)-1 || (int64_t)t - offset < 0)
		return -SP_E_BAD_ARG;
	*us = (uint64_t)((int64_t)t - offset) * 1000000 + frac;
	return 0;
}
