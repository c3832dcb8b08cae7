// SPDX-License-Identifier: (MIT OR GPL-2.0)
//
// Wake-up latency of every real-time task, aggregated in the kernel.
//
// sched_waking stamps a real-time task (SCHED_FIFO, SCHED_RR,
// SCHED_DEADLINE; every task when `all_tasks` is set at load); its next
// sched_switch in takes the time since, and counts it in a per-CPU
// histogram keyed by policy, priority and bucket (the CPU is the per-CPU
// map's own), and in the task's worst. Built by crates/rtlab-sys/build.rs
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
#define BPF_MAP_TYPE_PERCPU_HASH 5
#define BPF_MAP_TYPE_PERCPU_ARRAY 6
#define BPF_MAP_TYPE_LRU_HASH 9
#define BPF_ANY 0
#define BPF_NOEXIST 1

// The helpers used, by their stable numbers.
static void *(*bpf_map_lookup_elem)(void *map, const void *key) = (void *)1;
static long (*bpf_map_update_elem)(void *map, const void *key, const void *value, __u64 flags) = (void *)2;
static long (*bpf_map_delete_elem)(void *map, const void *key) = (void *)3;
static __u64 (*bpf_ktime_get_ns)(void) = (void *)5;
static __u32 (*bpf_get_smp_processor_id)(void) = (void *)8;
static long (*bpf_probe_read_kernel_str)(void *dst, __u32 size, const void *unsafe_ptr) = (void *)115;

char LICENSE[] SEC("license") = "Dual MIT/GPL";

// Only the fields read; their offsets come from the kernel's BTF.
struct task_struct {
	int pid;
	unsigned int policy;
	unsigned int rt_priority;
	char comm[16];
} __attribute__((preserve_access_index));

#define SCHED_FIFO 1
#define SCHED_RR 2
#define SCHED_DEADLINE 6

// Set by the loader: every task, not only the real-time ones.
const volatile __u32 all_tasks = 0;

// A task's wake-up time, until its switch-in.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u64);
} woken SEC(".maps");

// Key: policy << 24 | priority << 16 | bucket; bucket SUM_BUCKET holds
// the sum of the latencies (ns). Value: a count per CPU.
#define SUM_BUCKET 0xffff
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u64);
} histogram SEC(".maps");

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
// [2] cells not counted (`histogram` full).
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 3);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

static __always_inline void count(__u32 which)
{
	__u64 *n = bpf_map_lookup_elem(&counters, &which);
	if (n)
		*n += 1;
}

static __always_inline int wanted(struct task_struct *p)
{
	unsigned int policy = p->policy;
	return all_tasks || policy == SCHED_FIFO || policy == SCHED_RR || policy == SCHED_DEADLINE;
}

SEC("tp_btf/sched_waking")
int on_waking(__u64 *ctx)
{
	struct task_struct *p = (void *)ctx[0];
	if (!wanted(p))
		return 0;
	__u32 pid = p->pid;
	__u64 now = bpf_ktime_get_ns();
	if (bpf_map_update_elem(&woken, &pid, &now, BPF_ANY))
		count(1);
	return 0;
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

static __always_inline void add(__u32 key, __u64 by)
{
	__u64 *n = bpf_map_lookup_elem(&histogram, &key);
	if (n) {
		*n += by;
	} else if (bpf_map_update_elem(&histogram, &key, &by, BPF_NOEXIST)) {
		// Another CPU made it meanwhile: its value is ours too now.
		n = bpf_map_lookup_elem(&histogram, &key);
		if (n)
			*n += by;
		else
			count(2);
	}
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

SEC("tp_btf/sched_switch")
int on_switch(__u64 *ctx)
{
	struct task_struct *next = (void *)ctx[2];
	__u32 pid = next->pid;
	if (pid == 0)
		return 0;
	__u64 *at = bpf_map_lookup_elem(&woken, &pid);
	if (!at)
		return 0;
	__u64 ns = bpf_ktime_get_ns() - *at;
	bpf_map_delete_elem(&woken, &pid);
	__u32 policy = next->policy & 0xff;
	__u32 prio = next->rt_priority & 0xff;
	__u32 series = policy << 24 | prio << 16;
	add(series | bucket_of(ns), 1);
	add(series | SUM_BUCKET, ns);
	keep_worst(pid, next, ns, policy, prio);
	count(0);
	return 0;
}
