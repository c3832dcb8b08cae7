//! The parser: lines → stanzas of properties → typed configuration, with
//! every problem gathered (parsing goes on after an error).

use super::apply::Draft;
use super::keys::{self, KeySpec, StanzaKind};
use super::values::{self, ValueError};
use super::*;
use crate::sched::{Policy, Sched};

/// One `key value` line.
#[derive(Debug, Clone)]
pub(super) struct Prop {
    pub key: String,
    pub key_pos: Pos,
    pub value: String,
    pub value_pos: Pos,
}

impl Prop {
    /// The position `offset` bytes into the value.
    fn pos_at(&self, offset: usize) -> Pos {
        let offset = offset.min(self.value.len());
        let chars = self.value.get(..offset).map_or(0, |s| s.chars().count());
        Pos {
            line: self.value_pos.line,
            col: self.value_pos.col + chars,
        }
    }
}

/// Where the line splitter is: between stanzas, after a name waiting for its
/// `{`, or inside a stanza (None when its name was bad: lines are skipped).
enum State {
    Outside,
    AwaitBrace(Option<(StanzaKind, usize)>, Pos),
    Inside(Option<Stanza>, Pos),
}

struct Stanza {
    kind: StanzaKind,
    index: usize,
    pos: Pos,
    props: Vec<Prop>,
    /// Properties past [`MAX_PROPERTIES`] were dropped (and said so).
    truncated: bool,
}

/// Byte index where a `#` comment starts, outside quotes; or the line length.
pub(crate) fn comment_start(line: &str) -> usize {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match (c, quote) {
            ('\\', q) if q != Some('\'') => escaped = true,
            ('"' | '\'', None) => quote = Some(c),
            (c, Some(q)) if c == q => quote = None,
            ('#', None) => return i,
            _ => {}
        }
    }
    line.len()
}

fn col_of(line: &str, byte: usize) -> usize {
    line.get(..byte).map_or(0, |s| s.chars().count()) + 1
}

/// Parses a stanza name: `main`, `timer_thread[N]`, `program[N]`; Err is
/// the problem and its hint.
fn stanza_name(name: &str) -> Result<(StanzaKind, usize), (String, String)> {
    if name == "main" {
        return Ok((StanzaKind::Main, 0));
    }
    let (base, rest) = name.split_once('[').ok_or_else(|| unknown_stanza(name))?;
    let kind = match base.trim() {
        "timer_thread" => StanzaKind::Timer,
        "program" => StanzaKind::Program,
        "irq_task" => StanzaKind::IrqTask,
        "task_latency" => StanzaKind::TaskLatency,
        "noise_thread" => StanzaKind::Noise,
        _ => return Err(unknown_stanza(name)),
    };
    let index = rest
        .strip_suffix(']')
        .and_then(|n| n.trim().parse::<usize>().ok())
        .ok_or_else(|| {
            (
                format!("`{name}`: the index must be a non-negative integer"),
                format!(
                    "write a whole number from 0 to {} in the brackets, as in `{}[0]`",
                    usize::MAX,
                    base.trim()
                ),
            )
        })?;
    Ok((kind, index))
}

fn unknown_stanza(name: &str) -> (String, String) {
    let hint = if name.contains(char::is_whitespace) && !name.contains('[') {
        "a property must be inside a stanza: `main { ... }`"
    } else {
        "stanzas are `main`, `timer_thread[N]`, `program[N]`, `irq_task[N]`, `task_latency[N]` and `noise_thread[N]`"
    };
    (format!("unknown stanza `{name}`"), hint.to_string())
}

/// Parses an experiment file's text.
pub fn parse(text: &str) -> Result<Experiment, Vec<Diagnostic>> {
    let (exp, diags) = parse_all(text);
    if diags.is_empty() {
        Ok(exp)
    } else {
        Err(diags)
    }
}

/// Parses as far as the text allows: the experiment made of what was valid
/// (a bad value leaves its default, a program without `cmdline` is left
/// out) and every problem found, in file order. The planner can then check
/// the valid part against the machine, so that one run of `check` reports
/// every problem of the file at once.
pub fn parse_all(text: &str) -> (Experiment, Vec<Diagnostic>) {
    let mut diags = Diags::default();
    if let Err(d) = decode(text.as_bytes()) {
        return (Experiment::default(), vec![d]);
    }
    let stanzas = split_stanzas(text, &mut diags);
    let mut exp = Experiment::default();
    let mut main_seen: Option<Pos> = None;
    let mut seen: std::collections::HashMap<(StanzaKind, usize), Pos> = Default::default();
    let (mut timers, mut programs, mut irq_tasks, mut tasks, mut noise) = (0, 0, 0, 0, 0);
    for st in stanzas {
        let (count, max) = match st.kind {
            StanzaKind::Main => (&mut 0, 1),
            StanzaKind::Timer => (&mut timers, MAX_TIMERS),
            StanzaKind::Program => (&mut programs, MAX_PROGRAMS),
            StanzaKind::IrqTask => (&mut irq_tasks, MAX_IRQ_TASKS),
            StanzaKind::TaskLatency => (&mut tasks, MAX_TASK_LATENCY),
            StanzaKind::Noise => (&mut noise, MAX_NOISE),
        };
        *count += 1;
        if *count == max + 1 {
            diags.push(
                Diagnostic::new(
                    st.pos,
                    format!("more than {max} {} stanzas", st.kind.display()),
                )
                .with_hint(Some(format!(
                    "rtlab takes at most {max}; this one and the rest are ignored"
                ))),
            );
        }
        if *count > max && st.kind != StanzaKind::Main {
            continue;
        }
        if st.kind == StanzaKind::Main {
            if let Some(first) = main_seen {
                diags.push(
                    Diagnostic::new(st.pos, "a second `main` stanza").with_hint(Some(format!(
                        "merge it into the first one, at line {}",
                        first.line
                    ))),
                );
                continue;
            }
            main_seen = Some(st.pos);
        } else if let Some(first) = seen.get(&(st.kind, st.index)) {
            diags.push(
                Diagnostic::new(st.pos, format!("index {} is used twice", st.index)).with_hint(
                    Some(format!(
                        "the first one is at line {}; give each a unique N",
                        first.line
                    )),
                ),
            );
            continue;
        }
        seen.insert((st.kind, st.index), st.pos);
        let mut b = Builder {
            diags: &mut diags,
            kind: st.kind,
        };
        match st.kind {
            StanzaKind::Main => exp.main = b.main(&st),
            StanzaKind::Timer => exp.timers.push(b.timer(&st)),
            StanzaKind::Program => {
                if let Some(p) = b.program(&st) {
                    exp.programs.push(p);
                }
            }
            StanzaKind::IrqTask => {
                if let Some(m) = b.irq_task(&st) {
                    exp.irq_tasks.push(m);
                }
            }
            StanzaKind::TaskLatency => {
                if let Some(m) = b.task_latency(&st) {
                    exp.task_latency.push(m);
                }
            }
            StanzaKind::Noise => {
                if let Some(n) = b.noise(&st) {
                    exp.noise.push(n);
                }
            }
        }
    }
    exp.noise.sort_by_key(|n| n.index);
    exp.irq_tasks.sort_by_key(|m| m.index);
    exp.task_latency.sort_by_key(|m| m.index);
    exp.timers.sort_by_key(|t| t.index);
    exp.programs.sort_by_key(|p| p.index);
    (exp, diags.into_sorted())
}

/// Most stanzas of a file: one `main`, the timers and the programs.
const MAX_STANZAS: usize =
    1 + MAX_TIMERS + MAX_PROGRAMS + MAX_IRQ_TASKS + MAX_TASK_LATENCY + MAX_NOISE;

/// The problems found, in a bounded list: past [`MAX_DIAGNOSTICS`] they are
/// counted, not kept (a megabyte of garbage would otherwise make a million).
#[derive(Default)]
struct Diags {
    list: Vec<Diagnostic>,
    dropped: usize,
}

/// Most problems reported for one file.
const MAX_DIAGNOSTICS: usize = 100;

impl Diags {
    fn push(&mut self, d: Diagnostic) {
        if self.list.len() < MAX_DIAGNOSTICS {
            self.list.push(d);
        } else {
            self.dropped += 1;
        }
    }

    /// The problems in file order, and a last line for those not kept.
    fn into_sorted(mut self) -> Vec<Diagnostic> {
        self.list.sort_by_key(|d| d.pos);
        if self.dropped > 0 {
            let end = self.list.last().map_or_else(Pos::default, |d| d.pos);
            self.list.push(
                Diagnostic::new(
                    end,
                    format!("and {} more problems, not shown", self.dropped),
                )
                .with_hint(Some(format!(
                    "fix the first {MAX_DIAGNOSTICS} and check the file again"
                ))),
            );
        }
        self.list
    }
}

/// Splits text into stanzas of properties; syntax errors go to `diags`.
fn split_stanzas(text: &str, diags: &mut Diags) -> Vec<Stanza> {
    let mut stanzas = Vec::new();
    let mut state = State::Outside;
    for (n, raw_line) in text.lines().enumerate() {
        let line = &raw_line[..comment_start(raw_line)];
        let content = line.trim();
        if content.is_empty() {
            continue;
        }
        let lead = line.len() - line.trim_start().len();
        let pos = Pos {
            line: n + 1,
            col: col_of(line, lead),
        };
        state = match state {
            State::Outside | State::AwaitBrace(..) if content == "}" => {
                diags.push(
                    Diagnostic::new(pos, "`}` without an open stanza").with_hint(Some(
                        "a stanza is a name, then `{`, properties, `}`; remove this `}`".into(),
                    )),
                );
                State::Outside
            }
            State::AwaitBrace(name, start) if content == "{" => match name {
                Some((kind, index)) => State::Inside(
                    Some(Stanza {
                        kind,
                        index,
                        pos: start,
                        props: Vec::new(),
                        truncated: false,
                    }),
                    start,
                ),
                None => State::Inside(None, start),
            },
            State::AwaitBrace(_, start) => {
                diags.push(
                    Diagnostic::new(start, "stanza name not followed by `{`")
                        .with_hint(Some("a stanza is a name, then `{`, properties, `}`".into())),
                );
                header(content, pos, diags)
            }
            State::Outside => header(content, pos, diags),
            State::Inside(stanza, _) if content == "}" => {
                stanzas.extend(stanza);
                if stanzas.len() > MAX_STANZAS {
                    diags.push(
                        Diagnostic::new(pos, format!("more than {MAX_STANZAS} stanzas"))
                            .with_hint(Some(format!("rtlab takes one main, {MAX_TIMERS} timer threads, {MAX_PROGRAMS} programs, {MAX_IRQ_TASKS} IRQ-to-task and {MAX_TASK_LATENCY} task-latency measurements, {MAX_NOISE} noise threads; the rest of the file is not read"))),
                    );
                    stanzas.pop();
                    return stanzas;
                }
                State::Outside
            }
            State::Inside(mut stanza, start) => {
                let at = LineAt {
                    line,
                    content,
                    lead,
                    pos,
                };
                property_line(stanza.as_mut(), start, &at, diags);
                State::Inside(stanza, start)
            }
        };
    }
    match state {
        State::Inside(_, start) => diags.push(
            Diagnostic::new(start, "stanza is not closed")
                .with_hint(Some("add `}` after its last property".into())),
        ),
        State::AwaitBrace(_, start) => diags.push(
            Diagnostic::new(start, "stanza name not followed by `{`")
                .with_hint(Some("a stanza is a name, then `{`, properties, `}`".into())),
        ),
        State::Outside => {}
    }
    stanzas
}

/// A line of the file, comment removed.
struct LineAt<'a> {
    line: &'a str,
    /// The line trimmed.
    content: &'a str,
    /// Bytes of blanks before the content.
    lead: usize,
    pos: Pos,
}

/// A line inside the stanza opened at `start`: a property (kept in
/// `stanza` when there is one), or a refusal.
fn property_line(stanza: Option<&mut Stanza>, start: Pos, at: &LineAt<'_>, diags: &mut Diags) {
    let (content, pos) = (at.content, at.pos);
    if content.ends_with('{') || content.starts_with('}') {
        diags.push(
            Diagnostic::new(pos, "a stanza cannot be opened or closed here").with_hint(Some(
                format!(
                    "close the stanza of line {} with `}}` on a line of its own first",
                    start.line
                ),
            )),
        );
        return;
    }
    let Some(st) = stanza else {
        return;
    };
    if st.props.len() >= MAX_PROPERTIES {
        if !st.truncated {
            st.truncated = true;
            diags.push(
                Diagnostic::new(
                    pos,
                    format!("more than {MAX_PROPERTIES} properties in one stanza"),
                )
                .with_hint(Some(
                    "this one and the rest of the stanza are ignored".into(),
                )),
            );
        }
        return;
    }
    let key_len = content.find(char::is_whitespace).unwrap_or(content.len());
    let key = &content[..key_len];
    let value = content[key_len..].trim_start();
    let value_byte = at.lead + key_len + (content[key_len..].len() - value.len());
    st.props.push(Prop {
        key: key.to_string(),
        key_pos: pos,
        value: value.to_string(),
        value_pos: Pos {
            line: pos.line,
            col: col_of(at.line, value_byte),
        },
    });
}

/// Parses a stanza header line (`name` or `name {`).
fn header(content: &str, pos: Pos, diags: &mut Diags) -> State {
    let (name, opens) = match content.strip_suffix('{') {
        Some(n) => (n.trim(), true),
        None => (content, false),
    };
    let parsed = match stanza_name(name) {
        Ok(k) => Some(k),
        Err((msg, hint)) => {
            diags.push(Diagnostic::new(pos, msg).with_hint(Some(hint)));
            None
        }
    };
    if opens {
        State::Inside(
            parsed.map(|(kind, index)| Stanza {
                kind,
                index,
                pos,
                props: Vec::new(),
                truncated: false,
            }),
            pos,
        )
    } else {
        State::AwaitBrace(parsed, pos)
    }
}

/// Turns a stanza's properties into typed configuration.
pub(super) struct Builder<'a> {
    diags: &'a mut Diags,
    kind: StanzaKind,
}

/// The scheduling keys of a stanza, checked together once all are read.
#[derive(Default)]
pub(super) struct SchedKeys {
    pub policy: Option<(Policy, Pos)>,
    pub priority: Option<(i64, Pos)>,
    /// `sched.policy` was given and refused: the priority is not checked
    /// against a policy nobody asked for.
    pub policy_refused: bool,
}

impl Builder<'_> {
    /// A refusal of `prop`'s value; without a hint of its own, the hint
    /// is the key's syntax (`` `timer.period DURATION` ``), so that every
    /// refusal says what would be accepted.
    pub(super) fn value_error(&mut self, prop: &Prop, e: ValueError) {
        let hint = e.hint.or_else(|| {
            keys::find(self.kind, &prop.key).map(|k| format!("`{} {}`", k.name, k.syntax))
        });
        self.diags.push(
            Diagnostic::new(
                prop.pos_at(e.offset),
                format!("`{}`: {}", prop.key, e.message),
            )
            .with_hint(hint),
        );
    }

    pub(super) fn get<T>(&mut self, prop: &Prop, r: Result<T, ValueError>) -> Option<T> {
        r.map_err(|e| self.value_error(prop, e)).ok()
    }

    /// Checks key existence, duplicates and value presence; yields the props
    /// worth interpreting.
    fn props<'p>(&mut self, st: &'p Stanza) -> Vec<(&'p Prop, &'static KeySpec)> {
        let mut out = Vec::new();
        let mut first_at: std::collections::HashMap<&str, Pos> = Default::default();
        for prop in &st.props {
            let Some(spec) = keys::find(self.kind, &prop.key) else {
                self.diags.push(
                    Diagnostic::new(
                        prop.key_pos,
                        format!("unknown key `{}` in {}", prop.key, self.kind.display()),
                    )
                    .with_hint(Some(keys::unknown_key_hint(self.kind, &prop.key))),
                );
                continue;
            };
            if !spec.repeatable
                && let Some(first) = first_at.get(prop.key.as_str())
            {
                self.diags.push(
                    Diagnostic::new(prop.key_pos, format!("`{}` is set twice", prop.key))
                        .with_hint(Some(format!("it was first set at line {}", first.line))),
                );
                continue;
            }
            let is_flag = spec.is_flag();
            if is_flag && !prop.value.is_empty() {
                self.diags.push(
                    Diagnostic::new(prop.value_pos, format!("`{}` takes no value", prop.key))
                        .with_hint(Some(format!("write `{}` alone to turn it on", prop.key))),
                );
                continue;
            }
            if !is_flag && prop.value.is_empty() {
                self.diags.push(
                    Diagnostic::new(prop.key_pos, format!("`{}` needs a value", prop.key))
                        .with_hint(Some(format!("`{} {}`", prop.key, spec.syntax))),
                );
                continue;
            }
            first_at.entry(prop.key.as_str()).or_insert(prop.key_pos);
            out.push((prop, spec));
        }
        out
    }

    /// The stanza's keys applied, each by its row of [`keys::KEYS`].
    fn draft(&mut self, st: &Stanza) -> Draft {
        let mut draft = Draft::new(st.index, st.pos);
        for (prop, spec) in self.props(st) {
            (spec.apply)(self, prop, &mut draft);
        }
        draft
    }

    pub(super) fn cpu_list(&mut self, prop: &Prop) -> Option<Spanned<Vec<usize>>> {
        match crate::cpulist::parse(&prop.value) {
            Ok(cpus) => Some(Spanned {
                value: cpus,
                pos: prop.value_pos,
            }),
            Err(e) => {
                self.value_error(
                    prop,
                    ValueError::new(e.message)
                        .at(e.offset)
                        .hint("CPU lists look like `3`, `0-2` or `0,2-3,7`"),
                );
                None
            }
        }
    }

    fn sched(&mut self, keys: SchedKeys, stanza_pos: Pos) -> Spanned<Sched> {
        let (policy, policy_pos) = keys.policy.unwrap_or((Policy::Other, stanza_pos));
        let pos = keys.priority.map_or(policy_pos, |(_, p)| p);
        let priority = match (policy.is_realtime(), keys.priority) {
            (_, Some((_, _))) if keys.policy_refused => 0,
            (true, None) => {
                self.diags.push(
                    Diagnostic::new(policy_pos, format!("{} needs a priority", policy.name()))
                        .with_hint(Some("add `sched.priority N` with N in 1..99".into())),
                );
                1
            }
            (true, Some((p, at))) if !(1..=99).contains(&p) => {
                self.diags.push(
                    Diagnostic::new(
                        at,
                        format!("{} priority {p} is out of range 1..99", policy.name()),
                    )
                    .with_hint(Some(format!(
                        "{} takes a real-time priority from 1 (lowest) to 99 (highest)",
                        policy.name()
                    ))),
                );
                1
            }
            (false, Some((p, at))) if !(-20..=19).contains(&p) => {
                self.diags.push(
                    Diagnostic::new(
                        at,
                        format!(
                            "nice value {p} is out of range -20..19 for {}",
                            policy.name()
                        ),
                    )
                    .with_hint(Some(
                        "for OTHER, BATCH and IDLE the priority is the nice value, -20..19; \
                             did you mean `sched.policy FIFO`?"
                            .into(),
                    )),
                );
                0
            }
            (_, Some((p, _))) => p as i32,
            (false, None) => 0,
        };
        Spanned {
            value: Sched { policy, priority },
            pos,
        }
    }

    pub(super) fn duration(&mut self, prop: &Prop, min_ns: u64) -> Option<u64> {
        let ns = self.get(prop, values::duration_ns(&prop.value))?;
        if ns < min_ns {
            let least = values::format_duration(min_ns);
            self.value_error(
                prop,
                ValueError::new(format!("must be at least {least}"))
                    .hint(format!("`{} {least}` or longer", prop.key)),
            );
            return None;
        }
        Some(ns)
    }

    /// A duration that is a whole number of microseconds.
    pub(super) fn whole_us(&mut self, prop: &Prop) -> Option<u64> {
        let ns = self.duration(prop, 0)?;
        if ns % 1000 != 0 {
            self.value_error(
                prop,
                ValueError::new("must be a whole number of microseconds")
                    .hint("e.g. `0 us`, `10 us`"),
            );
            return None;
        }
        Some(ns / 1000)
    }

    /// `cpu.quota` (at least 1 ms) or `cpu.period` (1 ms .. 1 s), in µs.
    pub(super) fn bandwidth_us(&mut self, prop: &Prop, period: bool) -> Option<Spanned<u64>> {
        let us = self.whole_us(prop)?;
        let ok = if period {
            (1_000..=1_000_000).contains(&us)
        } else {
            us >= 1_000
        };
        if !ok {
            self.value_error(
                prop,
                ValueError::new(if period {
                    "must be between 1 ms and 1 s (the kernel's limits)"
                } else {
                    "must be at least 1 ms (the kernel's minimum quota)"
                })
                .hint("e.g. `cpu.quota 25 ms` with `cpu.period 100 ms` gives a quarter of one CPU"),
            );
            return None;
        }
        Some(Spanned {
            value: us,
            pos: prop.value_pos,
        })
    }

    /// `irq.affinity CPULIST [IRQ...]`.
    pub(super) fn irq_affinity(&mut self, prop: &Prop) -> Option<Spanned<(Vec<usize>, Vec<u32>)>> {
        let (cpus_text, rest) = prop
            .value
            .split_once(char::is_whitespace)
            .unwrap_or((prop.value.as_str(), ""));
        let cpus = match crate::cpulist::parse(cpus_text) {
            Ok(c) => c,
            Err(e) => {
                self.value_error(
                    prop,
                    ValueError::new(e.message)
                        .at(e.offset)
                        .hint("`irq.affinity CPULIST [IRQ...]`, e.g. `irq.affinity 0` or `irq.affinity 0-1 36 38`"),
                );
                return None;
            }
        };
        let mut irqs = Vec::new();
        let words: Vec<&str> = rest.split_whitespace().collect();
        if words.len() > 1 && words.iter().any(|w| w.eq_ignore_ascii_case("all")) {
            self.value_error(
                prop,
                ValueError::new("`all` and IRQ numbers together")
                    .at(prop.value.find(words[0]).unwrap_or(0))
                    .hint("write either `all` (or nothing) for every IRQ, or the IRQ numbers"),
            );
            return None;
        }
        for word in words {
            if word.eq_ignore_ascii_case("all") {
                continue;
            }
            match word.parse::<u32>() {
                Ok(n) => irqs.push(n),
                Err(_) => {
                    let offset = prop.value.find(word).unwrap_or(0);
                    self.value_error(
                        prop,
                        ValueError::new(format!("`{word}` is not an IRQ number"))
                            .at(offset)
                            .hint("IRQs are the numbers of `rtlab irq`; none (or `all`) means every IRQ"),
                    );
                    return None;
                }
            }
        }
        Some(Spanned {
            value: (cpus, irqs),
            pos: prop.value_pos,
        })
    }

    /// `threads.sched PATTERN POLICY PRIORITY`.
    pub(super) fn thread_sched(&mut self, prop: &Prop) -> Option<Spanned<(String, Sched)>> {
        let words: Vec<&str> = prop.value.split_whitespace().collect();
        let usage =
            "`threads.sched PATTERN POLICY PRIORITY`, e.g. `threads.sched ksoftirqd/* FIFO 2`";
        let [pattern, policy, priority] = words[..] else {
            self.value_error(
                prop,
                ValueError::new("needs a name pattern, a policy and a priority").hint(usage),
            );
            return None;
        };
        if pattern.chars().count() > MAX_PATTERN {
            self.value_error(
                prop,
                ValueError::new(format!(
                    "the pattern is longer than {MAX_PATTERN} characters"
                ))
                .hint("thread names have at most 15 characters; use `*` and `?`"),
            );
            return None;
        }
        let at = |w: &str| prop.value.rfind(w).unwrap_or(0);
        let policy = self.get(prop, values::policy(policy).map_err(|e| e.at(at(policy))))?;
        let range = if policy.is_realtime() {
            (1, 99)
        } else {
            (-20, 19)
        };
        let priority = self.get(
            prop,
            values::integer(priority, range.0, range.1).map_err(|e| e.at(at(priority)).hint(usage)),
        )?;
        Some(Spanned {
            value: (
                pattern.to_string(),
                Sched {
                    policy,
                    priority: priority as i32,
                },
            ),
            pos: prop.value_pos,
        })
    }

    /// The two words of a `KEY WORD CPULIST` value: the word, and the CPU
    /// list with its own position. A refusal says `usage`.
    fn word_and_cpus(
        &mut self,
        prop: &Prop,
        what: &str,
        usage: &str,
    ) -> Option<(String, Spanned<Vec<usize>>)> {
        let words: Vec<&str> = prop.value.split_whitespace().collect();
        let [word, cpus] = words[..] else {
            self.value_error(
                prop,
                ValueError::new(format!("needs {what} and a CPU list")).hint(usage),
            );
            return None;
        };
        // The CPU list is the last word.
        let at = prop.value.rfind(cpus).unwrap_or(0);
        match crate::cpulist::parse(cpus) {
            Ok(list) => Some((
                word.to_string(),
                Spanned {
                    value: list,
                    pos: prop.pos_at(at),
                },
            )),
            Err(e) => {
                self.value_error(
                    prop,
                    ValueError::new(e.message).at(at + e.offset).hint(usage),
                );
                None
            }
        }
    }

    /// `threads.affinity PATTERN|TID CPULIST`: a word that reads as a
    /// number is a TID (1 and up), any other a name pattern.
    pub(super) fn thread_affinity(
        &mut self,
        prop: &Prop,
    ) -> Option<Spanned<(String, Spanned<Vec<usize>>)>> {
        let usage = "`threads.affinity PATTERN|TID CPULIST`, e.g. `threads.affinity irq/*-eth0* 0` or `threads.affinity 1234 0-1`";
        let (selector, cpus) = self.word_and_cpus(prop, "a thread name pattern or TID", usage)?;
        let numeric = selector
            .strip_prefix(['+', '-'])
            .unwrap_or(&selector)
            .bytes()
            .all(|b| b.is_ascii_digit());
        if selector.chars().count() > MAX_PATTERN {
            self.value_error(
                prop,
                ValueError::new(format!(
                    "the pattern is longer than {MAX_PATTERN} characters"
                ))
                .hint("thread names have at most 15 characters; use `*` and `?`"),
            );
            return None;
        }
        if numeric && !selector.parse::<i32>().is_ok_and(|tid| tid > 0) {
            self.value_error(
                prop,
                ValueError::new(format!("`{selector}` is not a TID")).hint(
                    "a TID is a number from 1 to 2147483647 (`rtlab threads` lists them); a name pattern is any other word",
                ),
            );
            return None;
        }
        Some(Spanned {
            value: (selector, cpus),
            pos: prop.value_pos,
        })
    }

    /// `net.steering DEV CPULIST`.
    pub(super) fn net_steering(
        &mut self,
        prop: &Prop,
    ) -> Option<Spanned<(String, Spanned<Vec<usize>>)>> {
        let usage = "`net.steering DEV CPULIST`, e.g. `net.steering eth0 0` (`ip link` lists the interfaces)";
        let (dev, cpus) = self.word_and_cpus(prop, "a network interface", usage)?;
        // As the kernel names interfaces (at most 15 bytes, no `/`, `:` or
        // blank); a leading `.` too, which no journal of rtlab's names.
        let ok = !dev.is_empty()
            && dev.len() <= 15
            && !dev.starts_with('.')
            && !dev.contains(['/', ':']);
        if !ok {
            self.value_error(
                prop,
                ValueError::new(format!("`{dev}` is not a network interface name")).hint(
                    "interface names have 1 to 15 characters, none of them `/` or `:`, and do not start with `.` (`ip link` lists them)",
                ),
            );
            return None;
        }
        Some(Spanned {
            value: (dev, cpus),
            pos: prop.value_pos,
        })
    }

    pub(super) fn cpuset(&mut self, prop: &Prop) -> Option<Spanned<String>> {
        self.get(prop, values::cpuset_name(&prop.value))
            .map(|value| Spanned {
                value,
                pos: prop.value_pos,
            })
    }

    pub(super) fn path(&mut self, prop: &Prop) -> Spanned<String> {
        Spanned {
            value: prop.value.clone(),
            pos: prop.value_pos,
        }
    }

    fn main(&mut self, st: &Stanza) -> MainConfig {
        let d = self.draft(st);
        MainConfig {
            cpu_affinity: d.affinity,
            sched: self.sched(d.sched, st.pos),
            cpuset: d.cpuset,
            ..d.main
        }
    }

    fn timer(&mut self, st: &Stanza) -> TimerConfig {
        let d = self.draft(st);
        let other = d
            .sched
            .policy
            .map(|p| p.1)
            .or(d.sched.priority.map(|p| p.1));
        if let (Some(dl), Some(at)) = (&d.timer.deadline, other) {
            self.diags.push(
                Diagnostic::new(
                    at,
                    "`sched.policy`/`sched.priority` and `sched.deadline` both set the scheduling",
                )
                .with_hint(Some(format!(
                    "keep one: `sched.deadline` (line {}) makes it SCHED_DEADLINE",
                    dl.pos.line
                ))),
            );
        }
        TimerConfig {
            cpu_affinity: d.affinity,
            sched: self.sched(d.sched, st.pos),
            cpuset: d.cpuset,
            ..d.timer
        }
    }

    fn irq_task(&mut self, st: &Stanza) -> Option<IrqTaskConfig> {
        let d = self.draft(st);
        let who = format!("irq_task[{}]", st.index);
        let Some(irq) = d.irq_task.irq else {
            if !st.props.iter().any(|p| p.key == "irq") {
                self.diags.push(
                    Diagnostic::new(st.pos, format!("{who} has no `irq`")).with_hint(Some(
                        "add `irq NUMBER` or `irq NAME` (`rtlab irq` lists them)".into(),
                    )),
                );
            }
            return None;
        };
        let task = self.one_task(st, &who, d.irq_task.task)?;
        Some(IrqTaskConfig {
            index: st.index,
            pos: st.pos,
            irq,
            task,
        })
    }

    fn task_latency(&mut self, st: &Stanza) -> Option<TaskLatencyConfig> {
        let d = self.draft(st);
        let who = format!("task_latency[{}]", st.index);
        let t = d.task_latency;
        let task = self.one_task(st, &who, t.task)?;
        Some(TaskLatencyConfig {
            index: st.index,
            pos: st.pos,
            task,
            period_ns: t.period_ns,
            deadline_ns: t.deadline_ns,
            samples: t.samples,
            thread: t.thread,
        })
    }

    fn noise(&mut self, st: &Stanza) -> Option<NoiseConfig> {
        let d = self.draft(st);
        let who = format!("noise_thread[{}]", st.index);
        let cpu = match d.affinity {
            Some(a) if a.value.len() == 1 => Spanned {
                value: a.value[0],
                pos: a.pos,
            },
            Some(a) => {
                self.diags.push(
                    Diagnostic::new(a.pos, format!("{who} polls one CPU, not {}", a.value.len()))
                        .with_hint(Some("write one `noise_thread[N]` per CPU".into())),
                );
                return None;
            }
            None => {
                if !st.props.iter().any(|p| p.key == "cpu_affinity") {
                    self.diags.push(
                        Diagnostic::new(st.pos, format!("{who} has no `cpu_affinity`"))
                            .with_hint(Some("add `cpu_affinity CPU`: the CPU it polls".into())),
                    );
                }
                return None;
            }
        };
        let n = d.noise;
        Some(NoiseConfig {
            index: st.index,
            pos: st.pos,
            cpu,
            sched: self.sched(d.sched, st.pos),
            cpuset: d.cpuset,
            threshold_ns: n.threshold_ns,
            period_ns: n.period_ns,
            runtime_ns: n.runtime_ns,
            duration_ns: n.duration_ns,
            attribute: n.attribute,
            exact_below_ns: n.exact_below_ns,
            offset_ns: n.offset_ns,
            warmup_ns: n.warmup_ns,
            stop_above_ns: n.stop_above_ns,
            memmove_bytes: n.memmove_bytes,
        })
    }

    /// The one task a stanza names (`task.name`, `task.pid`,
    /// `task.program`).
    fn one_task(
        &mut self,
        st: &Stanza,
        who: &str,
        given: Vec<Spanned<TaskSelector>>,
    ) -> Option<Spanned<TaskSelector>> {
        let mut tasks = given.into_iter();
        let task = tasks.next();
        if let Some(extra) = tasks.next() {
            self.diags.push(
                Diagnostic::new(extra.pos, format!("{who} names its task twice")).with_hint(Some(
                    "give one of `task.name`, `task.pid` and `task.program`".into(),
                )),
            );
            return None;
        }
        let Some(task) = task else {
            if !st.props.iter().any(|p| p.key.starts_with("task.")) {
                self.diags.push(
                    Diagnostic::new(st.pos, format!("{who} has no task")).with_hint(Some(
                        "add `task.name COMM`, `task.pid PID` or `task.program N`".into(),
                    )),
                );
            }
            return None;
        };
        Some(task)
    }

    fn program(&mut self, st: &Stanza) -> Option<ProgramConfig> {
        let d = self.draft(st);
        let sched = self.sched(d.sched, st.pos);
        let has_cmdline = st.props.iter().any(|p| p.key == "cmdline");
        if !has_cmdline {
            self.diags.push(
                Diagnostic::new(st.pos, format!("program[{}] has no `cmdline`", st.index))
                    .with_hint(Some("add `cmdline COMMAND ARGS...`".into())),
            );
        }
        let p = d.program;
        Some(ProgramConfig {
            index: st.index,
            pos: st.pos,
            argv: p.argv?,
            cpu_affinity: d.affinity,
            sched,
            out: p.out,
            err: p.err,
            on_ok: p.on_ok,
            on_ko: p.on_ko,
            grace_ns: p.grace_ns,
            cpuset: d.cpuset,
            bandwidth: p.bandwidth,
        })
    }
}

#[cfg(test)]
mod tests;
