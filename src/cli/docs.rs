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

/// A man page of `cmd` in roff.
fn page(cmd: clap::Command) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    clap_mangen::Man::new(cmd)
        .source(format!("rtlab {}", env!("CARGO_PKG_VERSION")))
        .manual("rtlab manual")
        .render(&mut bytes)?;
    Ok(bytes)
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
/// the rest is filled text. Markup that roff cannot show is left as
/// written, which reads well in a terminal.
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
            out.push_str(&format!(".nf\n{}\n.fi\n", roff_text(line)));
        } else if line.trim().is_empty() {
            out.push_str(".PP\n");
        } else {
            out.push_str(&roff_text(line));
            out.push('\n');
        }
    }
    out
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
