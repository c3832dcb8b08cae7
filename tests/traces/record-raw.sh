#!/bin/sh
# Records one tracefs buffer twice, as the kernel's text (per_cpu/cpuN/trace,
# not consumed) and as its binary pages (per_cpu/cpuN/trace_pipe_raw, read
# after), with the format files that decode it: the fixture the binary trace
# engine is checked against (tests in src/trace/rawtrace). Run as root:
#   tests/traces/record-raw.sh tests/traces/raw-$(uname -r | cut -d. -f1,2)
set -eu
out=${1:?output directory}
T=/sys/kernel/tracing
[ -d $T/instances ] || mount -t tracefs nodev $T
I=$T/instances/rtlab-fixture-$$
mkdir $I
trap 'echo 0 > $I/tracing_on; rmdir $I' EXIT
echo mono > $I/trace_clock
echo 0 > $I/options/overwrite
echo 32 > $I/buffer_size_kb
EVENTS="sched/sched_switch sched/sched_waking sched/sched_wakeup irq/irq_handler_entry \
         irq/irq_handler_exit irq/softirq_entry irq/softirq_exit timer/hrtimer_start \
         timer/hrtimer_expire_entry timer/hrtimer_expire_exit ipi/ipi_send_cpu \
         ipi/ipi_send_cpumask ipi/ipi_entry ipi/ipi_exit workqueue/workqueue_execute_start \
         workqueue/workqueue_execute_end irq_vectors/local_timer_entry irq_vectors/local_timer_exit \
         irq_vectors/reschedule_entry irq_vectors/reschedule_exit power/cpu_idle"
for e in $EVENTS; do
    [ -e $I/events/$e/enable ] && echo 1 > $I/events/$e/enable
done
echo 1 > $I/tracing_on
echo "rtlab T0 sample 1 deadline 2 latency 3" > $I/trace_marker
(ping -c 3 -i 0.01 127.0.0.1 >/dev/null 2>&1 || true; sleep 0.05; ls -R /proc/self > /dev/null) &
sleep 0.2
wait
echo 0 > $I/tracing_on
mkdir -p "$out/formats"
cp $T/events/header_page "$out/formats/header_page"
for e in $EVENTS ftrace/print; do
    [ -e $I/events/$e/format ] || continue
    mkdir -p "$out/formats/${e%/*}"
    cp $I/events/$e/format "$out/formats/$e.format"
done
for c in $I/per_cpu/cpu*; do
    n=${c##*/}
    cat $c/trace > "$out/$n.txt"
    dd if=$c/trace_pipe_raw of="$out/$n.raw" bs=4096 iflag=nonblock 2>/dev/null || true
done
# The kernel symbols the text names (and each one's successor, for its
# size): enough to show the fixture's addresses as the text does.
grep -oh 'function=[A-Za-z0-9_.]*\|callsite=[A-Za-z0-9_.]*\|callback=[A-Za-z0-9_.]*\|function [A-Za-z0-9_.]*\|tracing_mark_write' "$out"/cpu*.txt \
    | sed 's/.*[= ]//' | sort -u > "$out/names"
grep ' [tTwW] ' /proc/kallsyms | sort | awk 'NR==FNR { want[$1]; next } keep { print; keep=0 } ($3 in want) { print; keep=1 }' "$out/names" - > "$out/kallsyms"
rm "$out/names"
