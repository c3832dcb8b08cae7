//! The habits around the binary: man pages and shell completions after
//! the install step the README gives, through the real `man` and `bash`
//! where the machine has them.

use crate::fixtures::{self, text};

#[test]
fn man_pages_render_through_man_after_the_install_step() {
    let dir = tempfile::tempdir().unwrap();
    let o = fixtures::rtlab_in(
        dir.path(),
        &["man", "--dir", dir.path().join("man").to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    for page in [
        "man1/rtlab.1",
        "man1/rtlab-run.1",
        "man1/rtlab-cyclictest.1",
        "man5/rtlab.conf.5",
    ] {
        assert!(dir.path().join("man").join(page).is_file(), "{page}");
    }
    if !fixtures::has_command("man") {
        fixtures::path_taken(
            "man_pages_render_through_man_after_the_install_step",
            "no `man` here: checked the pages are written",
        );
        return;
    }
    for (section, page, expect) in [
        ("1", "rtlab", "cyclictest"),
        ("1", "rtlab-cyclictest", "--histofall"),
        ("5", "rtlab.conf", "timer_thread"),
    ] {
        let o = std::process::Command::new("man")
            .args(["-P", "cat", section, page])
            .env("MANPATH", dir.path().join("man"))
            .env("MANWIDTH", "100")
            .output()
            .unwrap();
        let shown = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success() && shown.contains(expect),
            "man {section} {page}: {}",
            text(&o)
        );
    }
    // Read as a user reads it: no markdown left, bold where the help had
    // code; the synopsis names each option's value.
    for page in ["rtlab-fix", "rtlab-lava", "rtlab-monitor", "rtlab-run"] {
        let shown = |pager: &str| {
            let o = std::process::Command::new("man")
                .args(["-P", pager, "1", page])
                .env("MANPATH", dir.path().join("man"))
                .env("MANWIDTH", "2000")
                .output()
                .unwrap();
            assert!(o.status.success(), "man {page}: {}", text(&o));
            String::from_utf8_lossy(&o.stdout).into_owned()
        };
        let plain = shown("cat");
        assert!(!plain.contains('`'), "man {page} shows markdown: {plain}");
        let synopsis = plain
            .split("SYNOPSIS")
            .nth(1)
            .and_then(|s| s.split("DESCRIPTION").next())
            .unwrap_or_default();
        if page == "rtlab-fix" {
            assert!(
                synopsis.contains("[--threshold DURATION]")
                    && synopsis.contains("[--rounds ROUNDS]")
                    && synopsis.contains(" FILE"),
                "{synopsis}"
            );
        }
        if page == "rtlab-lava" {
            assert!(synopsis.contains("[--label NAME]..."), "{synopsis}");
            assert!(synopsis.contains("RESULT..."), "{synopsis}");
        }
    }
}

#[test]
fn bash_completes_subcommands_and_options() {
    if !fixtures::has_command("bash") {
        fixtures::path_taken("bash_completes_subcommands_and_options", "no bash here");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let o = fixtures::rtlab_in(dir.path(), &["completions", "bash"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let script = dir.path().join("rtlab.bash");
    std::fs::write(&script, &o.stdout).unwrap();
    let complete = |line: &str| -> String {
        let words: Vec<&str> = line.split(' ').collect();
        let program = format!(
            "source '{}'; COMP_WORDS=({}); COMP_CWORD={}; COMP_LINE='{line}'; COMP_POINT={}; \
             _rtlab rtlab '{}' '{}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            script.display(),
            words
                .iter()
                .map(|w| format!("'{w}'"))
                .collect::<Vec<_>>()
                .join(" "),
            words.len() - 1,
            line.len(),
            words[words.len() - 1],
            words[words.len() - 2],
        );
        let o = std::process::Command::new("bash")
            .arg("-c")
            .arg(program)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    assert_eq!(complete("rtlab cyc").trim(), "cyclictest");
    assert!(complete("rtlab run --js").contains("--json"));
    assert!(complete("rtlab completions ").contains("zsh"));
}
