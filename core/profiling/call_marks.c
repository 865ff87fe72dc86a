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
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int (*libc_clock_gettime)(clockid_t, struct timespec *);
static FILE *marks;
static long slow_us = -1;

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
    if (slow_us > 0) {
      struct timespec pause = {slow_us / 1000000, (slow_us % 1000000) * 1000};
      nanosleep(&pause, NULL);
    }
  }
  return status;
}
