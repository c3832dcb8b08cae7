/* A CPU hog for rtlab's task-latency tests: SCHED_FIFO at PRIO, it burns
 * BURN_US of CPU every PERIOD_US, for SECONDS, on the CPU it is pinned to
 * (by the caller). A lower-priority task woken meanwhile on that CPU waits.
 *
 *   hog PRIO BURN_US PERIOD_US SECONDS */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: hog PRIO BURN_US PERIOD_US SECONDS\n");
        return 2;
    }
    struct sched_param p = {atoi(argv[1])};
    if (sched_setscheduler(0, SCHED_FIFO, &p) != 0) {
        perror("sched_setscheduler");
        return 1;
    }
    int64_t burn = atol(argv[2]) * 1000, period = atol(argv[3]) * 1000;
    int64_t end = now_ns() + atol(argv[4]) * 1000000000LL;
    for (int64_t next = now_ns(); next < end; next += period) {
        struct timespec t = {next / 1000000000, next % 1000000000};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
        int64_t stop = now_ns() + burn;
        while (now_ns() < stop) {}
    }
    return 0;
}
