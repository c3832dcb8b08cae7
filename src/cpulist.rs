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

/// Parses a cpulist into a sorted, de-duplicated list of CPU numbers.
pub fn parse(text: &str) -> Result<Vec<usize>, CpuListError> {
    let mut cpus = Vec::new();
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
                cpus.extend(lo_n..=hi_n);
            }
            None => cpus.push(number(item, at)?),
        }
        offset += part.len() + 1;
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn formats_compactly_and_roundtrips() {
        assert_eq!(format(&[0, 1, 2, 5, 7, 8]), "0-2,5,7-8");
        for text in ["0", "0-3", "1,3,5-9"] {
            assert_eq!(format(&parse(text).unwrap()), text);
        }
    }
}
