//! `/proc/stat` CPU time counters: parsed from text, read through [`SysRoot`].

use super::{SysError, SysRoot};

/// Cumulative time counters (in USER_HZ ticks) of one CPU or of all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuTimes {
    /// Ticks spent idle or waiting for I/O.
    pub idle: u64,
    /// All ticks (busy + idle), guest time excluded (already in user).
    pub total: u64,
    /// Steal: ticks the hypervisor ran something else while this vCPU
    /// wanted to run (0 on bare metal and where the kernel has no count).
    pub steal: u64,
}

/// The counters of `/proc/stat`: the global `cpu` line and one per CPU.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProcStat {
    /// The `cpu` line.
    pub all: CpuTimes,
    /// `cpuN` lines as (N, counters), in file order.
    pub per_cpu: Vec<(usize, CpuTimes)>,
}

fn parse_times(fields: &[&str]) -> Option<CpuTimes> {
    // user nice system idle iowait irq softirq steal [guest guest_nice]
    let v: Vec<u64> = fields
        .iter()
        .take(8)
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    if v.len() < 4 {
        return None;
    }
    let idle = v[3] + v.get(4).copied().unwrap_or(0);
    Some(CpuTimes {
        idle,
        total: v.iter().sum(),
        steal: v.get(7).copied().unwrap_or(0),
    })
}

/// Parses the text of `/proc/stat`.
pub fn parse(text: &str) -> Option<ProcStat> {
    let mut stat = ProcStat::default();
    let mut seen_all = false;
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let Some((name, rest)) = fields.split_first() else {
            continue;
        };
        if *name == "cpu" {
            stat.all = parse_times(rest)?;
            seen_all = true;
        } else if let Some(n) = name.strip_prefix("cpu") {
            let cpu = n.parse().ok()?;
            stat.per_cpu.push((cpu, parse_times(rest)?));
        }
    }
    seen_all.then_some(stat)
}

/// Reads `/proc/stat`.
pub fn read(root: &SysRoot) -> Result<ProcStat, SysError> {
    let rel = "proc/stat";
    parse(&root.read(rel)?).ok_or_else(|| SysError::Parse {
        path: root.path(rel),
        what: "no `cpu` line".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cpu_lines() {
        let text = "cpu  10 0 10 70 10 0 0 0 0 0\ncpu0 5 0 5 35 5 0 0 0 0 0\ncpu1 5 0 5 35 5 0 0 0 0 0\nintr 1 2\n";
        let s = parse(text).unwrap();
        assert_eq!(
            s.all,
            CpuTimes {
                idle: 80,
                total: 100,
                steal: 0
            }
        );
        assert_eq!(s.per_cpu.len(), 2);
        assert_eq!(s.per_cpu[1].0, 1);
        assert!(parse("intr 1\n").is_none());
    }

    #[test]
    fn steal_is_the_eighth_counter_and_zero_where_absent() {
        let s = parse("cpu  1 2 3 4 5 6 7 8 9 10\ncpu0 1 2 3 4 5 6 7 8\ncpu1 1 2 3 4\n").unwrap();
        assert_eq!(s.all.steal, 8);
        assert_eq!(s.per_cpu[0].1.steal, 8);
        assert_eq!(s.per_cpu[1].1.steal, 0);
    }
}
