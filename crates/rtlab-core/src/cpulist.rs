//! The kernel's cpulist syntax (`3`, `0-2`, `0,2-3,7`), parsed and printed.
//! Pure: used by the experiment-file parser and by the readers of
//! `/sys/devices/system/cpu/online` alike.

/// Why a cpulist could not be parsed: the message and the byte offset of the
/// offending part inside the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuListError {
    /// Byte offset in the parsed text.
    pub offset: usize,
    /// What is wrong.
    pub message: String,
}

/// Largest CPU number accepted (the kernel's cpu_set_t holds 1024).
pub const MAX_CPU: usize = 1023;

/// A set of CPUs 0..=[`MAX_CPU`] as a bit set: a list that names the same
/// range a million times costs a million bit operations, never a million
/// ranges expanded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CpuSet([u64; (MAX_CPU + 1) / 64]);

impl CpuSet {
    /// Adds CPUs `lo..=hi` (both at most [`MAX_CPU`]).
    pub fn insert_range(&mut self, lo: usize, hi: usize) {
        let mut cpu = lo;
        while cpu <= hi.min(MAX_CPU) {
            let (word, bit) = (cpu / 64, cpu % 64);
            // Whole words at once where the range covers them.
            if bit == 0 && hi - cpu >= 63 {
                self.0[word] = u64::MAX;
                cpu += 64;
            } else {
                self.0[word] |= 1 << bit;
                cpu += 1;
            }
        }
    }

    /// The CPUs, in increasing order.
    pub fn to_vec(&self) -> Vec<usize> {
        (0..=MAX_CPU)
            .filter(|&c| self.0[c / 64] & (1 << (c % 64)) != 0)
            .collect()
    }
}

/// Parses a cpulist into a sorted, de-duplicated list of CPU numbers.
pub fn parse(text: &str) -> Result<Vec<usize>, CpuListError> {
    let mut cpus = CpuSet::default();
    let mut offset = 0;
    if text.trim().is_empty() {
        return Err(CpuListError {
            offset: 0,
            message: "empty CPU list".into(),
        });
    }
    for part in text.split(',') {
        let lead = part.len() - part.trim_start().len();
        let item = part.trim();
        let at = offset + lead;
        let number = |s: &str, at: usize| -> Result<usize, CpuListError> {
            let n: usize = s.trim().parse().map_err(|_| CpuListError {
                offset: at,
                message: format!("`{}` is not a CPU number", s.trim()),
            })?;
            if n > MAX_CPU {
                return Err(CpuListError {
                    offset: at,
                    message: format!("CPU {n} is beyond the largest CPU number ({MAX_CPU})"),
                });
            }
            Ok(n)
        };
        match item.split_once('-') {
            Some((lo, hi)) => {
                let lo_n = number(lo, at)?;
                let hi_n = number(hi, at + lo.len() + 1)?;
                if hi_n < lo_n {
                    return Err(CpuListError {
                        offset: at,
                        message: format!("range `{item}` runs backwards"),
                    });
                }
                cpus.insert_range(lo_n, hi_n);
            }
            None => {
                let n = number(item, at)?;
                cpus.insert_range(n, n);
            }
        }
        offset += part.len() + 1;
    }
    Ok(cpus.to_vec())
}

/// Formats CPUs as a compact cpulist (`0-2,5`).
pub fn format(cpus: &[usize]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut out = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        out.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    out.join(",")
}

/// Parses a hexadecimal CPU mask as the kernel prints it in `smp_affinity`
/// and as partrt takes it: `8`, `0x8`, `ff,ffffffff` (commas separate 32-bit
/// words, most significant first).
pub fn parse_mask(text: &str) -> Result<Vec<usize>, CpuListError> {
    let trimmed = text.trim();
    let digits = trimmed
        .strip_prefix("0x")
        .or_else(|| trimmed.strip_prefix("0X"))
        .unwrap_or(trimmed);
    if digits.is_empty() {
        return Err(CpuListError {
            offset: 0,
            message: "empty CPU mask".into(),
        });
    }
    let mut cpus = Vec::new();
    let mut bit = 0usize;
    for (i, c) in digits.chars().rev().enumerate() {
        if c == ',' {
            // Each comma-separated word is 32 bits wide.
            bit = bit.div_ceil(32) * 32;
            continue;
        }
        let value = c.to_digit(16).ok_or_else(|| CpuListError {
            offset: trimmed.len() - i - 1,
            message: format!("`{c}` is not a hexadecimal digit"),
        })?;
        for b in 0..4 {
            if value & (1 << b) != 0 {
                let cpu = bit + b;
                if cpu > MAX_CPU {
                    return Err(CpuListError {
                        offset: trimmed.len() - i - 1,
                        message: format!("CPU {cpu} is beyond the largest CPU number ({MAX_CPU})"),
                    });
                }
                cpus.push(cpu);
            }
        }
        bit += 4;
    }
    cpus.sort_unstable();
    Ok(cpus)
}

/// Parses either form a user may type for a set of CPUs: a hex mask when it
/// starts with `0x` (`0x8`), else a cpulist (`3`, `2-3`).
pub fn parse_list_or_mask(text: &str) -> Result<Vec<usize>, CpuListError> {
    let t = text.trim();
    if t.starts_with("0x") || t.starts_with("0X") {
        parse_mask(t)
    } else {
        parse(t)
    }
}

/// Formats CPUs as the kernel's hex mask (`3`, `ff,ffffffff`): 32-bit words,
/// most significant first, separated by commas, the first without padding.
pub fn format_mask(cpus: &[usize]) -> String {
    let words = cpus.iter().max().map_or(1, |m| m / 32 + 1);
    let mut w = vec![0u32; words];
    for &c in cpus {
        w[c / 32] |= 1 << (c % 32);
    }
    let mut out: Vec<String> = Vec::new();
    for (i, word) in w.iter().rev().enumerate() {
        out.push(if i == 0 {
            format!("{word:x}")
        } else {
            format!("{word:08x}")
        });
    }
    out.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_parse_and_print_as_the_kernel_does() {
        assert_eq!(parse_mask("0x8").unwrap(), vec![3]);
        assert_eq!(parse_mask("3").unwrap(), vec![0, 1]);
        assert_eq!(parse_mask("1,00000001").unwrap(), vec![0, 32]);
        assert_eq!(parse_mask("00000000,00000002").unwrap(), vec![1]);
        assert!(
            parse_mask("0xg")
                .unwrap_err()
                .message
                .contains("hexadecimal")
        );
        assert!(parse_mask("0x").is_err());
        assert_eq!(format_mask(&[0, 1]), "3");
        assert_eq!(format_mask(&[3]), "8");
        assert_eq!(format_mask(&[0, 32]), "1,00000001");
        assert_eq!(format_mask(&[]), "0");
        assert_eq!(parse_list_or_mask("0x8").unwrap(), vec![3]);
        assert_eq!(parse_list_or_mask("2-3").unwrap(), vec![2, 3]);
        for cpus in [vec![0], vec![5, 40, 70], (0..64).collect()] {
            assert_eq!(parse_mask(&format_mask(&cpus)).unwrap(), cpus);
        }
    }

    #[test]
    fn parses_the_kernel_forms() {
        assert_eq!(parse("3").unwrap(), vec![3]);
        assert_eq!(parse("0-2").unwrap(), vec![0, 1, 2]);
        assert_eq!(parse("0,2-3,7").unwrap(), vec![0, 2, 3, 7]);
        assert_eq!(parse(" 1 , 0 ").unwrap(), vec![0, 1]);
        assert_eq!(parse("0-6\n").unwrap(), (0..=6).collect::<Vec<_>>());
    }

    #[test]
    fn rejects_with_offsets() {
        assert_eq!(parse("").unwrap_err().message, "empty CPU list");
        let e = parse("0,x").unwrap_err();
        assert_eq!(e.offset, 2);
        assert!(parse("3-1").unwrap_err().message.contains("backwards"));
        assert!(parse("5000").unwrap_err().message.contains("beyond"));
        assert_eq!(parse("0-z").unwrap_err().offset, 2);
    }

    #[test]
    fn a_list_repeating_the_whole_range_costs_no_more_than_the_range() {
        let text = vec!["0-1023"; 200_000].join(",");
        assert_eq!(parse(&text).unwrap(), (0..=MAX_CPU).collect::<Vec<_>>());
        let mut set = CpuSet::default();
        set.insert_range(3, 130);
        set.insert_range(1023, 1023);
        let v = set.to_vec();
        assert_eq!((v.len(), v[0], v[127], v[128]), (129, 3, 130, 1023));
    }

    #[test]
    fn formats_compactly_and_roundtrips() {
        assert_eq!(format(&[0, 1, 2, 5, 7, 8]), "0-2,5,7-8");
        for text in ["0", "0-3", "1,3,5-9"] {
            assert_eq!(format(&parse(text).unwrap()), text);
        }
    }
}
