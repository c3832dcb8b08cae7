//! `rtlab man --dir DIR` and `rtlab completions SHELL`: the man pages
//! (`rtlab.1`, one `rtlab-SUBCOMMAND.1` per subcommand, the experiment
//! format as `rtlab.conf.5`) and the shell completions, all generated from
//! the one command-line definition (`clap_mangen`, `clap_complete`) and
//! from docs/config-format.md, so that they cannot drift from the binary.

use super::{Outcome, Refusal};
use clap::Args;
use std::path::{Path, PathBuf};

/// `rtlab man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// The man directory to write into (`man1/`, `man5/` made in it), e.g.
    /// /usr/local/share/man.
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,
}

/// `rtlab completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// bash, zsh, fish, elvish or powershell.
    pub shell: clap_complete::Shell,
}

/// The experiment-file format, as documented.
const CONFIG_FORMAT: &str = include_str!("../../docs/config-format.md");

/// Every command rtlab documents: rtlab itself, its visible subcommands,
/// and cyclictest's and hwlatdetect's front ends with their own options.
fn commands() -> Vec<(String, clap::Command)> {
    let top = super::whole_command().name("rtlab");
    let mut out = vec![("rtlab".to_string(), top.clone())];
    for sub in top.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("rtlab-{}", sub.get_name());
        let cmd = match sub.get_name() {
            "cyclictest" => super::cyclictest::command(),
            "hwlat" => super::hwlat::command(),
            _ => sub.clone(),
        };
        out.push((name.clone(), cmd.name(name)));
    }
    out
}

/// A man page of `cmd` in roff: clap_mangen's, with the synopsis written
/// as man pages write it (`[--threshold DURATION]`, where clap_mangen
/// names the option alone) and the help's markdown code spans in bold.
fn page(mut cmd: clap::Command) -> std::io::Result<Vec<u8>> {
    cmd.build();
    let mut bytes = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .source(format!("rtlab {}", env!("CARGO_PKG_VERSION")))
        .manual("rtlab manual")
        .render(&mut bytes)?;
    let text = String::from_utf8_lossy(&bytes);
    let mut out = String::with_capacity(text.len());
    let mut section = "";
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if let Some(name) = line.strip_prefix(".SH ") {
            section = name;
        }
        if line == ".SH SYNOPSIS" {
            out.push_str(&synopsis(&cmd));
            // clap_mangen's line (or lines) up to the next section, dropped.
            for next in lines.by_ref() {
                if next.starts_with(".SH ") {
                    section = next.trim_start_matches(".SH ");
                    out.push_str(next);
                    out.push('\n');
                    break;
                }
            }
            continue;
        }
        out.push_str(&code_spans(line, section != "NAME"));
        out.push('\n');
    }
    Ok(out.into_bytes())
}

/// Escapes a word for roff text: `\` and `-` (a hyphen, not a minus).
fn roff_word(word: &str) -> String {
    word.replace('\\', "\\e").replace('-', "\\-")
}

/// The SYNOPSIS section of `cmd` (built): the optional options, the
/// required ones, the operands, then the subcommand.
fn synopsis(cmd: &clap::Command) -> String {
    // The page is rtlab-fix(1); the command typed is `rtlab fix`.
    let typed = cmd.get_name().replacen("rtlab-", "rtlab ", 1);
    let mut line = format!("\\fB{}\\fR", roff_word(&typed));
    let mut options: Vec<&clap::Arg> = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set() && !a.is_positional())
        .collect();
    options.sort_by_key(|a| a.is_required_set());
    for a in options {
        line.push(' ');
        line.push_str(&synopsis_option(a));
    }
    for a in cmd.get_positionals().filter(|a| !a.is_hide_set()) {
        let value = format!("\\fI{}\\fR", roff_word(&value_name(a)));
        let many = a.get_num_args().is_some_and(|r| r.max_values() > 1);
        let dots = if many { "..." } else { "" };
        if a.is_required_set() {
            line.push_str(&format!(" {value}{dots}"));
        } else {
            line.push_str(&format!(" [{value}]{dots}"));
        }
    }
    if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
        line.push_str(" \\fICOMMAND\\fR [\\fIARGS\\fR]");
    }
    format!(".SH SYNOPSIS\n{line}\n")
}

/// `[-p|--priority PRIO]`, `--threshold DURATION`, `[-a|--affinity [CPUSET]]`,
/// `[--label NAME]...`.
fn synopsis_option(a: &clap::Arg) -> String {
    let flag = match (a.get_short(), a.get_long()) {
        (Some(s), Some(l)) => format!("\\fB\\-{s}\\fR|\\fB\\-\\-{}\\fR", roff_word(l)),
        (Some(s), None) => format!("\\fB\\-{}\\fR", roff_word(&s.to_string())),
        (None, Some(l)) => format!("\\fB\\-\\-{}\\fR", roff_word(l)),
        (None, None) => return String::new(),
    };
    let value = match a.get_num_args() {
        Some(r) if r.takes_values() => {
            let name = format!("\\fI{}\\fR", roff_word(&value_name(a)));
            if r.min_values() == 0 {
                format!(" [{name}]")
            } else {
                format!(" {name}")
            }
        }
        _ => String::new(),
    };
    let repeated = matches!(
        a.get_action(),
        clap::ArgAction::Append | clap::ArgAction::Count
    );
    let dots = if repeated { "..." } else { "" };
    if a.is_required_set() {
        format!("{flag}{value}{dots}")
    } else {
        format!("[{flag}{value}]{dots}")
    }
}

/// The name of an argument's value: its value names, else its id in
/// capitals.
fn value_name(a: &clap::Arg) -> String {
    match a.get_value_names() {
        Some(names) if !names.is_empty() => names
            .iter()
            .map(|n| n.as_str())
            .collect::<Vec<_>>()
            .join(" "),
        _ => a.get_id().as_str().to_uppercase(),
    }
}

/// A roff text line with its markdown code spans (`` `rtlab restore` ``)
/// in bold, or without their backticks where bold does not belong (the
/// NAME line, which `apropos` reads); requests and a backtick without its
/// pair are left as they are.
fn code_spans(line: &str, bold: bool) -> String {
    if line.starts_with(['.', '\'']) || !line.contains('`') {
        return line.to_string();
    }
    let mut out = String::with_capacity(line.len() + 16);
    let mut rest = line;
    while let Some(open) = rest.find('`') {
        let Some(len) = rest[open + 1..].find('`') else {
            break;
        };
        let code = &rest[open + 1..open + 1 + len];
        out.push_str(&rest[..open]);
        if bold && !code.is_empty() {
            out.push_str(&format!("\\fB{code}\\fR"));
        } else {
            out.push_str(code);
        }
        rest = &rest[open + 2 + len..];
    }
    out.push_str(rest);
    out
}

/// `rtlab man --dir DIR`.
pub fn man_main(a: &ManArgs) -> Outcome {
    let mut written = Vec::new();
    for (name, cmd) in commands() {
        let bytes = page(cmd)
            .map_err(|e| Refusal::failed(format!("rtlab man: cannot render {name}: {e}")))?;
        written.push((a.dir.join("man1").join(format!("{name}.1")), bytes));
    }
    let conf = markdown_to_roff(CONFIG_FORMAT, "RTLAB.CONF", "5");
    written.push((a.dir.join("man5").join("rtlab.conf.5"), conf.into_bytes()));
    for (path, bytes) in &written {
        write(path, bytes)?;
    }
    outln!(
        "rtlab man: {} pages in {} (man1/rtlab*.1, man5/rtlab.conf.5); `man rtlab` once {} is in MANPATH",
        written.len(),
        a.dir.display(),
        a.dir.display()
    );
    Ok(0)
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), Refusal> {
    let dir = path.parent().unwrap_or(Path::new("."));
    if let Err(e) = crate::sys::outfile::create_dirs(dir) {
        return Err(Refusal::output("rtlab man: ", &e));
    }
    crate::sys::outfile::write_whole(path, bytes)
        .map_err(|e| Refusal::output("rtlab man: cannot write ", &e).status(crate::exit::FAILED))
}

/// `rtlab completions SHELL`: the script on stdout.
pub fn completions_main(a: &CompletionsArgs) -> Outcome {
    let mut cmd = super::whole_command();
    let mut bytes = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "rtlab", &mut bytes);
    out!("{}", String::from_utf8_lossy(&bytes));
    Ok(0)
}

/// A roff text line: a leading `.` or `'` would be a request, and `\`
/// an escape.
fn roff_text(line: &str) -> String {
    let escaped = line.replace('\\', "\\e");
    if escaped.starts_with(['.', '\'']) {
        format!("\\&{escaped}")
    } else {
        escaped
    }
}

/// The markdown of docs/config-format.md as a man page: headings become
/// sections, code blocks and tables stay as they are written (no fill),
/// the rest is filled text, its code spans in bold. Other markup is left
/// as written, which reads well in a terminal.
pub fn markdown_to_roff(md: &str, title: &str, section: &str) -> String {
    let mut out = format!(
        ".TH {title} {section} \"\" \"rtlab {}\" \"rtlab manual\"\n",
        env!("CARGO_PKG_VERSION")
    );
    let mut literal = false;
    for line in md.lines() {
        if line.starts_with("```") {
            out.push_str(if literal {
                ".fi\n.RE\n"
            } else {
                ".RS 4\n.nf\n"
            });
            literal = !literal;
            continue;
        }
        if literal {
            out.push_str(&roff_text(line));
            out.push('\n');
            continue;
        }
        if let Some(h) = line.strip_prefix("# ") {
            out.push_str(&format!(".SH NAME\nrtlab.conf \\- {}\n", roff_text(h)));
        } else if let Some(h) = line.strip_prefix("## ") {
            out.push_str(&format!(".SH \"{}\"\n", h.to_uppercase().replace('"', "'")));
        } else if let Some(h) = line.strip_prefix("### ") {
            out.push_str(&format!(".SS \"{}\"\n", h.replace('"', "'")));
        } else if line.starts_with('|') {
            // A table's rule (`|---|---|`) says nothing in a terminal.
            if line.chars().all(|c| matches!(c, '|' | '-' | ':' | ' ')) {
                continue;
            }
            out.push_str(&format!(".nf\n{}\n.fi\n", inline_markup(&roff_text(line))));
        } else if line.trim().is_empty() {
            out.push_str(".PP\n");
        } else {
            out.push_str(&inline_markup(&roff_text(line)));
            out.push('\n');
        }
    }
    out
}

/// A filled markdown line's inline markup as roff: links as their text,
/// `**strong**` and code spans in bold.
fn inline_markup(line: &str) -> String {
    let mut text = String::with_capacity(line.len());
    let mut rest = line;
    // [text](target) -> text
    while let Some(open) = rest.find('[') {
        // The first `]` after it must open the target: `timer_thread[0]`
        // is text.
        let mid = rest[open..].find(']').map(|m| open + m);
        let target = mid.filter(|&m| rest[m + 1..].starts_with('('));
        let close = target.and_then(|m| rest[m..].find(')').map(|c| m + c));
        match (target, close) {
            (Some(mid), Some(close)) => {
                text.push_str(&rest[..open]);
                text.push_str(&rest[open + 1..mid]);
                rest = &rest[close + 1..];
            }
            _ => {
                text.push_str(&rest[..=open]);
                rest = &rest[open + 1..];
            }
        }
    }
    text.push_str(rest);
    let mut strong = String::with_capacity(text.len());
    let mut parts = text.split("**");
    if let Some(first) = parts.next() {
        strong.push_str(first);
    }
    let rest: Vec<&str> = parts.collect();
    // Pairs only: an odd `**` is left as written.
    let pairs = rest.len() / 2 * 2;
    for (i, part) in rest.iter().enumerate() {
        match (i < pairs, i % 2) {
            (true, 0) => strong.push_str(&format!("\\fB{part}")),
            (true, _) => strong.push_str(&format!("\\fR{part}")),
            (false, _) => strong.push_str(&format!("**{part}")),
        }
    }
    code_spans(&strong, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_visible_subcommand_has_a_page() {
        let names: Vec<String> = commands().into_iter().map(|c| c.0).collect();
        for sub in [
            "rtlab",
            "rtlab-run",
            "rtlab-check",
            "rtlab-cyclictest",
            "rtlab-man",
        ] {
            assert!(names.iter().any(|n| n == sub), "{sub}: {names:?}");
        }
        assert!(!names.iter().any(|n| n.contains("guard")), "{names:?}");
        for (name, cmd) in commands() {
            let roff = String::from_utf8(page(cmd).unwrap()).unwrap();
            assert!(roff.starts_with(".ie") || roff.contains(".TH"), "{name}");
        }
        // The front end's page lists cyclictest's options.
        let ct = commands()
            .into_iter()
            .find(|c| c.0 == "rtlab-cyclictest")
            .unwrap();
        let roff = String::from_utf8(page(ct.1).unwrap()).unwrap();
        assert!(
            roff.contains("histofall") && roff.contains("mlockall"),
            "{roff}"
        );
        let hw = commands()
            .into_iter()
            .find(|c| c.0 == "rtlab-hwlat")
            .unwrap();
        let roff = String::from_utf8(page(hw.1).unwrap()).unwrap();
        assert!(
            roff.contains("hardlimit") && roff.contains("cpu\\-list"),
            "{roff}"
        );
    }

    fn page_of(name: &str) -> String {
        let cmd = commands().into_iter().find(|c| c.0 == name).unwrap().1;
        String::from_utf8(page(cmd).unwrap()).unwrap()
    }

    #[test]
    fn the_help_markup_is_roff_and_the_synopsis_names_values() {
        let fix = page_of("rtlab-fix");
        let name = fix
            .split(".SH NAME\n")
            .nth(1)
            .unwrap()
            .lines()
            .next()
            .unwrap();
        assert!(name.contains("rtlab restore") && !name.contains('`') && !name.contains("\\fB"));
        assert!(fix.contains("\\fBrtlab restore\\fR"), "{fix}");
        assert!(fix.contains("\\fBtrace.threshold\\fR"), "{fix}");
        assert!(!fix.contains('`'), "{fix}");
        let synopsis = fix
            .split(".SH SYNOPSIS\n")
            .nth(1)
            .unwrap()
            .lines()
            .next()
            .unwrap();
        assert!(synopsis.starts_with("\\fBrtlab fix\\fR ["), "{synopsis}");
        assert!(
            synopsis.contains("[\\fB\\-\\-threshold\\fR \\fIDURATION\\fR]"),
            "{synopsis}"
        );
        assert!(
            synopsis.contains("[\\fB\\-h\\fR|\\fB\\-\\-help\\fR]"),
            "{synopsis}"
        );
        assert!(synopsis.ends_with(" \\fIFILE\\fR"), "{synopsis}");
        assert_eq!(fix.matches(".SH SYNOPSIS").count(), 1);
        assert!(fix.contains(".SH DESCRIPTION"));
        // Optional values, repeated options and the subcommand.
        let ct = page_of("rtlab-cyclictest");
        assert!(
            ct.contains("[\\fB\\-a\\fR|\\fB\\-\\-affinity\\fR [\\fI"),
            "{ct}"
        );
        assert!(page_of("rtlab-lava").contains("\\fIRESULT\\fR..."));
        assert!(page_of("rtlab").contains("\\fICOMMAND\\fR [\\fIARGS\\fR]"));
        // A lone backtick is left as it is; a request line is never touched.
        assert_eq!(code_spans("a `b` c ` d", true), "a \\fBb\\fR c ` d");
        assert_eq!(code_spans(".TP `x`", true), ".TP `x`");
        assert_eq!(code_spans("`x` and `y`", false), "x and y");
        assert_eq!(
            inline_markup("timer_thread[0]: see [Cpusets](#cpusets), **only** `x` and ** left"),
            "timer_thread[0]: see Cpusets, \\fBonly\\fR \\fBx\\fR and ** left"
        );
        let conf = markdown_to_roff(CONFIG_FORMAT, "RTLAB.CONF", "5");
        let text: Vec<&str> = conf.lines().filter(|l| !l.starts_with('.')).collect();
        for l in &text {
            assert!(!l.contains("](#"), "{l}");
            assert!(!l.starts_with("|---"), "{l}");
        }
    }

    #[test]
    fn the_format_page_keeps_roff_requests_out_of_text() {
        let roff = markdown_to_roff("# T\n.x\n'y\n\\z\n```\n.code\n```\n| a | b |\n", "T", "5");
        assert!(roff.contains("\n\\&.x\n"), "{roff}");
        assert!(roff.contains("\n\\&'y\n"), "{roff}");
        assert!(roff.contains("\n\\ez\n"), "{roff}");
        assert!(roff.contains(".nf\n\\&.code\n.fi"), "{roff}");
        let real = markdown_to_roff(CONFIG_FORMAT, "RTLAB.CONF", "5");
        assert!(real.contains(".SH \"SHAPE\""), "{}", &real[..400]);
        assert!(real.lines().filter(|l| l.starts_with('.')).all(|l| {
            [".TH", ".SH", ".SS", ".PP", ".nf", ".fi", ".RS", ".RE"]
                .iter()
                .any(|r| l.starts_with(r))
        }));
    }
}
