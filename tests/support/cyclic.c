/* A cyclic task that measures itself, for rtlab's task-latency tests: each
 * cycle sleeps to an absolute expiry (clock_nanosleep on CLOCK_MONOTONIC,
 * a timerfd read, or epoll_wait on a timerfd then its read), then prints
 * the expiry and its own lateness
 * (CLOCK_MONOTONIC just after the wake-up, minus the expiry), in ns.
 * A "cond" mode measures a thread woken by a condition variable from
 * another: the signaller's CLOCK_MONOTONIC before the signal is the
 * "expiry".
 *
 *   cyclic MODE PERIOD_US CYCLES OUT [FIFO_PRIO [SLACK_NS]]
 *          MODE: sleep | timerfd | epoll | cond
 *
 * FIFO_PRIO 0 leaves it SCHED_OTHER; SLACK_NS sets its timer slack
 * (prctl PR_SET_TIMERSLACK), and the slack the kernel then gives it
 * (PR_GET_TIMERSLACK) is written to OUT.slack.
 *
 * It first sleeps 300 ms (so that a tracer has learned its threads), then
 * runs its cycles, then writes OUT, one line per cycle:
 * `EXPIRY_NS LATENESS_NS SLEPT` (SLEPT 0: the cycle's wake-up came before
 * it waited, it did not sleep). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static struct timespec ts_of(int64_t ns) {
    struct timespec t = {ns / 1000000000, ns % 1000000000};
    return t;
}

static int64_t *expiries, *lateness;
/* Whether the cycle slept (a condition variable signalled before the wait
 * wakes no one). */
static char *slept;
static long cycles, period_ns;

static void by_sleep(void) {
    int64_t next = now_ns() + period_ns;
    for (long i = 0; i < cycles; i++, next += period_ns) {
        struct timespec t = ts_of(next);
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) != 0) {}
        lateness[i] = now_ns() - next;
        expiries[i] = next;
    }
}

static void by_timerfd(int with_epoll) {
    int fd = timerfd_create(CLOCK_MONOTONIC, 0);
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN};
    if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
        perror("epoll");
        exit(1);
    }
    int64_t first = now_ns() + period_ns;
    struct itimerspec spec = {ts_of(period_ns), ts_of(first)};
    if (fd < 0 || timerfd_settime(fd, TFD_TIMER_ABSTIME, &spec, NULL) != 0) {
        perror("timerfd");
        exit(1);
    }
    int64_t next = first;
    for (long i = 0; i < cycles; i++) {
        uint64_t n;
        struct epoll_event got;
        if (with_epoll && epoll_wait(ep, &got, 1, -1) != 1) {
            perror("epoll_wait");
            exit(1);
        }
        /* With epoll, the clock is read at once, as an event loop would
         * before it handles the event; the read comes after. */
        int64_t woke = now_ns();
        if (read(fd, &n, sizeof n) != sizeof n) {
            perror("read");
            exit(1);
        }
        next += (int64_t)(n - 1) * period_ns;
        lateness[i] = (with_epoll ? woke : now_ns()) - next;
        expiries[i] = next;
        next += period_ns;
    }
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static long posted, taken;
static int64_t signalled_at;

static void *signaller(void *arg) {
    (void)arg;
    int64_t next = now_ns() + period_ns;
    for (long i = 0; i < cycles; i++, next += period_ns) {
        struct timespec t = ts_of(next);
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) != 0) {}
        pthread_mutex_lock(&lock);
        posted++;
        signalled_at = now_ns();
        pthread_mutex_unlock(&lock);
        pthread_cond_signal(&cond);
    }
    return NULL;
}

static void by_cond(void) {
    pthread_t t;
    pthread_create(&t, NULL, signaller, NULL);
    pthread_setname_np(t, "signaller");
    for (long i = 0; i < cycles; i++) {
        pthread_mutex_lock(&lock);
        slept[i] = 0;
        while (posted == taken) {
            slept[i] = 1;
            pthread_cond_wait(&cond, &lock);
        }
        taken++;
        int64_t at = signalled_at;
        pthread_mutex_unlock(&lock);
        lateness[i] = now_ns() - at;
        expiries[i] = at;
    }
    pthread_join(t, NULL);
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: cyclic sleep|timerfd|cond PERIOD_US CYCLES OUT [FIFO_PRIO]\n");
        return 2;
    }
    period_ns = atol(argv[2]) * 1000;
    cycles = atol(argv[3]);
    if (argc > 6) {
        long slack = atol(argv[6]);
        char path[4096];
        snprintf(path, sizeof path, "%s.slack", argv[4]);
        FILE *f = fopen(path, "w");
        if (prctl(PR_SET_TIMERSLACK, slack) != 0 || !f) {
            perror("PR_SET_TIMERSLACK");
            return 1;
        }
        fprintf(f, "%d\n", prctl(PR_GET_TIMERSLACK));
        fclose(f);
    }
    if (argc > 5 && atoi(argv[5]) > 0) {
        struct sched_param p = {atoi(argv[5])};
        if (sched_setscheduler(0, SCHED_FIFO, &p) != 0) {
            perror("sched_setscheduler");
            return 1;
        }
    }
    struct timespec warmup = {0, 300000000};
    nanosleep(&warmup, NULL);
    expiries = calloc(cycles, sizeof *expiries);
    lateness = calloc(cycles, sizeof *lateness);
    slept = malloc(cycles);
    memset(slept, 1, cycles);
    if (!strcmp(argv[1], "sleep"))
        by_sleep();
    else if (!strcmp(argv[1], "timerfd"))
        by_timerfd(0);
    else if (!strcmp(argv[1], "epoll"))
        by_timerfd(1);
    else
        by_cond();
    FILE *out = fopen(argv[4], "w");
    if (!out) {
        perror(argv[4]);
        return 1;
    }
    for (long i = 0; i < cycles; i++)
        fprintf(out, "%lld %lld %d\n", (long long)expiries[i], (long long)lateness[i], slept[i]);
    return fclose(out) != 0;
}
