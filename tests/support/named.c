/* A task that names itself, for rtlab's hardening tests: prctl(PR_SET_NAME)
 * takes up to 15 bytes of anything but NUL, blanks and `key=` text
 * included, and the kernel's trace shows the name as it is in every
 * sched_switch and sched_waking of the task. It then spins a little and
 * sleeps 200 us, over and over, for SECONDS.
 *
 *   named NAME SECONDS */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>

int main(int argc, char **argv) {
    if (argc < 3)
        return 2;
    if (prctl(PR_SET_NAME, argv[1], 0, 0, 0) != 0)
        return 1;
    double seconds = atof(argv[2]);
    struct timespec start, now, nap = {0, 200000};
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        volatile unsigned spin = 0;
        for (unsigned i = 0; i < 20000; i++)
            spin += i;
        nanosleep(&nap, NULL);
        clock_gettime(CLOCK_MONOTONIC, &now);
        double ran = (double)(now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9;
        if (ran > seconds)
            return 0;
    }
}
