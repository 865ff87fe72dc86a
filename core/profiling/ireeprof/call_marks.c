/* gputop's call marks: where each call of IREE's benchmark tool starts and ends, on CLOCK_MONOTONIC.
 *
 * iree-benchmark-module times each repetition with Google Benchmark, which reads the process's CPU
 * clock (CLOCK_PROCESS_CPUTIME_ID) exactly when it starts and stops its timer, and IREE never does.
 * Loaded with LD_PRELOAD, this library writes CLOCK_MONOTONIC (IREE's own host clock) to the file
 * named by GPUTOP_CALL_MARKS at each of those reads, so the profile's records can be laid inside
 * each call's true window. It changes nothing else: every clock_gettime is answered by libc's own.
 *
 * Test hook: with GPUTOP_TEST_SLOW_PROFILED_CALL_US set, it also sleeps that long after each mark.
 * Google Benchmark reads its wall clock before the CPU clock when it starts the timer, so the sleep
 * lands inside every timed call (at least once): gputop's tests slow a real pass with it.
 * With GPUTOP_TEST_SLOW_CALL_AT=N:US (gputop sets it for a pass's unprofiled run before the pass when
 * a test asks, `overhead.SLOW_REFERENCE_CALL_ENV`) it sleeps US microseconds once, after the N-th read
 * of the CPU clock: one real slow call among the reference. Google Benchmark 1.x reads it four times a
 * repetition (seen with IREE 3.13's tool), the first as a call starts: N = 1, 5, 9, ... land in a call.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int (*libc_clock_gettime)(clockid_t, struct timespec *);
static FILE *marks;
static long slow_us = -1;
static long slow_at_read = -1, slow_at_us = 0, cpu_reads = 0;

static void sleep_us(long micros) {
  struct timespec pause = {micros / 1000000, (micros % 1000000) * 1000};
  nanosleep(&pause, NULL);
}

int clock_gettime(clockid_t clock, struct timespec *result) {
  if (!libc_clock_gettime) {
    libc_clock_gettime = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
  }
  int status = libc_clock_gettime(clock, result);
  if (clock == CLOCK_PROCESS_CPUTIME_ID) {
    if (!marks) {
      const char *path = getenv("GPUTOP_CALL_MARKS");
      if (path) marks = fopen(path, "w");
    }
    if (marks) {
      struct timespec now;
      libc_clock_gettime(CLOCK_MONOTONIC, &now);
      fprintf(marks, "%lld\n", (long long)now.tv_sec * 1000000000LL + (long long)now.tv_nsec);
      fflush(marks);
    }
    if (slow_us < 0) {
      const char *slow = getenv("GPUTOP_TEST_SLOW_PROFILED_CALL_US");
      slow_us = slow ? atol(slow) : 0;
    }
    if (slow_us > 0) sleep_us(slow_us);
    if (slow_at_read < 0) {
      const char *at = getenv("GPUTOP_TEST_SLOW_CALL_AT");
      slow_at_read = 0;
      if (at && sscanf(at, "%ld:%ld", &slow_at_read, &slow_at_us) != 2) slow_at_read = 0;
    }
    cpu_reads++;
    if (slow_at_read > 0 && slow_at_us > 0 && cpu_reads == slow_at_read) sleep_us(slow_at_us);
  }
  return status;
}
