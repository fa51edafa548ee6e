/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/progress.h"

/* Nothing is drawn before the work has taken this long. */
#define PROGRESS_DELAY_MS 1000
#define PROGRESS_PERIOD_MS 500

struct progress {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop, drawn;
	char *what;
	uint64_t total;
	progress_sample_fn fn;
	void *data;
	int64_t start_ms;
};

static bool enabled = true;

void progress_set_enabled(bool on)
{
	enabled = on;
}

void progress_format(const char *what, uint64_t done, uint64_t total, int64_t elapsed_ms, char *buf, size_t size)
{
	long s = (long)(elapsed_ms / 1000);

	if (total) {
		if (done > total)
			done = total;
		snprintf(buf, size, "kvrun: %s: %llu of ~%llu MiB (%u%%), %ld:%02ld", what,
		         (unsigned long long)(done >> 20), (unsigned long long)((total + (1 << 20) - 1) >> 20),
		         (unsigned)(done * 100 / total), s / 60, s % 60);
	} else {
		snprintf(buf, size, "kvrun: %s, %ld:%02ld", what, s / 60, s % 60);
	}
}

static void draw(struct progress *p)
{
	char line[512];

	progress_format(p->what, p->fn && p->total ? p->fn(p->data) : 0, p->fn ? p->total : 0,
	                clock_now_ms() - p->start_ms, line, sizeof(line));
	/* Carriage return, the line, and clear to its end. */
	dprintf(STDERR_FILENO, "\r%s\033[K", line);
	p->drawn = true;
}

static void *run(void *arg)
{
	struct progress *p = arg;
	int64_t next = p->start_ms + PROGRESS_DELAY_MS;

	pthread_mutex_lock(&p->lock);
	while (!p->stop) {
		struct timespec ts;
		int64_t wait = next - clock_now_ms();

		if (wait <= 0) {
			draw(p);
			next = clock_now_ms() + PROGRESS_PERIOD_MS;
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += wait / 1000;
		ts.tv_nsec += (wait % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&p->cond, &p->lock, &ts);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

struct progress *progress_start(const char *what, uint64_t total, progress_sample_fn fn, void *data)
{
	const char *env = getenv("KVRUN_PROGRESS");
	struct progress *p;
	pthread_condattr_t ca;

	if (!enabled || (env && !strcmp(env, "0")) || !isatty(STDERR_FILENO))
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p || !(p->what = strdup(what))) {
		free(p);
		return NULL;
	}
	p->total = total;
	p->fn = fn;
	p->data = data;
	p->start_ms = clock_now_ms();
	pthread_mutex_init(&p->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&p->thread, NULL, run, p) != 0) {
		free(p->what);
		free(p);
		return NULL;
	}
	return p;
}

void progress_stop(struct progress *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);
	if (p->drawn)
		dprintf(STDERR_FILENO, "\r\033[K");
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cond);
	free(p->what);
	free(p);
}
