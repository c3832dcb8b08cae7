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
fn comment_start(line: &str) -> usize {
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
        "stanzas are `main`, `timer_thread[N]`, `program[N]`, `irq_task[N]` and `task_latency[N]`"
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
    let (mut timers, mut programs, mut irq_tasks, mut tasks) = (0, 0, 0, 0);
    for st in stanzas {
        let (count, max) = match st.kind {
            StanzaKind::Main => (&mut 0, 1),
            StanzaKind::Timer => (&mut timers, MAX_TIMERS),
            StanzaKind::Program => (&mut programs, MAX_PROGRAMS),
            StanzaKind::IrqTask => (&mut irq_tasks, MAX_IRQ_TASKS),
            StanzaKind::TaskLatency => (&mut tasks, MAX_TASK_LATENCY),
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
        }
    }
    exp.irq_tasks.sort_by_key(|m| m.index);
    exp.task_latency.sort_by_key(|m| m.index);
    exp.timers.sort_by_key(|t| t.index);
    exp.programs.sort_by_key(|p| p.index);
    (exp, diags.into_sorted())
}

/// Most stanzas of a file: one `main`, the timers and the programs.
const MAX_STANZAS: usize = 1 + MAX_TIMERS + MAX_PROGRAMS + MAX_IRQ_TASKS + MAX_TASK_LATENCY;

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
                            .with_hint(Some(format!("rtlab takes one main, {MAX_TIMERS} timer threads, {MAX_PROGRAMS} programs, {MAX_IRQ_TASKS} IRQ-to-task and {MAX_TASK_LATENCY} task-latency measurements; the rest of the file is not read"))),
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
mod tests {
    use super::*;

    fn ok(text: &str) -> Experiment {
        parse(text).unwrap_or_else(|d| panic!("{d:?}"))
    }

    fn errors(text: &str) -> Vec<Diagnostic> {
        parse(text).expect_err("should be refused")
    }

    fn one_error(text: &str) -> Diagnostic {
        let d = errors(text);
        assert_eq!(d.len(), 1, "{d:?}");
        d.into_iter().next().unwrap()
    }

    #[test]
    fn every_main_key() {
        let e = ok(
            "main\n{\n dbg_level 3\n cpu_affinity 0-1\n sched.policy fifo\n sched.priority 10\n \
                    stats.period 1500 ms\n stats.format csv\n stats.cpu_load global\n memlock\n \
                    pm_qos.cpu_dma_latency 10 us\n}\n",
        );
        let m = &e.main;
        assert_eq!(m.dbg_level, 3);
        assert_eq!(m.cpu_affinity.as_ref().unwrap().value, vec![0, 1]);
        assert_eq!(
            m.sched.value,
            Sched {
                policy: Policy::Fifo,
                priority: 10
            }
        );
        assert_eq!(m.stats_period_ns, 1_500_000_000);
        assert_eq!(m.stats_format, StatsFormat::Csv);
        assert_eq!(m.cpu_load, CpuLoadDisplay::Global);
        assert!(m.memlock);
        assert_eq!(m.dma_latency_us, Some(10));
        assert_eq!(
            ok("main {\n pm_qos.cpu_dma_latency off\n}\n")
                .main
                .dma_latency_us,
            None
        );
        assert_eq!(
            ok("main {\n stats.cpu_load all\n}").main.cpu_load,
            CpuLoadDisplay::All
        );
        assert_eq!(
            ok("main {\n stats.cpu_load none\n}").main.cpu_load,
            CpuLoadDisplay::None
        );
        let s = ok("main {\n spikes.worst 5\n spikes.threshold 150 us\n spikes.max 40\n}").main;
        assert_eq!(
            (s.spikes_worst, s.spikes_threshold_ns, s.spikes_max),
            (5, Some(150_000), 40)
        );
        let bad = errors("main {\n spikes.worst 100001\n spikes.threshold 10 ns\n spikes.max 0\n}");
        assert_eq!(bad.len(), 3, "{bad:?}");
    }

    #[test]
    fn main_defaults() {
        let m = ok("").main;
        assert_eq!(m, MainConfig::default());
        assert_eq!(m.stats_period_ns, 1_000_000_000);
        assert_eq!(m.dma_latency_us, Some(0));
        assert!(!m.memlock);
    }

    #[test]
    fn every_timer_key_and_defaults() {
        let e = ok(
            "timer_thread[2]\n{\n cpu_affinity 1\n sched.policy RR\n sched.priority 50\n \
                    timer.period 200 us\n lifetime.duration 1 min\n lifetime.loops 5000\n \
                    stats.histo_size 1 ms\n stats.filename out/t.txt\n}\ntimer_thread[0]\n{\n}\n",
        );
        let (t0, t2) = (&e.timers[0], &e.timers[1]);
        assert_eq!((t0.index, t2.index), (0, 2));
        assert_eq!(t2.cpu_affinity.as_ref().unwrap().value, vec![1]);
        assert_eq!(
            t2.sched.value,
            Sched {
                policy: Policy::Rr,
                priority: 50
            }
        );
        assert_eq!(t2.period_ns, 200_000);
        assert_eq!(t2.duration_ns, Some(60_000_000_000));
        assert_eq!(t2.loops, Some(5000));
        assert_eq!(t2.histo_size_us, 1000);
        assert_eq!(t2.filename.as_ref().unwrap().value, "out/t.txt");
        assert_eq!(t0.period_ns, 1_000_000);
        assert_eq!(t0.histo_size_us, 100);
        assert_eq!(t0.sched.value, Sched::default());
        assert!(t0.duration_ns.is_none() && t0.loops.is_none() && t0.filename.is_none());
    }

    #[test]
    fn every_program_key_and_defaults() {
        let e = ok(
            "program[1]\n{\n cmdline ping -f localhost\n cpu_affinity 0\n sched.policy BATCH\n \
                    sched.priority 5\n output.out /tmp/o\n output.err /tmp/e\n termination.ok RESPAWN\n \
                    termination.ko ABORT\n termination.grace 500 ms\n}\nprogram[0] {\n cmdline true\n}\n",
        );
        let (p0, p1) = (&e.programs[0], &e.programs[1]);
        assert_eq!(p1.argv.value, ["ping", "-f", "localhost"]);
        assert_eq!(p1.cpu_affinity.as_ref().unwrap().value, vec![0]);
        assert_eq!(
            p1.sched.value,
            Sched {
                policy: Policy::Batch,
                priority: 5
            }
        );
        assert_eq!(p1.out.as_ref().unwrap().value, "/tmp/o");
        assert_eq!(p1.err.as_ref().unwrap().value, "/tmp/e");
        assert_eq!((p1.on_ok, p1.on_ko), (Action::Respawn, Action::Abort));
        assert_eq!(p1.grace_ns, 500_000_000);
        assert_eq!((p0.on_ok, p0.on_ko), (Action::Ignore, Action::Ignore));
        assert_eq!(p0.grace_ns, 2_000_000_000);
        assert!(p0.out.is_none() && p0.err.is_none());
    }

    #[test]
    fn examples_parse() {
        for text in [
            include_str!("../../../../examples/host.cfg"),
            include_str!("../../../../examples/host2.cfg"),
            include_str!("../../../../examples/two-cpu.cfg"),
        ] {
            let e = ok(text);
            assert_eq!(e.timers.len(), 1);
            assert_eq!(e.timers[0].histo_size_us, 20);
            assert_eq!(e.main.stats_period_ns, 1_500_000_000);
        }
    }

    #[test]
    fn comments_quotes_and_braces() {
        let e = ok(
            "# top\nmain # trailing\n{ # brace comment\n  stats.period 2 s # two\n}\n\
                    program[0] {\n cmdline sh -c \"echo #not a comment\" # comment\n}\n\
                    program[1]\n{\n cmdline sh -c 'echo #1'\n}\n",
        );
        assert_eq!(e.main.stats_period_ns, 2_000_000_000);
        assert_eq!(
            e.programs[0].argv.value,
            ["sh", "-c", "echo #not a comment"]
        );
        assert_eq!(e.programs[1].argv.value, ["sh", "-c", "echo #1"]);
    }

    #[test]
    fn unknown_key_points_at_it_with_the_closest_key() {
        let d = one_error("timer_thread[0]\n{\n  sched.prority 99\n}\n");
        assert_eq!(d.pos, Pos { line: 3, col: 3 });
        assert_eq!(d.message, "unknown key `sched.prority` in timer_thread[N]");
        assert_eq!(d.hint.as_deref(), Some("did you mean `sched.priority`?"));
    }

    #[test]
    fn bad_values_point_into_the_value() {
        let d = one_error("timer_thread[0]\n{\n  timer.period 1500\n}\n");
        assert_eq!(d.pos, Pos { line: 3, col: 20 });
        assert!(d.message.contains("no unit"));
        assert!(d.hint.unwrap().contains("ns, us, ms, s, min, h"));
        let d = one_error("main\n{\n  cpu_affinity 0,x\n}\n");
        assert_eq!(d.pos, Pos { line: 3, col: 18 });
        let d = one_error("main\n{\n  sched.policy DEADLINE\n}\n");
        assert!(d.hint.unwrap().contains("OTHER, FIFO, RR, BATCH, IDLE"));
        for (text, what) in [
            ("main {\n dbg_level 12\n}", "out of range"),
            ("main {\n stats.period 0 s\n}", "at least 1ms"),
            ("main {\n stats.format xml\n}", "unknown format"),
            ("main {\n stats.cpu_load some\n}", "unknown CPU load"),
            (
                "main {\n pm_qos.cpu_dma_latency 1500 ns\n}",
                "whole number of microseconds",
            ),
            (
                "timer_thread[0] {\n stats.histo_size 1500 ns\n}",
                "whole number of microseconds",
            ),
            ("timer_thread[0] {\n timer.period 2 h\n}", "at most 1 h"),
            ("timer_thread[0] {\n lifetime.loops 0\n}", "out of range"),
            ("timer_thread[0] {\n lifetime.duration 0 s\n}", "at least"),
            ("program[0] {\n cmdline echo \"open\n}", "unbalanced quote"),
            (
                "program[0] {\n cmdline true\n termination.ok RESTART\n}",
                "unknown action",
            ),
            (
                "timer_thread[0] {\n sched.priority high\n}",
                "not a whole number",
            ),
        ] {
            let d = one_error(text);
            assert!(d.message.contains(what), "{text:?}: {}", d.message);
        }
    }

    #[test]
    fn scheduling_is_checked_as_a_whole() {
        let d = one_error("timer_thread[0]\n{\n  sched.policy FIFO\n}\n");
        assert_eq!(d.message, "FIFO needs a priority");
        assert_eq!(d.pos, Pos { line: 3, col: 16 });
        let d = one_error("timer_thread[0]\n{\n  sched.priority 0\n  sched.policy FIFO\n}\n");
        assert!(d.message.contains("priority 0 is out of range"));
        let d = one_error("timer_thread[0]\n{\n  sched.priority 99\n}\n");
        assert!(d.message.contains("nice value 99"));
        assert!(d.hint.unwrap().contains("sched.policy FIFO"));
        let e = ok("program[0] {\n cmdline true\n sched.priority -5\n}");
        assert_eq!(e.programs[0].sched.value.priority, -5);
    }

    #[test]
    fn structure_errors() {
        let cases: &[(&str, &str, Pos)] = &[
            ("main\n{\n", "stanza is not closed", Pos { line: 1, col: 1 }),
            ("}\n", "`}` without an open stanza", Pos { line: 1, col: 1 }),
            (
                "mian\n{\n}\n",
                "unknown stanza `mian`",
                Pos { line: 1, col: 1 },
            ),
            (
                "timer_thread[x]\n{\n}\n",
                "index must be a non-negative integer",
                Pos { line: 1, col: 1 },
            ),
            (
                "timer_thread[-1]\n{\n}\n",
                "index must be a non-negative integer",
                Pos { line: 1, col: 1 },
            ),
            (
                "main\nstats.period 1 s\n",
                "not followed by `{`",
                Pos { line: 1, col: 1 },
            ),
            (
                "main\n{\n  cpu_affinity 0\n  main {\n}\n",
                "cannot be opened or closed here",
                Pos { line: 4, col: 3 },
            ),
            (
                "main\n{\n  memlock yes\n}\n",
                "takes no value",
                Pos { line: 3, col: 11 },
            ),
            (
                "main\n{\n  stats.period\n}\n",
                "needs a value",
                Pos { line: 3, col: 3 },
            ),
            (
                "program[0]\n{\n  output.out x\n}\n",
                "has no `cmdline`",
                Pos { line: 1, col: 1 },
            ),
        ];
        for (text, what, pos) in cases {
            let d = errors(text);
            assert!(
                d.iter().any(|d| d.message.contains(what) && d.pos == *pos),
                "{text:?}: {d:?}"
            );
        }
    }

    #[test]
    fn duplicates_are_refused() {
        let d = one_error("main\n{\n stats.period 1 s\n stats.period 2 s\n}\n");
        assert!(d.message.contains("set twice") && d.hint.unwrap().contains("line 3"));
        let d = one_error("main\n{\n}\nmain\n{\n}\n");
        assert!(d.message.contains("second `main`"));
        let d = one_error("timer_thread[1]\n{\n}\ntimer_thread[1]\n{\n}\n");
        assert!(d.message.contains("index 1 is used twice"));
        // Same index in different kinds is fine.
        ok("timer_thread[0]\n{\n}\nprogram[0]\n{\n cmdline true\n}\n");
    }

    #[test]
    fn every_problem_is_reported_at_once_in_file_order() {
        let d = errors(
            "main\n{\n  stats.period 5\n  bogus 1\n}\ntimer_thread[0]\n{\n  timer.period x\n}\nprogram[0]\n{\n}\n",
        );
        let lines: Vec<usize> = d.iter().map(|d| d.pos.line).collect();
        assert_eq!(lines, vec![3, 4, 8, 10]);
    }

    #[test]
    fn a_key_of_another_stanza_says_so() {
        let d = one_error("timer_thread[0]\n{\n  cmdline ls\n}\n");
        assert_eq!(
            d.hint.as_deref(),
            Some("`cmdline` is a key of program[N], not of timer_thread[N]")
        );
    }

    #[test]
    fn rendering_is_file_line_col() {
        let d = one_error("main\n{\n  bogus 1\n}\n");
        let text = d.render("x.cfg");
        // The hint lists the keys, cut (with the count left out) when long.
        assert!(
            text.starts_with("x.cfg:3:3: error: unknown key `bogus` in main\n  hint: keys of main are: dbg_level, cpu_affinity, sched.policy, sched.priority, stats.period,"),
            "{text}"
        );
        assert!(text.ends_with(" more characters)"), "{text}");
    }

    #[test]
    fn columns_count_characters_not_bytes() {
        let d = one_error("main # é\n{\n  # é\n  stats.period 1 é\n}\n");
        assert_eq!(d.pos, Pos { line: 4, col: 18 });
    }

    #[test]
    fn invalid_utf8_is_refused_at_its_line_and_column() {
        let bytes = b"main\n{\n  dbg_level 1 \xc3\xa9 \xff x\n}\n";
        let d = crate::config::decode(bytes).unwrap_err();
        assert_eq!((d.pos.line, d.pos.col), (3, 17), "{d:?}");
        assert!(d.message.contains("0xff"));
        let d = crate::config::decode(&vec![b'#'; MAX_FILE_BYTES + 1]).unwrap_err();
        assert!(d.message.contains("bytes"), "{d:?}");
    }

    #[test]
    fn counts_are_bounded_and_refused_where_they_are_exceeded() {
        let mut text = String::new();
        for i in 0..=MAX_TIMERS {
            text.push_str(&format!("timer_thread[{i}]\n{{\n}}\n"));
        }
        let d = errors(&text);
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].pos.line, 3 * MAX_TIMERS + 1);
        assert!(d[0].message.contains("more than 1024"), "{d:?}");
        // Properties of one stanza.
        let mut text = String::from("main\n{\n");
        for _ in 0..MAX_PROPERTIES + 10 {
            text.push_str("  irq.affinity 0\n");
        }
        text.push_str("}\n");
        let d = errors(&text);
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].pos.line, MAX_PROPERTIES + 3);
        // A flood of problems is reported in part, and counted.
        let d = errors(&"nonsense\n".repeat(10_000));
        assert_eq!(d.len(), 101);
        assert!(d[100].message.contains("more problems"), "{:?}", d[100]);
        // Stanzas past the limit are not read at all.
        let d = errors(&"main\n{\n}\n".repeat(5000));
        assert!(
            d.iter()
                .any(|d| d.message.contains("more than 1409 stanzas")),
            "{d:?}"
        );
        // Patterns are bounded.
        let long = "*a".repeat(200);
        let d = errors(&format!("main\n{{\n threads.sched {long} FIFO 2\n}}\n"));
        assert!(d[0].message.contains("longer than 256"), "{d:?}");
    }

    #[test]
    fn every_refusal_carries_a_hint_saying_what_is_accepted() {
        let cases: &[(&str, &str, Pos)] = &[
            (
                "main {\n lifetime.duration 99999999999999 s\n}\n",
                "584 years",
                Pos { line: 2, col: 20 },
            ),
            (
                "main {\n on_spike.every 0 ms\n}\n",
                "`on_spike.every 1ms` or longer",
                Pos { line: 2, col: 17 },
            ),
            (
                "task_latency[0] {\n task.pid 0\n}\n",
                "from 1",
                Pos { line: 2, col: 11 },
            ),
            (
                "timer_thread[99999999999999999999] {\n}\n",
                // The largest index is the target's (32-bit boards: 2^32-1).
                &format!("from 0 to {}", usize::MAX),
                Pos { line: 1, col: 1 },
            ),
            (
                "timer_thread[0] {\n stats.filename a\0b\n}\n",
                "remove the NUL",
                Pos { line: 2, col: 18 },
            ),
            (
                "timer_thread[0] {\n lifetime.loops 0\n}\n",
                "from 1 to",
                Pos { line: 2, col: 17 },
            ),
            (
                "main {\n dbg_level x\n}\n",
                "from 0 to 9",
                Pos { line: 2, col: 12 },
            ),
            (
                "timer_thread[0] {\n timer.period 2 h\n}\n",
                "1 us to 1 h",
                Pos { line: 2, col: 15 },
            ),
            (
                "timer_thread[0] {\n timer.period 1.0000000000000000001 s\n}\n",
                "18 decimals",
                Pos { line: 2, col: 15 },
            ),
            ("}\n", "remove this `}`", Pos { line: 1, col: 1 }),
        ];
        for (text, hint, pos) in cases {
            let d = one_error(text);
            assert_eq!(d.pos, *pos, "{text:?}: {d:?}");
            let h = d.hint.as_deref().unwrap_or_default();
            assert!(h.contains(hint), "{text:?}: {d:?}");
        }
    }

    #[test]
    fn a_refused_policy_leaves_the_priority_unjudged() {
        let d = errors("timer_thread[0] {\n sched.policy bogus\n sched.priority 99\n}\n");
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].message.contains("unknown scheduling policy"), "{d:?}");
    }

    #[test]
    fn never_panics_on_arbitrary_input() {
        // Deterministic pseudo-random byte soup built from format fragments.
        let pieces = [
            "main",
            "{",
            "}",
            "timer_thread[",
            "]",
            "program[0]",
            " ",
            "\n",
            "#",
            "\"",
            "'",
            "\\",
            "cmdline",
            "sched.policy",
            "FIFO",
            "99",
            "1.5",
            "ms",
            "é",
            "-",
            ",",
            "[",
            "\t",
            "memlock",
            "\0",
            "99999999999999999999",
            " 0 ",
            "lifetime.duration",
            "task_latency[0]",
            "task.pid",
            "on_spike.every",
        ];
        let mut x: u64 = 0x9e3779b97f4a7c15;
        for _ in 0..3000 {
            let mut text = String::new();
            for _ in 0..(x % 40) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                text.push_str(pieces[(x % pieces.len() as u64) as usize]);
            }
            if let Err(diags) = parse(&text) {
                let lines = text.lines().count().max(1);
                for d in diags {
                    assert!(d.pos.line >= 1 && d.pos.line <= lines, "{text:?} {d:?}");
                    assert!(d.pos.col >= 1);
                    // Every refusal says what would be accepted.
                    assert!(d.hint.is_some(), "no hint: {text:?} {d:?}");
                }
            }
            x = x.wrapping_add(1);
        }
    }

    #[test]
    fn irq_task_stanzas_name_an_irq_and_one_task() {
        let e = ok("main {\n lifetime.duration 5 s\n audit.cpus 1\n}\n\
                    irq_task[1] {\n irq virtio1-req.0\n task.program 0\n}\n\
                    irq_task[0] {\n irq 36\n task.name dd\n}\n");
        assert_eq!(e.main.lifetime_ns, Some(5_000_000_000));
        assert_eq!(e.main.audit_cpus.as_ref().unwrap().value, vec![1]);
        assert_eq!(e.irq_tasks.len(), 2);
        assert_eq!(e.irq_tasks[0].irq.value, IrqSelector::Number(36));
        assert_eq!(e.irq_tasks[0].task.value, TaskSelector::Name("dd".into()));
        assert_eq!(
            e.irq_tasks[1].irq.value,
            IrqSelector::Name("virtio1-req.0".into())
        );
        assert_eq!(e.irq_tasks[1].task.value, TaskSelector::Program(0));
        let d = one_error("irq_task[0] {\n irq 36\n}\n");
        assert!(d.message.contains("has no task"), "{d:?}");
        let d = one_error("irq_task[0] {\n task.pid 5\n}\n");
        assert!(d.message.contains("has no `irq`"), "{d:?}");
        let d = one_error("irq_task[0] {\n irq 3\n task.pid 5\n task.name x\n}\n");
        assert_eq!((d.pos.line, d.pos.col), (4, 12), "{d:?}");
        let d = one_error("irq_task[0] {\n irq 3\n task.name a-name-far-too-long\n}\n");
        assert!(d.message.contains("15 characters"), "{d:?}");
        let d = one_error("irq_task[0] {\n irq 3\n task.pid 0\n}\n");
        assert_eq!(d.pos.line, 3, "{d:?}");
        let d = one_error("irq_task[0] {\n irq 3\n task.pid 1\n cmdline x\n}\n");
        assert!(d.message.contains("unknown key `cmdline`"), "{d:?}");
    }

    #[test]
    fn the_second_pass_keys_are_read_and_checked() {
        let e = ok(
            "main {\n trace.threshold 50 us\n trace.stacks all\n trace.buffer_kb 2048\n \
                    trace.event sched:sched_migrate_task\n warmup 2 s\n irq_latency\n \
                    on_spike stop\n on_spike signal 1234 usr1\n on_spike run /bin/sh -c \"logger -t rtlab $RTLAB_SPIKE_LATENCY_NS\"\n \
                    on_spike.every 10 s\n}\n\
                    timer_thread[0] {\n sched.deadline 200us:900us:1ms\n}\n",
        );
        let m = &e.main;
        assert_eq!(m.trace_stacks, crate::config::TraceStacks::All);
        assert_eq!(
            (m.trace_buffer_kb.value, m.warmup_ns),
            (2048, 2_000_000_000)
        );
        assert_eq!(m.trace_events[0].value, "sched/sched_migrate_task");
        assert!(m.irq_latency);
        use crate::config::SpikeAction;
        let actions: Vec<&SpikeAction> = m.on_spike.iter().map(|a| &a.value).collect();
        assert_eq!(
            actions,
            [
                &SpikeAction::Stop,
                &SpikeAction::Signal {
                    pid: 1234,
                    signal: 10
                },
                &SpikeAction::Run {
                    argv: vec![
                        "/bin/sh".into(),
                        "-c".into(),
                        "logger -t rtlab $RTLAB_SPIKE_LATENCY_NS".into()
                    ]
                },
            ]
        );
        assert_eq!(m.on_spike_every_ns, 10_000_000_000);
        let dl = e.timers[0].deadline.as_ref().unwrap().value;
        assert_eq!(
            (dl.runtime_ns, dl.deadline_ns, dl.period_ns),
            (200_000, 900_000, 1_000_000)
        );
        for (bad, says) in [
            ("main {\n trace.stacks some\n}\n", "unknown stack choice"),
            (
                "main {\n trace.event ../../x/enable\n}\n",
                "not a tracepoint name",
            ),
            ("main {\n trace.buffer_kb 1\n}\n", "trace.buffer_kb"),
            ("main {\n on_spike signal 1 TERM\n}\n", "above 1"),
            ("main {\n on_spike signal 99 NOPE\n}\n", "needs a signal"),
            ("main {\n on_spike run\n}\n", "needs a program"),
            ("main {\n on_spike run sh -c \"x\n}\n", "unbalanced quote"),
            ("main {\n on_spike stop now\n}\n", "unexpected `now`"),
            (
                "timer_thread[0] {\n sched.deadline 2ms:1ms\n}\n",
                "runtime <= deadline",
            ),
            (
                "timer_thread[0] {\n sched.deadline 1ms\n}\n",
                "not a reservation",
            ),
            (
                "timer_thread[0] {\n sched.priority 3\n sched.deadline 1ms:2ms\n}\n",
                "both set",
            ),
        ] {
            let d = one_error(bad);
            assert!(d.message.contains(says), "{bad:?}: {d:?}");
            assert_eq!(d.pos.line, 2, "{bad:?}: {d:?}");
        }
    }
}
