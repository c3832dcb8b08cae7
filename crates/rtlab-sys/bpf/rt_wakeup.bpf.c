// SPDX-License-Identifier: (MIT OR GPL-2.0)
//
// Wake-up latency of every real-time task, aggregated in the kernel.
//
// sched_waking stamps a real-time task (SCHED_FIFO, SCHED_RR,
// SCHED_DEADLINE; every task when `all_tasks` is set at load); its next
// sched_switch in takes the time since, and counts it in a per-CPU
// histogram keyed by policy, priority and bucket (the CPU is the per-CPU
// map's own), and in the task's worst; a wake-up from an interrupt's
// work (its handler, a device softirq it raised, its IRQ thread) is also
// counted from that handler's exit (IRQ to task), and one in a timer's
// callback from the timer's expiry. Built by crates/rtlab-sys/build.rs
// with clang -target bpf; CO-RE: the task_struct fields below are
// relocated against the running kernel's BTF at load, so no kernel header
// and no compiler are needed on the node. Self-contained: only clang.
// The bucket layout is mirrored by `bpf::bucket_bounds_ns` in Rust.

typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;

#define SEC(name) __attribute__((section(name), used))
#define __uint(name, val) int (*name)[val]
#define __type(name, val) typeof(val) *name
#define __always_inline inline __attribute__((always_inline))

// The kernel's UAPI numbers (include/uapi/linux/bpf.h, stable ABI).
#define BPF_MAP_TYPE_HASH 1
#define BPF_MAP_TYPE_ARRAY 2
#define BPF_MAP_TYPE_PERCPU_HASH 5
#define BPF_MAP_TYPE_PERCPU_ARRAY 6
#define BPF_MAP_TYPE_LRU_HASH 9
#define BPF_MAP_TYPE_RINGBUF 27
#define BPF_ANY 0
#define BPF_NOEXIST 1

// The helpers used, by their stable numbers.
static void *(*bpf_map_lookup_elem)(void *map, const void *key) = (void *)1;
static long (*bpf_map_update_elem)(void *map, const void *key, const void *value, __u64 flags) = (void *)2;
static long (*bpf_map_delete_elem)(void *map, const void *key) = (void *)3;
static __u64 (*bpf_ktime_get_ns)(void) = (void *)5;
static __u32 (*bpf_get_smp_processor_id)(void) = (void *)8;
static long (*bpf_get_current_comm)(void *buf, __u32 size) = (void *)16;
static long (*bpf_get_stack)(void *ctx, void *buf, __u32 size, __u64 flags) = (void *)67;
static long (*bpf_probe_read_kernel)(void *dst, __u32 size, const void *unsafe_ptr) = (void *)113;
static long (*bpf_probe_read_kernel_str)(void *dst, __u32 size, const void *unsafe_ptr) = (void *)115;
static long (*bpf_ringbuf_output)(void *ringbuf, void *data, __u64 size, __u64 flags) = (void *)130;

char LICENSE[] SEC("license") = "Dual MIT/GPL";

// Only the fields read; their offsets come from the kernel's BTF.
struct task_struct {
	int pid;
	int tgid;
	int prio;
	unsigned int policy;
	unsigned int rt_priority;
	char comm[16];
} __attribute__((preserve_access_index));

#define SCHED_FIFO 1
#define SCHED_RR 2
#define SCHED_DEADLINE 6

struct irqaction {
	const char *name;
} __attribute__((preserve_access_index));

struct timerqueue_node {
	long long expires;
} __attribute__((preserve_access_index));

struct hrtimer_clock_base {
	int clockid;
} __attribute__((preserve_access_index));

struct hrtimer {
	struct timerqueue_node node;
	struct hrtimer_clock_base *base;
} __attribute__((preserve_access_index));

#define CLOCK_MONOTONIC 1

// Set by the loader: every task, not only the real-time ones.
const volatile __u32 all_tasks = 0;
// Set by the loader: a wake-up at least this late (ns) has its CPU's
// recent events sent to user space to be explained; 0: none is.
const volatile __u64 late_ns = 0;
// Set by the loader: at most one such record per CPU per this many ns,
// unless it is the CPU's latest worst (the worst is always explained).
const volatile __u64 late_every_ns = 10000000;

// Set by the loader: measure the threads of one task alone (`rtlab
// task-latency`): 1, those of the process `watch.tgid`; 2, those named
// `watch.comm`; 0, by policy (`all_tasks`).
const volatile __u32 watch_mode = 0;

// The task watched, set by user space once known (a program's PID is
// known once it is started): nothing is counted before.
struct watch {
	__u32 tgid;
	__u32 set;
	char comm[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct watch);
} watch SEC(".maps");

#define SUM_BUCKET 0xffff
// Per thread of the task watched: key TID << 32 | bucket (SUM_BUCKET: the
// sum of its latencies, ns). Value: a count per CPU.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, __u64);
} thread_hist SEC(".maps");

// A task's wake-up, until its switch-in: when, and if an interrupt's
// work woke it, the IRQ + 1 and its handler's exit (0 while the handler
// runs on).
struct stamp {
	__u64 woken_ns;
	__u64 irq_exit_ns;
	__u32 irq;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct stamp);
} woken SEC(".maps");

// Key: policy << 24 | priority << 16 | bucket. Value, per CPU: the
// wake-ups counted in the bucket and the sum of their latencies (ns),
// one cell for both (one lookup a wake-up).
struct cell {
	__u64 count;
	__u64 sum_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct cell);
} histogram SEC(".maps");

// The same keys and cells: how late the timer that woke the task fired,
// from its expiry (CLOCK_MONOTONIC timers: every task's own sleep) to
// its wake-up.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct cell);
} timer_late SEC(".maps");

// The same keys: IRQ to task, from the exit of the interrupt handler
// whose work woke the task (in the handler, in a device softirq the
// handler raised, or by the IRQ's thread) to the task's switch-in.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct cell);
} irq_wake SEC(".maps");

// What a CPU's interrupts are doing, for IRQ to task. IRQ numbers are
// kept + 1 (0: none).
#define SOFTIRQS 10
#define WOKEN_IN_HANDLER 4
struct raised {
	// The IRQ whose handler raised the softirq, and that handler's exit
	// (0 until it exits).
	__u32 irq;
	__u32 pad;
	__u64 exit_ns;
};

struct irq_state {
	// The IRQ whose handler runs now, and the softirqs it raised.
	__u32 irq;
	__u32 raised_mask;
	// The last handler exit, and whether it asked for its IRQ thread.
	__u32 exit_irq;
	__u32 exit_woke_thread;
	__u64 exit_ns;
	// The running device softirq's IRQ (raised by its handler), and
	// that handler's exit.
	__u32 softirq_irq;
	// In a hrtimer callback: a wake-up there is the timer's.
	__u32 hrtimer;
	__u64 softirq_exit_ns;
	// Tasks woken in the running handler: their exit is filled at its end.
	__u32 n_woken;
	__u32 woken[WOKEN_IN_HANDLER];
	struct raised raised[SOFTIRQS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct irq_state);
} irq_state SEC(".maps");

// Per IRQ number: the exit of its last handler that woke its IRQ thread
// (a thread `irq/N-...` then wakes tasks for it).
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u64);
} thread_irq_exit SEC(".maps");

// Per CPU: the expiry (ns) of the CLOCK_MONOTONIC timer whose callback
// runs now, or 0.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} expiring SEC(".maps");

// Per task (PID): its worst wake-up, and where.
struct worst {
	__u64 worst_ns;
	__u64 count;
	char comm[16];
	__u32 policy;
	__u32 priority;
	__u32 cpu;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct worst);
} tasks SEC(".maps");

// Per CPU: [0] wake-ups counted, [1] wake-ups not stamped (`woken` full),
// [2] cells not counted (`histogram` full), [3] late wake-ups sent,
// [4] late wake-ups not sent (the ring buffer full), [5] late wake-ups
// not sent (the rate bound).
#define COUNTERS 6
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, COUNTERS);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

static __always_inline void count(__u32 which)
{
	__u64 *n = bpf_map_lookup_elem(&counters, &which);
	if (n)
		*n += 1;
}

// The task watched: its process, or its name (the 16 bytes of `comm`
// up to the first NUL).
static __always_inline int watched(struct task_struct *p)
{
	__u32 zero = 0;
	struct watch *w = bpf_map_lookup_elem(&watch, &zero);
	if (!w || !w->set)
		return 0;
	if (watch_mode == 1)
		return p->tgid == (int)w->tgid;
	char comm[16];
	bpf_probe_read_kernel(comm, sizeof(comm), p->comm);
#pragma unroll
	for (int i = 0; i < 16; i++) {
		if (comm[i] != w->comm[i])
			return 0;
		if (!comm[i])
			return 1;
	}
	return 1;
}

static __always_inline int wanted(struct task_struct *p)
{
	if (watch_mode)
		return watched(p);
	unsigned int policy = p->policy;
	return all_tasks || policy == SCHED_FIFO || policy == SCHED_RR || policy == SCHED_DEADLINE;
}

// What each CPU did last, for the explanations: the switches and the
// interrupt handlers and softirqs, in a ring of LOG events per CPU. The
// record sent for a late wake-up is this whole struct: its head, filled
// at the late switch-in, and the ring as it then stands.
#define LOG 64
#define EV_SWITCH 1
#define EV_IRQ_ENTRY 2
#define EV_IRQ_EXIT 3
#define EV_SOFTIRQ_ENTRY 4
#define EV_SOFTIRQ_EXIT 5

struct ev {
	__u64 ts;
	__u32 kind;
	// The IRQ number or softirq vector; a switch: 1 if prev was preempted.
	__u32 arg;
	int prev_pid;
	int next_pid;
	int prev_prio;
	int next_prio;
	// A switch: the tasks' names; an IRQ's entry: its handler's name.
	char prev_comm[16];
	char next_comm[16];
};

#define STACK_DEPTH 32

struct late {
	__u64 woken_ns;
	__u64 switched_ns;
	int pid;
	int prio;
	__u32 policy;
	__u32 rt_priority;
	__u32 cpu;
	__u32 pad0;
	// Bytes of `stack` the kernel wrote (negative: none).
	long long stack_bytes;
	char comm[16];
	// Events logged on this CPU so far: the ring's next slot is this % LOG.
	__u32 logged;
	__u32 pad;
	__u64 last_sent_ns;
	__u64 worst_sent_ns;
	// The kernel stack at the switch-in (the task switched out's),
	// return addresses innermost first: in the record itself, so that
	// no later record's stack can stand in for it.
	__u64 stack[STACK_DEPTH];
	struct ev log[LOG];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct late);
} recent SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} late_wakeups SEC(".maps");


// The CPU's next slot of the ring, or 0 when explanations are off. An
// interrupt handler's program that runs amid a softirq's, between its
// two instructions here, takes the same slot: one event of the ring is
// then lost, rarely; an atomic fetch-and-add would need kernel 5.12.
static __always_inline struct ev *next_slot(struct late **cpu)
{
	if (!late_ns)
		return 0;
	__u32 zero = 0;
	struct late *l = bpf_map_lookup_elem(&recent, &zero);
	if (!l)
		return 0;
	*cpu = l;
	__u32 at = l->logged;
	l->logged = at + 1;
	return &l->log[at & (LOG - 1)];
}

static __always_inline struct irq_state *irq_state_here(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&irq_state, &zero);
}

SEC("tp_btf/irq_handler_entry")
int on_irq_entry(__u64 *ctx)
{
	struct irq_state *st = irq_state_here();
	if (st) {
		st->irq = (__u32)ctx[0] + 1;
		st->n_woken = 0;
		st->raised_mask = 0;
	}
	struct late *l;
	struct ev *e = next_slot(&l);
	if (!e)
		return 0;
	struct irqaction *action = (void *)ctx[1];
	e->kind = EV_IRQ_ENTRY;
	e->arg = (__u32)ctx[0];
	e->prev_comm[0] = 0;
	bpf_probe_read_kernel_str(e->prev_comm, sizeof(e->prev_comm), action->name);
	e->ts = bpf_ktime_get_ns();
	return 0;
}

static __always_inline int log_plain(__u32 kind, __u32 arg)
{
	struct late *l;
	struct ev *e = next_slot(&l);
	if (!e)
		return 0;
	e->kind = kind;
	e->arg = arg;
	e->ts = bpf_ktime_get_ns();
	return 0;
}

#define IRQ_WAKE_THREAD 2

// The handler's end: the tasks it woke and the softirqs it raised learn
// their origin's exit; a handler that asked for its thread leaves the
// exit for the tasks that thread wakes.
static __always_inline void irq_ended(__u32 irq, int ret, __u64 now)
{
	struct irq_state *st = irq_state_here();
	if (!st)
		return;
	st->irq = 0;
	st->exit_irq = irq + 1;
	st->exit_ns = now;
	st->exit_woke_thread = (ret & IRQ_WAKE_THREAD) != 0;
	if (st->exit_woke_thread)
		bpf_map_update_elem(&thread_irq_exit, &irq, &now, BPF_ANY);
#pragma unroll
	for (int i = 0; i < WOKEN_IN_HANDLER; i++) {
		if (i >= st->n_woken)
			break;
		__u32 pid = st->woken[i];
		struct stamp *o = bpf_map_lookup_elem(&woken, &pid);
		if (o && o->irq == irq + 1 && !o->irq_exit_ns)
			o->irq_exit_ns = now;
	}
	st->n_woken = 0;
#pragma unroll
	for (int v = 0; v < SOFTIRQS; v++) {
		if (st->raised_mask & (1u << v))
			st->raised[v].exit_ns = now;
	}
	st->raised_mask = 0;
}

SEC("tp_btf/irq_handler_exit")
int on_irq_exit(__u64 *ctx)
{
	irq_ended((__u32)ctx[0], (int)ctx[2], bpf_ktime_get_ns());
	return log_plain(EV_IRQ_EXIT, (__u32)ctx[0]);
}

// Softirqs that carry a device's work on from its handler: HI, NET_TX,
// NET_RX, BLOCK, IRQ_POLL, TASKLET.
#define DEVICE_SOFTIRQS 0x7d

SEC("tp_btf/softirq_raise")
int on_softirq_raise(__u64 *ctx)
{
	__u32 vec = (__u32)ctx[0];
	struct irq_state *st = irq_state_here();
	if (!st || !st->irq || vec >= SOFTIRQS || !(DEVICE_SOFTIRQS & (1u << vec)))
		return 0;
	st->raised[vec].irq = st->irq;
	st->raised[vec].exit_ns = 0;
	st->raised_mask |= 1u << vec;
	return 0;
}

SEC("tp_btf/softirq_entry")
int on_softirq_entry(__u64 *ctx)
{
	__u32 vec = (__u32)ctx[0];
	struct irq_state *st = irq_state_here();
	if (st && vec < SOFTIRQS) {
		// A handler's raise is taken by the softirq's next run alone.
		st->softirq_irq = st->raised[vec].irq;
		st->softirq_exit_ns = st->raised[vec].exit_ns;
		st->raised[vec].irq = 0;
	}
	return log_plain(EV_SOFTIRQ_ENTRY, vec);
}

SEC("tp_btf/softirq_exit")
int on_softirq_exit(__u64 *ctx)
{
	struct irq_state *st = irq_state_here();
	if (st)
		st->softirq_irq = 0;
	return log_plain(EV_SOFTIRQ_EXIT, (__u32)ctx[0]);
}

static __always_inline void log_switch(__u64 now, __u64 preempt, struct task_struct *prev,
				       struct task_struct *next)
{
	struct late *l;
	struct ev *e = next_slot(&l);
	if (!e)
		return;
	e->ts = now;
	e->kind = EV_SWITCH;
	e->arg = preempt ? 1 : 0;
	e->prev_pid = prev->pid;
	e->next_pid = next->pid;
	e->prev_prio = prev->prio;
	e->next_prio = next->prio;
	bpf_probe_read_kernel(e->prev_comm, sizeof(e->prev_comm), prev->comm);
	bpf_probe_read_kernel(e->next_comm, sizeof(e->next_comm), next->comm);
}

// Sends the CPU's recent events for the late wake-up of `next`, within
// the rate bound (the CPU's worst so far is always sent).
static __always_inline void send_late(void *ctx, struct task_struct *next, __u64 woken,
				      __u64 now, __u32 policy, __u32 prio)
{
	__u32 zero = 0;
	struct late *l = bpf_map_lookup_elem(&recent, &zero);
	if (!l)
		return;
	__u64 ns = now - woken;
	if (now - l->last_sent_ns < late_every_ns && ns <= l->worst_sent_ns) {
		count(5);
		return;
	}
	l->woken_ns = woken;
	l->switched_ns = now;
	l->pid = next->pid;
	l->prio = next->prio;
	l->policy = policy;
	l->rt_priority = prio;
	l->cpu = bpf_get_smp_processor_id();
	l->stack_bytes = bpf_get_stack(ctx, l->stack, sizeof(l->stack), 0);
	bpf_probe_read_kernel(l->comm, sizeof(l->comm), next->comm);
	if (bpf_ringbuf_output(&late_wakeups, l, sizeof(*l), 0)) {
		count(4);
		return;
	}
	l->last_sent_ns = now;
	if (ns > l->worst_sent_ns)
		l->worst_sent_ns = ns;
	count(3);
}

// 1 µs wide below 100 µs, then ten per decade's step: 10 µs to 1 ms,
// 100 µs to 10 ms, 1 ms to 100 ms, 10 ms to 1 s, one bucket beyond.
static __always_inline __u32 bucket_of(__u64 ns)
{
	__u64 us = ns / 1000;
	if (us < 100)
		return us;
	if (us < 1000)
		return 90 + us / 10;
	if (us < 10000)
		return 180 + us / 100;
	if (us < 100000)
		return 270 + us / 1000;
	if (us < 1000000)
		return 360 + us / 10000;
	return 460;
}

static __always_inline void add_at(void *map, const void *key, __u64 by)
{
	__u64 *n = bpf_map_lookup_elem(map, key);
	if (n) {
		*n += by;
	} else if (bpf_map_update_elem(map, key, &by, BPF_NOEXIST)) {
		// Another CPU made it meanwhile: its value is ours too now.
		n = bpf_map_lookup_elem(map, key);
		if (n)
			*n += by;
		else
			count(2);
	}
}

// One wake-up of `ns` into its cell of `map` (`histogram`, `timer_late`,
// `irq_wake`).
static __always_inline void add_cell(void *map, __u32 key, __u64 ns)
{
	struct cell *c = bpf_map_lookup_elem(map, &key);
	if (c) {
		c->count += 1;
		c->sum_ns += ns;
		return;
	}
	struct cell fresh = {1, ns};
	if (!bpf_map_update_elem(map, &key, &fresh, BPF_NOEXIST))
		return;
	// Another CPU made it meanwhile: its value is ours too now.
	c = bpf_map_lookup_elem(map, &key);
	if (c) {
		c->count += 1;
		c->sum_ns += ns;
	} else {
		count(2);
	}
}

// The thread's own histogram, when one task is watched.
static __always_inline void add_thread(__u32 tid, __u32 bucket, __u64 ns)
{
	__u64 key = (__u64)tid << 32 | bucket;
	add_at(&thread_hist, &key, 1);
	key = (__u64)tid << 32 | SUM_BUCKET;
	add_at(&thread_hist, &key, ns);
}


SEC("tp_btf/hrtimer_expire_entry")
int on_expire_entry(__u64 *ctx)
{
	struct hrtimer *t = (void *)ctx[0];
	__u32 zero = 0;
	__u64 *at = bpf_map_lookup_elem(&expiring, &zero);
	if (!at)
		return 0;
	*at = t->base->clockid == CLOCK_MONOTONIC ? (__u64)t->node.expires : 0;
	struct irq_state *st = irq_state_here();
	if (st)
		st->hrtimer = 1;
	return 0;
}

SEC("tp_btf/hrtimer_expire_exit")
int on_expire_exit(__u64 *ctx)
{
	__u32 zero = 0;
	__u64 *at = bpf_map_lookup_elem(&expiring, &zero);
	if (at)
		*at = 0;
	struct irq_state *st = irq_state_here();
	if (st)
		st->hrtimer = 0;
	return 0;
}

// N of a name `irq/N-...` (an IRQ thread's), or -1.
static __always_inline int irq_thread_number(const char *comm)
{
	if (comm[0] != 'i' || comm[1] != 'r' || comm[2] != 'q' || comm[3] != '/')
		return -1;
	int n = 0;
#pragma unroll
	for (int i = 4; i < 10; i++) {
		char c = comm[i];
		if (c == '-')
			return i > 4 ? n : -1;
		if (c < '0' || c > '9')
			return -1;
		n = n * 10 + (c - '0');
	}
	return -1;
}

// Where `p`'s wake-up came from, if from an interrupt's work: in its
// handler (the exit then comes later), in a device softirq its handler
// raised, by its IRQ thread, or (an IRQ thread itself) woken for its
// handler. A wake-up in a timer's callback is the timer's.
static __always_inline void note_irq_origin(struct task_struct *p, __u32 pid, struct stamp *o)
{
	struct irq_state *st = irq_state_here();
	if (!st || st->hrtimer)
		return;
	if (st->irq) {
		// More tasks than it can follow: those past them are not counted.
		__u32 n = st->n_woken;
		if (n < WOKEN_IN_HANDLER) {
			o->irq = st->irq;
			st->woken[n & (WOKEN_IN_HANDLER - 1)] = pid;
			st->n_woken = n + 1;
		}
		return;
	}
	if (st->softirq_irq) {
		o->irq = st->softirq_irq;
		o->irq_exit_ns = st->softirq_exit_ns;
		return;
	}
	char comm[16];
	if (st->exit_woke_thread) {
		bpf_probe_read_kernel(comm, sizeof(comm), p->comm);
		int own = irq_thread_number(comm);
		if (own >= 0 && st->exit_irq == (__u32)own + 1) {
			o->irq = st->exit_irq;
			o->irq_exit_ns = st->exit_ns;
			return;
		}
	}
	bpf_get_current_comm(comm, sizeof(comm));
	int by = irq_thread_number(comm);
	if (by < 0)
		return;
	__u32 key = by;
	__u64 *exit = bpf_map_lookup_elem(&thread_irq_exit, &key);
	if (exit) {
		o->irq = key + 1;
		o->irq_exit_ns = *exit;
	}
}

// A wake-up inside a CLOCK_MONOTONIC timer's callback (the task's own
// sleep ending): how late the timer fired, counted by the task's series.
static __always_inline void count_timer_late(struct task_struct *p, __u64 now)
{
	__u32 zero = 0;
	__u64 *expires = bpf_map_lookup_elem(&expiring, &zero);
	if (!expires || !*expires)
		return;
	__u64 late = now > *expires ? now - *expires : 0;
	__u32 series = (p->policy & 0xff) << 24 | (p->rt_priority & 0xff) << 16;
	add_cell(&timer_late, series | bucket_of(late), late);
}

SEC("tp_btf/sched_waking")
int on_waking(__u64 *ctx)
{
	struct task_struct *p = (void *)ctx[0];
	if (!wanted(p))
		return 0;
	__u32 pid = p->pid;
	struct stamp stamp = {};
	stamp.woken_ns = bpf_ktime_get_ns();
	if (!watch_mode)
		note_irq_origin(p, pid, &stamp);
	if (bpf_map_update_elem(&woken, &pid, &stamp, BPF_ANY))
		count(1);
	count_timer_late(p, stamp.woken_ns);
	return 0;
}

// The switch-in of a task an interrupt's work woke: the time since its
// handler's exit (0 when it runs before that exit, on another CPU).
static __always_inline void count_irq_wake(__u64 exit, __u32 series, __u64 now)
{
	__u64 ns = exit && now > exit ? now - exit : 0;
	add_cell(&irq_wake, series | bucket_of(ns), ns);
}

static __always_inline void keep_worst(__u32 pid, struct task_struct *next, __u64 ns,
				       __u32 policy, __u32 prio)
{
	struct worst *w = bpf_map_lookup_elem(&tasks, &pid);
	if (w) {
		w->count += 1;
		w->policy = policy;
		w->priority = prio;
		if (ns > w->worst_ns) {
			w->worst_ns = ns;
			w->cpu = bpf_get_smp_processor_id();
		}
		return;
	}
	struct worst fresh = {};
	fresh.worst_ns = ns;
	fresh.count = 1;
	fresh.policy = policy;
	fresh.priority = prio;
	fresh.cpu = bpf_get_smp_processor_id();
	bpf_probe_read_kernel_str(fresh.comm, sizeof(fresh.comm), next->comm);
	bpf_map_update_elem(&tasks, &pid, &fresh, BPF_ANY);
}

// A task that execs another program starts a new row: the name it had
// (a shell's, `chrt`'s) would stand for the program it became.
SEC("tp_btf/sched_process_exec")
int on_exec(__u64 *ctx)
{
	struct task_struct *p = (void *)ctx[0];
	__u32 pid = p->pid;
	bpf_map_delete_elem(&tasks, &pid);
	return 0;
}

SEC("tp_btf/sched_switch")
int on_switch(__u64 *ctx)
{
	__u64 preempt = ctx[0] & 0xff;
	struct task_struct *prev = (void *)ctx[1];
	struct task_struct *next = (void *)ctx[2];
	// The clock is read here only to log the switch; a switch to a task
	// not counted then needs no reading at all.
	__u64 now = late_ns ? bpf_ktime_get_ns() : 0;
	log_switch(now, preempt, prev, next);
	// A task preempted was running: a stamp it still has is of a wake-up
	// while it ran (no switch-in followed), not of this wait.
	if (preempt && wanted(prev)) {
		__u32 prev_pid = prev->pid;
		bpf_map_delete_elem(&woken, &prev_pid);
	}
	__u32 pid = next->pid;
	// A task not counted has no stamp: its policy is cheaper to read
	// than the map (most switches of a busy machine are such tasks').
	if (pid == 0 || !wanted(next))
		return 0;
	struct stamp *at = bpf_map_lookup_elem(&woken, &pid);
	if (!at)
		return 0;
	if (!now)
		now = bpf_ktime_get_ns();
	__u64 woken_at = at->woken_ns;
	__u32 irq = at->irq;
	__u64 irq_exit = at->irq_exit_ns;
	__u64 ns = now - woken_at;
	bpf_map_delete_elem(&woken, &pid);
	__u32 policy = next->policy & 0xff;
	__u32 prio = next->rt_priority & 0xff;
	__u32 series = policy << 24 | prio << 16;
	__u32 bucket = bucket_of(ns);
	add_cell(&histogram, series | bucket, ns);
	if (watch_mode)
		add_thread(pid, bucket, ns);
	else if (irq)
		count_irq_wake(irq_exit, series, now);
	keep_worst(pid, next, ns, policy, prio);
	count(0);
	if (late_ns && ns >= late_ns)
		send_late(ctx, next, woken_at, now, policy, prio);
	return 0;
}
