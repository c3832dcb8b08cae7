//! `rtlab hwlat`'s outputs: hwlatdetect's report (rt-tests 2.4), made from
//! rtlab's noise threads instead of the kernel's hwlat tracer.
//!
//! stdout is hwlatdetect's, line for line: the header of the parameters,
//! `Starting test`, `test finished`, `Max Latency`, `Samples recorded`,
//! `Samples exceeding threshold`, the SMIs when they can be counted, the
//! report file's line, and one `ts: S.NNNNNNNNN, inner:N, outer:N` line per
//! sample. rtlab's own findings go to stderr ([`Rendered::stderr`]): what
//! the trace told apart, the SMIs it could not count, the steal time of a
//! virtual machine beside the time no OS event explains.
//!
//! A sample is as the tracer makes one: a window of one CPU whose largest
//! gap, in whole µs, is over the threshold; `inner` is that gap, `outer`
//! is 0 (the noise threads read their counter in one loop: there is no
//! second, outer, reading), `ts` is CLOCK_REALTIME when the window's
//! polling ended (the tracer's stamp is taken then too). With a trace,
//! only gaps no OS event covered (IRQ, softirq, NMI, another thread) make
//! samples: hardware, firmware or a hypervisor. Without one, every gap
//! does, and the report says they are candidates, OS noise included.

/// The parameters as hwlatdetect prints them before the test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// Length of the test (s).
    pub duration_s: u64,
    /// `--cpu-list` as given (`None` printed when absent).
    pub cpu_list: Option<String>,
    /// Latency threshold (µs).
    pub threshold_us: u64,
    /// Sample window (µs).
    pub window_us: u64,
    /// Sample width (µs).
    pub width_us: u64,
    /// The report file (`None` printed when absent).
    pub report: Option<String>,
    /// `--debug`.
    pub debug: bool,
    /// `--quiet`.
    pub quiet: bool,
    /// hwlatdetect's debugging prints of its options (after `debugging
    /// prints turned on`, which the header prints itself).
    pub debug_lines: Vec<String>,
}

/// Whether the trace told OS noise from hardware.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Detection {
    /// Each gap was attributed from the trace: only gaps no OS event
    /// covered are samples.
    Traced,
    /// No trace (the reason): every gap is a candidate.
    Untraced(String),
}

/// One window of one CPU (a noise thread's period): its polled part.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Window {
    /// When its polling began (CLOCK_MONOTONIC, ns).
    pub start_ns: u64,
    /// How long it polled (ns).
    pub polled_ns: u64,
    /// The sum of its gaps at or over the noise threshold (ns).
    pub noise_ns: u64,
    /// Gaps at or over the noise threshold in it.
    pub gaps: u64,
    /// Its largest gap (ns, any size).
    pub max_gap_ns: u64,
}

impl From<&crate::stats::noise::NoisePeriod> for Window {
    fn from(p: &crate::stats::noise::NoisePeriod) -> Self {
        Window {
            start_ns: p.start_ns,
            polled_ns: p.runtime_ns,
            noise_ns: p.noise_ns,
            gaps: p.gaps,
            max_gap_ns: p.max_gap_ns,
        }
    }
}

/// What the trace found in a gap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// No OS event covered any of it (the attribution's class `hw`).
    Hardware,
    /// An IRQ, softirq, NMI or another thread covered some of it.
    Os,
}

/// A gap at or over the noise threshold, attributed from the trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeenGap {
    /// Its end (CLOCK_MONOTONIC, ns).
    pub end_ns: u64,
    /// Its length (ns).
    pub ns: u64,
    /// The part of it no event covered (ns).
    pub unseen_ns: u64,
    /// What covered it.
    pub origin: Origin,
}

/// One CPU's measurement (one noise thread).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CpuInput {
    /// The CPU.
    pub cpu: usize,
    /// Its windows, in time order.
    pub windows: Vec<Window>,
    /// Its gaps, attributed (empty without a trace).
    pub gaps: Vec<SeenGap>,
    /// Gaps over the threshold the attribution never saw (its ring full).
    pub dropped: u64,
}

/// The SMIs during the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Smis {
    /// Each CPU's SMIs during the run (`MSR_SMI_COUNT` after less before).
    Counted(Vec<(usize, u64)>),
    /// Why they could not be counted.
    Unavailable(String),
}

/// Everything the report is made of, filled from the run's result.
#[derive(Debug, Clone, PartialEq)]
pub struct HwlatInput {
    /// The parameters.
    pub header: Header,
    /// The hard limit (µs): a sample over it fails the test.
    pub hardlimit_us: u64,
    /// Whether the trace told OS noise from hardware.
    pub detection: Detection,
    /// Each CPU measured.
    pub cpus: Vec<CpuInput>,
    /// CLOCK_REALTIME less CLOCK_MONOTONIC during the run (ns): the
    /// samples' stamps are the tracer's, wall-clock time.
    pub realtime_offset_ns: i128,
    /// The SMIs.
    pub smis: Smis,
    /// Under a hypervisor (the `hypervisor` CPU flag): each CPU's steal
    /// time over the run (ms). None on bare metal.
    pub steal_ms: Option<Vec<(usize, f64)>>,
    /// The run did not complete (why): the figures are those measured.
    pub incomplete: Option<String>,
}

/// One sample, as the tracer reports one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// CLOCK_REALTIME when its window's polling ended (ns).
    pub realtime_ns: i128,
    /// The CPU.
    pub cpu: usize,
    /// The window's largest gap (whole µs).
    pub inner_us: u64,
    /// Always 0: no outer loop (see the module's note).
    pub outer_us: u64,
    /// Gaps over the threshold in the window.
    pub count: u64,
}

impl Sample {
    /// hwlatdetect's line: `ts: 1700000000.123456789, inner:12, outer:0`.
    pub fn line(&self) -> String {
        let secs = self.realtime_ns.div_euclid(1_000_000_000);
        let nanos = self.realtime_ns.rem_euclid(1_000_000_000);
        format!(
            "ts: {secs}.{nanos:09}, inner:{}, outer:{}",
            self.inner_us, self.outer_us
        )
    }
}

/// What `rtlab hwlat` prints and writes at the end, and its exit status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// hwlatdetect's lines after the test.
    pub stdout: String,
    /// rtlab's findings.
    pub stderr: String,
    /// The `--report` file's text (one sample line each), when asked.
    pub report_file: Option<String>,
    /// 1 when the largest sample is over the hard limit, else 0.
    pub status: i32,
    /// The largest sample (µs; 0 when none was over the threshold), as
    /// `Max Latency:` says.
    pub max_us: u64,
}

/// hwlatdetect's exit status: `sys.exit(max > hardlimit)`.
pub fn exit_status(max_us: u64, hardlimit_us: u64) -> i32 {
    i32::from(max_us > hardlimit_us)
}

/// The header hwlatdetect prints before the test (with `Starting test`),
/// its debugging prints first.
pub fn header(h: &Header, detection: &Detection) -> String {
    let mut out = String::new();
    if h.debug {
        // hwlatdetect prints this one before it reads --quiet.
        out.push_str("debugging prints turned on\n");
        if !h.quiet {
            for line in &h.debug_lines {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    if h.quiet {
        return out;
    }
    let or_none = |v: &Option<String>| v.clone().unwrap_or_else(|| "None".into());
    let detector = match detection {
        Detection::Traced => "rtlab noise threads, traced (samples: gaps no OS event covered)",
        Detection::Untraced(_) => {
            "rtlab noise threads, untraced (samples: candidates, OS noise included)"
        }
    };
    out.push_str(&format!(
        "hwlatdetect:  test duration {} seconds\n   detector: {detector}\n   parameters:\n",
        h.duration_s
    ));
    out.push_str(&format!(
        "        CPU list:          {}\n        Latency threshold: {}us\n",
        or_none(&h.cpu_list),
        h.threshold_us
    ));
    out.push_str(&format!(
        "        Sample window:     {}us\n        Sample width:      {}us\n",
        h.window_us, h.width_us
    ));
    out.push_str(&format!(
        "     Non-sampling period:  {}us\n        Output File:       {}\n\nStarting test\n",
        h.window_us.saturating_sub(h.width_us),
        or_none(&h.report)
    ));
    out
}

/// The samples, in time order: each window of each CPU whose largest gap
/// that counts (hardware with a trace, any without) is over the
/// threshold in whole µs.
pub fn samples(input: &HwlatInput) -> Vec<Sample> {
    let threshold = input.header.threshold_us;
    let mut out = Vec::new();
    for cpu in &input.cpus {
        let worst = match input.detection {
            Detection::Traced => hardware_by_window(cpu),
            Detection::Untraced(_) => cpu
                .windows
                .iter()
                .filter(|w| w.gaps > 0)
                .map(|w| (w.start_ns.saturating_add(w.polled_ns), w.max_gap_ns, w.gaps))
                .collect(),
        };
        out.extend(
            worst
                .into_iter()
                .filter(|&(_, ns, _)| ns / 1000 > threshold)
                .map(|(at, ns, count)| Sample {
                    realtime_ns: i128::from(at) + input.realtime_offset_ns,
                    cpu: cpu.cpu,
                    inner_us: ns / 1000,
                    outer_us: 0,
                    count,
                }),
        );
    }
    out.sort_by_key(|s| (s.realtime_ns, s.cpu));
    out
}

/// Each window's hardware gaps: (when its polling ended, the largest, how
/// many), in window order. A gap outside every window stands alone,
/// stamped with its end.
fn hardware_by_window(cpu: &CpuInput) -> Vec<(u64, u64, u64)> {
    let mut by: std::collections::BTreeMap<(u64, u64), (u64, u64)> = Default::default();
    for g in cpu.gaps.iter().filter(|g| g.origin == Origin::Hardware) {
        let start = g.end_ns.saturating_sub(g.ns);
        let at = cpu.windows.partition_point(|w| w.start_ns <= start);
        let key = match at.checked_sub(1).and_then(|i| cpu.windows.get(i)) {
            Some(w) => (w.start_ns, w.start_ns.saturating_add(w.polled_ns)),
            None => (g.end_ns, g.end_ns),
        };
        let e = by.entry(key).or_default();
        *e = (e.0.max(g.ns), e.1 + 1);
    }
    by.into_iter()
        .map(|((_, stamp), (max, n))| (stamp, max, n))
        .collect()
}

/// hwlatdetect's lines after the test, rtlab's findings, the report
/// file and the exit status. The caller writes the report file before it
/// prints `stdout` (which says it was saved).
pub fn finish(input: &HwlatInput) -> Rendered {
    let samples = samples(input);
    let h = &input.header;
    let max = samples.iter().map(|s| s.inner_us).max().unwrap_or(0);
    let mut out = String::new();
    let mut info = |line: String| {
        if !h.quiet {
            out.push_str(&line);
            out.push('\n');
        }
    };
    info("test finished".into());
    info(match max {
        0 => "Max Latency: Below threshold".into(),
        m => format!("Max Latency: {m}us"),
    });
    info(format!("Samples recorded: {}", samples.len()));
    info(format!("Samples exceeding threshold: {}", samples.len()));
    if let Smis::Counted(per_cpu) = &input.smis {
        for (cpu, n) in per_cpu.iter().filter(|(_, n)| *n > 0) {
            // print(), not info(): shown with --quiet too.
            out.push_str(&format!("{n} SMIs occured on cpu {cpu}\n"));
        }
        let total: u64 = per_cpu.iter().map(|(_, n)| n).sum();
        if !h.quiet {
            out.push_str(&format!("SMIs during run: {total}\n"));
        }
    }
    let lines: String = samples.iter().map(|s| s.line() + "\n").collect();
    if let Some(path) = &h.report {
        out.push_str(&format!(
            "report saved to {path} ({} samples)\n",
            samples.len()
        ));
    }
    out.push_str(&lines);
    Rendered {
        stdout: out,
        stderr: findings(input, &samples),
        report_file: h.report.as_ref().map(|_| lines),
        status: exit_status(max, input.hardlimit_us),
        max_us: max,
    }
}

/// rtlab's findings for stderr: what the samples are, the OS noise set
/// aside, the gaps not attributed, the SMIs not counted, the steal time.
pub fn findings(input: &HwlatInput, samples: &[Sample]) -> String {
    let mut out = String::new();
    let mut say = |line: String| {
        out.push_str("rtlab hwlat: ");
        out.push_str(&line);
        out.push('\n');
    };
    if let Some(why) = &input.incomplete {
        say(format!(
            "the run did not complete ({why}): these are the windows measured"
        ));
    }
    match &input.detection {
        Detection::Traced => say(traced_summary(input, samples.len())),
        Detection::Untraced(why) => say(format!(
            "no trace ({why}): OS noise and hardware latency cannot be told apart; \
             the {} above are candidates, OS noise (IRQs, softirqs, NMIs, threads) included",
            crate::text::counted(samples.len() as u64, "sample", "samples")
        )),
    }
    let dropped: u64 = input.cpus.iter().map(|c| c.dropped).sum();
    if dropped > 0 && input.detection == Detection::Traced {
        say(format!(
            "{} over the threshold not attributed (the gap ring was full between two \
             reads of the trace): not in the samples",
            crate::text::counted(dropped, "gap", "gaps")
        ));
    }
    if let Smis::Unavailable(why) = &input.smis {
        say(format!("SMIs not counted: {why}"));
    }
    if let Some(steal) = &input.steal_ms {
        out.push_str(&host_table(input, steal));
    }
    out
}

/// The trace's verdict on the gaps over the threshold.
fn traced_summary(input: &HwlatInput, samples: usize) -> String {
    let gaps = input.cpus.iter().flat_map(|c| &c.gaps);
    let (mut os, mut os_max, mut os_unseen, mut hw) = (0u64, 0u64, 0u64, 0u64);
    for g in gaps {
        match g.origin {
            Origin::Os => {
                os += 1;
                os_max = os_max.max(g.ns);
                os_unseen = os_unseen.max(g.unseen_ns);
            }
            Origin::Hardware => hw += 1,
        }
    }
    let mut text = format!(
        "the trace told the gaps apart: {} no OS event covered (hardware, firmware, a \
         hypervisor) in {}; {} OS noise (IRQ, softirq, NMI, thread), largest {} us, \
         not counted",
        crate::text::counted(hw, "gap", "gaps"),
        crate::text::counted(samples as u64, "sample", "samples"),
        crate::text::counted(os, "gap was", "gaps were"),
        os_max / 1000
    );
    if os_unseen / 1000 > input.header.threshold_us {
        text.push_str(&format!(
            " (up to {} us of one of them no event covered: hardware may hide behind an \
             interrupt there)",
            os_unseen / 1000
        ));
    }
    text
}

/// Under a hypervisor: each CPU's time no OS event explained beside its
/// steal time (over the run, and its share of the polled time).
fn host_table(input: &HwlatInput, steal: &[(usize, f64)]) -> String {
    let run_ns = input.header.duration_s.saturating_mul(1_000_000_000).max(1) as f64;
    let traced = input.detection == Detection::Traced;
    let mut out = format!(
        "rtlab hwlat: a hypervisor runs this machine: {} beside the time the host took \
         (steal)\n",
        if traced {
            "the time no OS event explained"
        } else {
            "the noise (unattributed, OS included)"
        }
    );
    out.push_str(&format!(
        "  {:>4} {:>12} {:>12} {:>14} {:>16}\n",
        "CPU",
        "polled ms",
        if traced { "unseen ms" } else { "noise ms" },
        "steal ms (run)",
        "steal ms (polled)"
    ));
    for cpu in &input.cpus {
        let polled: u64 = cpu.windows.iter().map(|w| w.polled_ns).sum();
        let noise: u64 = if traced {
            cpu.gaps.iter().map(|g| g.unseen_ns).sum()
        } else {
            cpu.windows.iter().map(|w| w.noise_ns).sum()
        };
        let stolen = steal
            .iter()
            .find(|(c, _)| *c == cpu.cpu)
            .map_or(0.0, |s| s.1);
        out.push_str(&format!(
            "  {:>4} {:>12.3} {:>12.3} {:>14.3} {:>16.3}\n",
            cpu.cpu,
            polled as f64 / 1e6,
            noise as f64 / 1e6,
            stolen,
            stolen * polled as f64 / run_ns
        ));
    }
    out
}

#[cfg(test)]
mod tests;
