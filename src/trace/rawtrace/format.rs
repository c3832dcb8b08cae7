//! An event's `format` file (`events/SYSTEM/NAME/format`): its ID, the
//! layout of its fields in a record, and its `print fmt`, read into the
//! plan of how the kernel's text would show each field, so that decoded
//! events carry the same `key=value` pairs as the text reader's.

/// How a field is stored in the record.
#[allow(missing_docs)] // Each variant's fields are named in its doc.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Storage {
    /// A little-endian integer of `size` bytes.
    Int { signed: bool },
    /// A NUL-padded `char[N]`.
    Chars,
    /// A `char x[]` running to the record's end.
    Tail,
    /// A `__data_loc` (offset from the record's start) or `__rel_loc`
    /// (offset from the field's end) array: u16 offset, u16 length.
    Dynamic { relative: bool },
}

/// One field of the record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// Its name (`prev_pid`).
    pub name: String,
    /// Where it starts in the record.
    pub offset: usize,
    /// Its size in bytes (0 for a tail array).
    pub size: usize,
    /// How to read it.
    pub storage: Storage,
}

/// How one `key=` of the text is rendered from the record (`field`: the
/// index of the field it reads).
#[allow(missing_docs)] // Each variant's fields are named in its doc.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Render {
    /// The field as a number (decimal; `hex` for `%x`), zero-padded to
    /// `pad` digits (`%03d`).
    Number { field: usize, hex: bool, pad: usize },
    /// The field as text (a `char` array, `__get_str`).
    Text { field: usize },
    /// The field's symbolic name from a `__print_symbolic` table.
    Symbolic {
        field: usize,
        table: Vec<(u64, String)>,
    },
    /// A task state: the `__print_flags` letters, `R` when none is set, and
    /// `+` for a preempted task.
    TaskState {
        field: usize,
        flags: Vec<(u64, String)>,
    },
    /// One of two words, as the field is set or not (`ret ? "handled" :
    /// "unhandled"`).
    Choice {
        field: usize,
        set: String,
        unset: String,
    },
    /// A kernel address as its symbol (`%ps`), with offset and size when
    /// `offset` (`%pS`).
    Symbol { field: usize, offset: bool },
    /// A pointer the text hashes (`%p`): shown raw, in hex.
    Pointer { field: usize },
    /// A `__get_cpumask`/`__get_bitmask` array, as the kernel's `%*pb`.
    Bitmask { field: usize },
}

impl Render {
    /// The field it reads.
    pub fn field(&self) -> usize {
        match self {
            Render::Number { field, .. }
            | Render::Text { field }
            | Render::Symbolic { field, .. }
            | Render::TaskState { field, .. }
            | Render::Choice { field, .. }
            | Render::Symbol { field, .. }
            | Render::Pointer { field }
            | Render::Bitmask { field } => *field,
        }
    }
}

/// An event type as its `format` file describes it.
#[derive(Debug, Clone)]
pub struct EventFormat {
    /// Its name (`sched_switch`).
    pub name: String,
    /// Its type ID (the record's `common_type`).
    pub id: u16,
    /// Its fields, the `common_*` ones first.
    pub fields: Vec<Field>,
    /// The text's `key=` pairs, in the text's order (a conversion without
    /// `key=` is keyed by its field's name).
    pub keys: Vec<(String, Render)>,
    /// The fields that name a task: (PID field, name field), found once.
    pub comm_pairs: Vec<(usize, usize)>,
}

impl EventFormat {
    /// Reads a `format` file. None when it is not one.
    pub fn parse(text: &str) -> Option<EventFormat> {
        let mut name = None;
        let mut id = None;
        let mut fields = Vec::new();
        let mut print = None;
        for line in text.lines() {
            let line = line.trim();
            if let Some(n) = line.strip_prefix("name:") {
                name = Some(n.trim().to_string());
            } else if let Some(n) = line.strip_prefix("ID:") {
                id = n.trim().parse().ok();
            } else if line.starts_with("field:") {
                fields.push(parse_field(line)?);
            } else if let Some(p) = line.strip_prefix("print fmt:") {
                print = Some(p.trim().to_string());
            }
        }
        let mut format = EventFormat {
            name: name?,
            id: id?,
            fields,
            keys: Vec::new(),
            comm_pairs: Vec::new(),
        };
        for (pid, comm) in [
            ("prev_pid", "prev_comm"),
            ("next_pid", "next_comm"),
            ("pid", "comm"),
        ] {
            if let (Some(p), Some(c)) = (format.field(pid), format.field(comm)) {
                format.comm_pairs.push((p, c));
            }
        }
        if let Some(p) = print {
            format.keys = plan_keys(&p, &format.fields).unwrap_or_default();
        }
        Some(format)
    }

    /// The index of field `name`.
    pub fn field(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.name == name)
    }
}

/// `field:char prev_comm[16]; offset:8; size:16; signed:0;`
fn parse_field(line: &str) -> Option<Field> {
    let mut decl = None;
    let (mut offset, mut size, mut signed) = (None, None, false);
    for part in line.split(';') {
        let part = part.trim();
        if let Some(d) = part.strip_prefix("field:") {
            decl = Some(d.trim());
        } else if let Some(v) = part.strip_prefix("offset:") {
            offset = v.parse().ok();
        } else if let Some(v) = part.strip_prefix("size:") {
            size = v.parse().ok();
        } else if let Some(v) = part.strip_prefix("signed:") {
            signed = v == "1";
        }
    }
    let decl = decl?;
    let (ty, var) = decl.rsplit_once(' ')?;
    let (name, array) = match var.split_once('[') {
        Some((n, rest)) => (n, Some(rest.trim_end_matches(']'))),
        None => (var, None),
    };
    let size: usize = size?;
    let storage = if ty.contains("__data_loc") {
        Storage::Dynamic { relative: false }
    } else if ty.contains("__rel_loc") {
        Storage::Dynamic { relative: true }
    } else if array.is_some() && ty.contains("char") {
        if size == 0 {
            Storage::Tail
        } else {
            Storage::Chars
        }
    } else if matches!(size, 1 | 2 | 4 | 8) {
        Storage::Int { signed }
    } else {
        Storage::Chars
    };
    Some(Field {
        name: name.trim_start_matches('*').to_string(),
        offset: offset?,
        size,
        storage,
    })
}

/// The `key=` pairs of a print format: its format string's conversions
/// matched to its arguments. None when it cannot be read so.
fn plan_keys(print: &str, fields: &[Field]) -> Option<Vec<(String, Render)>> {
    let rest = print.strip_prefix('"')?;
    let close = rest.find('"')?;
    let (fmt, args) = (&rest[..close], &rest[close + 1..]);
    let args = split_args(args.trim_start().strip_prefix(',').unwrap_or(args));
    let mut keys: Vec<(String, Render)> = Vec::new();
    for (i, c) in conversions(fmt).into_iter().enumerate() {
        let arg = args.get(i)?;
        if c.adjacent {
            // `%s%s`: the second (a task state's `+`) belongs to the first.
            continue;
        }
        let render = render_of(&c.conv, arg, fields)?;
        // Without `key=` (`function %ps`), the field's own name.
        let key = match c.key {
            Some(k) => k,
            None => fields[render.field()].name.clone(),
        };
        keys.push((key, render));
    }
    Some(keys)
}

/// A conversion of a format string (`%d`).
struct Conversion {
    /// The `key` written before its `=`, if any.
    key: Option<String>,
    /// The conversion itself (`%llu`, `%ps`).
    conv: String,
    /// It follows another conversion directly (`%s%s`).
    adjacent: bool,
}

/// Each conversion of a format string.
fn conversions(fmt: &str) -> Vec<Conversion> {
    let mut out = Vec::new();
    let bytes = fmt.as_bytes();
    let mut i = 0;
    let mut text_start = 0;
    while i < bytes.len() {
        if bytes[i] != b'%' {
            i += 1;
            continue;
        }
        if bytes.get(i + 1) == Some(&b'%') {
            i += 2;
            continue;
        }
        let before = &fmt[text_start..i];
        let key = before.strip_suffix('=').map(|b| {
            let start = b
                .char_indices()
                .rfind(|&(_, c)| !(c.is_ascii_alphanumeric() || c == '_'))
                .map_or(0, |(n, c)| n + c.len_utf8());
            b[start..].to_string()
        });
        let mut j = i + 1;
        while j < bytes.len() && b"-+ #0123456789.*hlzjt".contains(&bytes[j]) {
            j += 1;
        }
        // The conversion's letter, whole: a format file read elsewhere may
        // hold any character there.
        let mut end = j + fmt[j..].chars().next().map_or(0, char::len_utf8);
        if bytes.get(j) == Some(&b'p') {
            while end < bytes.len() && bytes[end].is_ascii_alphabetic() {
                end += 1;
            }
        }
        out.push(Conversion {
            key: key.filter(|k| !k.is_empty()),
            conv: fmt[i..end].to_string(),
            adjacent: !out.is_empty() && before.is_empty(),
        });
        i = end;
        text_start = end;
    }
    out
}

/// The arguments after the format string, split at top-level commas.
fn split_args(args: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (mut depth, mut quoted, mut start) = (0i32, false, 0);
    for (i, c) in args.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '(' | '{' | '[' if !quoted => depth = depth.saturating_add(1),
            ')' | '}' | ']' if !quoted => depth = depth.saturating_sub(1),
            ',' if !quoted && depth == 0 => {
                out.push(args[start..i].trim().to_string());
                start = i + 1;
            }
            _ => {}
        }
    }
    let last = args[start..].trim();
    if !last.is_empty() {
        out.push(last.to_string());
    }
    out
}

/// How conversion `conv` of argument `arg` renders.
fn render_of(conv: &str, arg: &str, fields: &[Field]) -> Option<Render> {
    let field = referenced_field(arg, fields)?;
    Some(
        if arg.contains("__print_flags(") && arg.contains(": \"R\"") {
            Render::TaskState {
                field,
                flags: table(arg),
            }
        } else if let Some((set, unset)) = choice(arg) {
            Render::Choice { field, set, unset }
        } else if arg.contains("__print_symbolic(") {
            Render::Symbolic {
                field,
                table: table(arg),
            }
        } else if arg.contains("__get_cpumask(") || arg.contains("__get_bitmask(") {
            Render::Bitmask { field }
        } else if conv.ends_with("ps") {
            Render::Symbol {
                field,
                offset: false,
            }
        } else if conv.ends_with("pS") {
            Render::Symbol {
                field,
                offset: true,
            }
        } else if conv.ends_with('p') {
            Render::Pointer { field }
        } else if conv.ends_with('s') || conv.ends_with('c') {
            Render::Text { field }
        } else {
            Render::Number {
                field,
                hex: conv.ends_with('x') || conv.ends_with('X'),
                pad: zero_pad(conv),
            }
        },
    )
}

/// The words of `REC->x ? "A" : "B"`.
fn choice(arg: &str) -> Option<(String, String)> {
    let (_, words) = arg.split_once('?')?;
    let (set, unset) = words.split_once(':')?;
    let word = |w: &str| -> Option<String> {
        let w = w.trim();
        Some(w.strip_prefix('"')?.strip_suffix('"')?.to_string())
    };
    Some((word(set)?, word(unset)?))
}

/// The widest zero padding taken from a format (the kernel's own are 2 to
/// 16 digits; a file read elsewhere may say anything).
pub const MAX_PAD: usize = 64;

/// The width of a zero-padded conversion (`%03d`: 3, at most
/// [`MAX_PAD`]), else 0.
fn zero_pad(conv: &str) -> usize {
    let spec = conv.trim_start_matches('%');
    match spec.strip_prefix('0') {
        Some(rest) => {
            let digits: String = rest
                .chars()
                .take_while(char::is_ascii_digit)
                .take(4)
                .collect();
            digits.parse::<usize>().unwrap_or(0).min(MAX_PAD)
        }
        None => 0,
    }
}

/// The field an argument reads: `REC->name`, `__get_str(name)`.
fn referenced_field(arg: &str, fields: &[Field]) -> Option<usize> {
    let name = if let Some(at) = arg.find("REC->") {
        &arg[at + 5..]
    } else {
        let at = arg.find("__get_")?;
        &arg[arg[at..].find('(')? + at + 1..]
    };
    let end = name
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(name.len());
    fields.iter().position(|f| f.name == name[..end])
}

/// The `{ VALUE, "NAME" }` pairs of a `__print_symbolic`/`__print_flags`.
fn table(arg: &str) -> Vec<(u64, String)> {
    let mut out = Vec::new();
    let mut rest = arg;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        let pair = &rest[open + 1..open + close];
        if let Some((v, n)) = pair.split_once(',') {
            let v = v.trim();
            let value = match v.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16).ok(),
                None => v.parse().ok(),
            };
            if let Some(value) = value {
                out.push((value, n.trim().trim_matches('"').to_string()));
            }
        }
        rest = &rest[open + close + 1..];
    }
    out
}
