//! An rt-tests `--json` file's figures as the file writes them (cyclictest,
//! and the other rt-tests programs that write the same document): what
//! Linaro's rt-tests parser prints, each value as Python prints what
//! `json.load` made of it. Only those keys are read: a histogram is
//! skipped as it is parsed, never held.

use super::LoadError;
use super::reading::{ParseError, read_bounded};
use serde_json::Value;
use std::path::Path;

/// The figures of one thread (or one IRQ of rtla's): min, avg, max, each
/// as the file wrote it.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
pub struct Figures {
    /// `min`.
    pub min: Option<Value>,
    /// `avg`.
    pub avg: Option<Value>,
    /// `max`.
    pub max: Option<Value>,
    /// pmqtest's and ptsematest's receiving side, which the parser reads
    /// in the thread's place when there is one.
    pub receiver: Option<Box<Figures>>,
}

/// What Linaro's parser reads of an rt-tests JSON document.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
pub struct RtTestsJson {
    /// `num_threads`: threads `0` to `num_threads - 1` are read.
    pub num_threads: Option<Value>,
    /// `thread`: each thread's figures by its number.
    #[serde(default)]
    pub thread: std::collections::BTreeMap<String, Figures>,
    /// `num_irqs` (rtla timerlat's).
    pub num_irqs: Option<Value>,
    /// `irq`: each IRQ's figures by its number.
    #[serde(default)]
    pub irq: std::collections::BTreeMap<String, Figures>,
    /// `inversion` (pi_stress's).
    pub inversion: Option<Value>,
    /// `return_code`: 0 for a pass.
    pub return_code: Option<Value>,
    /// `cmdline:`: the program, first.
    #[serde(rename = "cmdline:")]
    pub cmdline: Option<String>,
}

impl RtTestsJson {
    /// Whether it holds what Linaro's parser reads (a return code, or the
    /// threads, IRQs or inversions it prints): an rt-tests document, not
    /// another JSON file that happens to parse.
    pub fn is_document(&self) -> bool {
        self.return_code.is_some()
            && (self.num_threads.is_some() || self.num_irqs.is_some() || self.inversion.is_some())
    }

    /// The program that wrote it (`cyclictest`), from its command line.
    pub fn program(&self) -> Option<&str> {
        let first = self.cmdline.as_deref()?.split_whitespace().next()?;
        first.rsplit('/').next().filter(|p| !p.is_empty())
    }
}

/// Reads the figures of the rt-tests JSON file at `path`.
pub fn load(path: &Path) -> Result<RtTestsJson, LoadError> {
    let bytes = read_bounded(path).map_err(|e| e.located(path))?;
    serde_json::from_slice(&bytes).map_err(|e| {
        ParseError::new(
            e.line(),
            e.column(),
            format!("not an rt-tests JSON document: {e}"),
            "give the file rt-tests' --json wrote",
        )
        .located(path)
    })
}

/// A JSON value as Python's `"{}".format()` prints what `json.load` made
/// of it: an integer as it is written, a number with a fraction or an
/// exponent as Python's shortest `repr` of the float (`17.98`, `18.0`,
/// `1e-05`), a string as it is, `True`/`False`/`None`; None for an array
/// or an object (no figure).
pub fn python_text(v: &Value) -> Option<String> {
    Some(match v {
        Value::Number(n) if n.is_i64() || n.is_u64() => n.to_string(),
        Value::Number(n) => python_float(n.as_f64()?),
        Value::String(s) => s.clone(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Null => "None".into(),
        Value::Array(_) | Value::Object(_) => return None,
    })
}

/// Python's `repr` of a float: the shortest digits that read back as it,
/// in fixed notation when the decimal point falls within 16 digits of
/// them (`0.0001`, `1234567890123456.0`, always a `.0` at least), else
/// with an exponent of at least two digits (`1e-05`, `1.5e+16`).
pub fn python_float(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if x == 0.0 {
        return if x.is_sign_negative() {
            "-0.0".into()
        } else {
            "0.0".into()
        };
    }
    // Rust's shortest round-trip digits, in exponent form: `1.798e1`.
    let sci = format!("{:e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if x < 0.0 { "-" } else { "" };
    // Where the point falls after the first digit's place (Python's decpt).
    let decpt = exp + 1;
    let n = digits.len() as i32;
    let body = if -4 < decpt && decpt <= 16 {
        if decpt <= 0 {
            format!("0.{}{digits}", "0".repeat((-decpt) as usize))
        } else if decpt >= n {
            format!("{digits}{}.0", "0".repeat((decpt - n) as usize))
        } else {
            format!(
                "{}.{}",
                &digits[..decpt as usize],
                &digits[decpt as usize..]
            )
        }
    } else {
        let rest = if n > 1 {
            format!(".{}", &digits[1..])
        } else {
            String::new()
        };
        let e = decpt - 1;
        format!(
            "{}{rest}e{}{:02}",
            &digits[..1],
            if e < 0 { '-' } else { '+' },
            e.abs()
        )
    };
    format!("{sign}{body}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_are_written_as_python_writes_them() {
        // Each checked with python3 -c 'print(repr(float("...")))'.
        for (x, python) in [
            (17.98, "17.98"),
            (18.0, "18.0"),
            (129.34, "129.34"),
            (0.1, "0.1"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (0.000123, "0.000123"),
            (0.0000123, "1.23e-05"),
            (1234567890123456.0, "1234567890123456.0"),
            (12345678901234567.0, "1.2345678901234568e+16"),
            (1e16, "1e+16"),
            (1e22, "1e+22"),
            (123.456e20, "1.23456e+22"),
            (-2.5, "-2.5"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.0 / 3.0, "0.3333333333333333"),
            (2.0 / 3.0 * 1000.0, "666.6666666666666"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
        ] {
            assert_eq!(python_float(x), python, "{x:e}");
        }
        let v: Value =
            serde_json::from_str(r#"[25, 17.980000, 4e1, "x", true, null, [1]]"#).unwrap();
        let texts: Vec<Option<String>> = v.as_array().unwrap().iter().map(python_text).collect();
        let want = ["25", "17.98", "40.0", "x", "True", "None"];
        for (t, w) in texts.iter().zip(want) {
            assert_eq!(t.as_deref(), Some(w));
        }
        assert_eq!(texts[6], None);
        // Read to the f64 Python reads (serde_json's float_roundtrip).
        let v: Value = serde_json::from_str("[0.9999999999999999, 43.449999999999996]").unwrap();
        let texts: Vec<String> = v
            .as_array()
            .unwrap()
            .iter()
            .filter_map(python_text)
            .collect();
        assert_eq!(texts, ["0.9999999999999999", "43.449999999999996"]);
    }
}
