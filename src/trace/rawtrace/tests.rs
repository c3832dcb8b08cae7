use super::*;
use crate::trace::text;
use std::path::{Path, PathBuf};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/traces/raw-6.18")
}

/// The fixture's `format` files.
fn formats(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for system in std::fs::read_dir(dir.join("formats")).unwrap() {
        let system = system.unwrap().path();
        if system.is_dir() {
            for f in std::fs::read_dir(system).unwrap() {
                out.push(std::fs::read_to_string(f.unwrap().path()).unwrap());
            }
        }
    }
    out
}

fn decoder(dir: &Path) -> Decoder {
    let header = std::fs::read_to_string(dir.join("formats/header_page")).unwrap();
    let symbols = Symbols::parse(&std::fs::read_to_string(dir.join("kallsyms")).unwrap());
    Decoder::new(
        &header,
        &formats(dir),
        symbols,
        &crate::trace::explain::tracepoint_names(),
    )
    .unwrap()
}

/// The keys whose text the binary engine cannot match: hashed pointers
/// (`%p`), and symbolic names the format file spells as kernel constants.
fn comparable(format: &format::EventFormat, key: &str) -> bool {
    !format.keys.iter().any(|(k, r)| {
        k == key
            && match r {
                format::Render::Pointer { .. } => true,
                format::Render::Symbolic { table, .. } => table.is_empty(),
                _ => false,
            }
    })
}

/// Every name the events gave task `pid`.
fn names_of(events: &[crate::trace::event::Event], pid: i32) -> Vec<String> {
    let mut out = Vec::new();
    for e in events {
        for (p, c) in [
            ("prev_pid", "prev_comm"),
            ("next_pid", "next_comm"),
            ("pid", "comm"),
        ] {
            if e.num(p) == Some(i64::from(pid)) {
                out.push(e.field(c).unwrap_or("").to_string());
            }
        }
    }
    out
}

#[test]
fn the_binary_pages_decode_to_the_events_the_kernel_formatted() {
    let dir = fixture();
    let mut d = decoder(&dir);
    let by_name: std::collections::HashMap<String, format::EventFormat> = formats(&dir)
        .iter()
        .filter_map(|f| format::EventFormat::parse(f))
        .map(|f| (f.name.clone(), f))
        .collect();
    let mut compared = 0;
    let mut all = Vec::new();
    for cpu in 0..2 {
        let raw = std::fs::read(dir.join(format!("cpu{cpu}.raw"))).unwrap();
        decoder(&dir).pages(cpu, &raw, &mut all);
    }
    for cpu in 0..2 {
        let text = std::fs::read_to_string(dir.join(format!("cpu{cpu}.txt"))).unwrap();
        let want: Vec<crate::trace::event::Event> = text.lines().filter_map(text::line).collect();
        let raw = std::fs::read(dir.join(format!("cpu{cpu}.raw"))).unwrap();
        let mut got = Vec::new();
        d.pages(cpu, &raw, &mut got);
        assert_eq!(got.len(), want.len(), "CPU {cpu}: every event, none more");
        for (g, w) in got.iter().zip(&want) {
            // The text shows microseconds, rounded.
            assert_eq!((g.ts_ns + 500) / 1000, w.ts_ns / 1000, "{w:?}");
            assert_eq!((g.cpu, g.pid, &g.name), (w.cpu, w.pid, &w.name), "{w:?}");
            // The text names a task as it is called when read (after an
            // exec, the new name); the pages as it was called then.
            if &*w.comm != "<...>" && g.comm != w.comm {
                assert!(
                    names_of(&all, g.pid).contains(&w.comm.to_string()),
                    "{w:?} vs {g:?}"
                );
            }
            if w.name == "tracing_mark_write" {
                assert_eq!(g.fields, w.fields);
                continue;
            }
            let format = &by_name[w.name.as_ref()];
            for (key, _) in &format.keys {
                if comparable(format, key) && w.field(key).is_some() {
                    assert_eq!(g.field(key), w.field(key), "{key} of {w:?} vs {g:?}");
                    compared += 1;
                }
            }
        }
    }
    assert!(compared > 1000, "{compared} fields compared");
    assert_eq!((d.unknown, d.missed), (0, 0));
}

/// The timer slack is `expires - softexpires` of `hrtimer_start`: both
/// readers give both fields as numbers, the same, and the fixture's
/// `sleep` (SCHED_OTHER, the default 50 µs slack) shows it.
#[test]
fn both_readers_give_an_armed_timers_expires_and_softexpires() {
    let dir = fixture();
    let mut slacks = Vec::new();
    for cpu in 0..2 {
        let text = std::fs::read_to_string(dir.join(format!("cpu{cpu}.txt"))).unwrap();
        let want: Vec<crate::trace::event::Event> = text.lines().filter_map(text::line).collect();
        let raw = std::fs::read(dir.join(format!("cpu{cpu}.raw"))).unwrap();
        let mut got = Vec::new();
        decoder(&dir).pages(cpu, &raw, &mut got);
        for (g, w) in got.iter().zip(&want) {
            if w.name != "hrtimer_start" {
                continue;
            }
            let fields = |e: &crate::trace::event::Event| (e.num("expires"), e.num("softexpires"));
            let (hard, soft) = fields(w);
            assert!(hard.is_some() && soft.is_some(), "{w:?}");
            assert_eq!(fields(g), (hard, soft), "{g:?} vs {w:?}");
            if w.field("function") == Some("hrtimer_wakeup") {
                slacks.push(hard.zip(soft).map(|(h, s)| h - s));
            }
        }
    }
    assert!(slacks.contains(&Some(50_000)), "{slacks:?}");
}

#[test]
fn the_formats_plan_the_texts_keys() {
    let dir = fixture();
    let all = formats(&dir);
    let find = |name: &str| {
        all.iter()
            .filter_map(|f| format::EventFormat::parse(f))
            .find(|f| f.name == name)
            .unwrap()
    };
    let keys = |name: &str| -> Vec<String> { find(name).keys.into_iter().map(|k| k.0).collect() };
    assert_eq!(
        keys("sched_switch"),
        [
            "prev_comm",
            "prev_pid",
            "prev_prio",
            "prev_state",
            "next_comm",
            "next_pid",
            "next_prio"
        ]
    );
    assert_eq!(keys("softirq_entry"), ["vec", "action"]);
    assert_eq!(keys("workqueue_execute_start"), ["work", "function"]);
    let switch = find("sched_switch");
    assert!(matches!(
        &switch.keys[3].1,
        format::Render::TaskState { flags, .. } if flags.len() == 8 && flags[7] == (0x80, "I".into())
    ));
}

#[test]
fn a_task_state_and_a_bitmask_read_as_the_kernel_prints_them() {
    let flags: Vec<(u64, String)> = ["S", "D", "T", "t", "X", "Z", "P", "I"]
        .iter()
        .enumerate()
        .map(|(i, n)| (1u64 << i, n.to_string()))
        .collect();
    let state = |s| {
        let mut out = String::new();
        render::task_state(s, &flags, &mut out);
        out
    };
    assert_eq!(state(0), "R");
    assert_eq!(state(0x100), "R+");
    assert_eq!(state(1), "S");
    assert_eq!(state(2 | 0x100), "D+");
    assert_eq!(state(0x80), "I");
    let mut out = String::new();
    render::bitmask(&[3, 0, 0, 0, 0, 0, 0, 0], &mut out);
    assert_eq!(out, "00000000,00000003");
}

#[test]
fn pages_that_lie_end_where_the_lie_starts() {
    let dir = fixture();
    let mut d = decoder(&dir);
    let raw = std::fs::read(dir.join("cpu0.raw")).unwrap();
    let mut all = Vec::new();
    d.pages(0, &raw[..4096], &mut all);
    assert!(!all.is_empty());
    // Every cut and every corrupted byte of a page: no panic, and never
    // more events than the page holds.
    for cut in (0..4096).step_by(7) {
        let mut got = Vec::new();
        d.pages(0, &raw[..cut], &mut got);
        assert!(got.len() <= all.len());
    }
    for at in (0..4096).step_by(3) {
        let mut page = raw[..4096].to_vec();
        page[at] ^= 0xff;
        let mut got = Vec::new();
        d.page(0, &page, &mut got);
    }
}

#[test]
fn a_kernel_stack_record_is_named_frame_by_frame_or_hidden() {
    let format = format::EventFormat::parse(
        "name: kernel_stack\nID: 4\nformat:\n\
         \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
         \tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
         \tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
         \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
         \tfield:int size;\toffset:8;\tsize:4;\tsigned:1;\n\
         \tfield:unsigned long caller[8];\toffset:16;\tsize:64;\tsigned:0;\n\n\
         print fmt: \"\\t=> %ps\\n\\t=> %ps\\n\", (void *)REC->caller[0], (void *)REC->caller[1]\n",
    )
    .unwrap();
    // Three frames (a dynamic array: the record holds `size` of them).
    let mut data = vec![4u8, 0, 0, 0, 0x2a, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0];
    for addr in [
        0xffff_0000_0000_1010u64,
        0xffff_0000_0000_2004,
        0xffff_0000_0000_1000,
    ] {
        data.extend_from_slice(&addr.to_le_bytes());
    }
    let kallsyms = "ffff000000001000 T __schedule\nffff000000002000 t compact_zone\n";
    let mut symbols = Symbols::parse(kallsyms);
    let (_, fields, _) = render::event(&format, &data, &mut symbols).unwrap();
    assert_eq!(fields, "=> __schedule => compact_zone => __schedule");
    // Hidden addresses are never shown raw.
    let mut hidden = Symbols::parse("0000000000000000 T __schedule\n");
    let (_, fields, _) = render::event(&format, &data, &mut hidden).unwrap();
    assert_eq!(fields, "=> ? => ? => ?");
    // A record that claims more frames than it holds stops at its end.
    data[8] = 200;
    let (_, fields, _) = render::event(&format, &data, &mut symbols).unwrap();
    assert_eq!(fields.matches("=>").count(), 3);
    // What the text reader folds the kernel's lines into, the same.
    let e = crate::trace::text::line(&format!(
        "sh-42 [001] ..... 1.000000: kernel_stack: {fields}"
    ))
    .unwrap();
    assert_eq!(
        crate::trace::text::stack_frames(&e),
        ["__schedule", "compact_zone", "__schedule"]
    );
}

/// The `irq_handler_entry` format of this kernel with its print format
/// replaced.
fn crafted(print: &str) -> String {
    format!(
        "name: irq_handler_entry\nID: 225\nformat:\n\
         \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
         \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\
         \tfield:int irq;\toffset:8;\tsize:4;\tsigned:1;\n\
         \tfield:__data_loc char[] name;\toffset:12;\tsize:4;\tsigned:0;\n\n\
         print fmt: {print}\n"
    )
}

#[test]
fn crafted_format_files_never_panic_and_widths_are_bounded() {
    // One record: irq 36, name "ab" (a __data_loc at 16, length 3).
    let mut data = vec![0u8; 20];
    data[..2].copy_from_slice(&225u16.to_le_bytes());
    data[8..12].copy_from_slice(&36i32.to_le_bytes());
    data[12..16].copy_from_slice(&(16u32 | (3 << 16)).to_le_bytes());
    data[16..19].copy_from_slice(b"ab\0");
    let mut symbols = Symbols::default();
    for print in [
        // What the audit's files held: a non-ASCII letter after `%`, and
        // widths of 65535 and 65536.
        "\"irq=%\u{e9}d name=%s\", REC->irq, __get_str(name)",
        "\"irq=%é\", REC->irq",
        "\"irq=%065535d name=%s\", REC->irq, __get_str(name)",
        "\"irq=%065536d name=%s\", REC->irq, __get_str(name)",
        "\"irq=%0999999999999999999999d\", REC->irq",
        "\"irq=%\", REC->irq",
        "\"%\u{1F600}%%%\", REC->irq",
        "\"irq=%d\", ((((((((((((REC->irq))))))))))))))))))))))))))",
        "\"\u{e9}=%s %p\u{e9}\", __get_str(name), REC->irq",
    ] {
        let format = format::EventFormat::parse(&crafted(print)).expect(print);
        if let Some((_, fields, spans)) = render::event(&format, &data, &mut symbols) {
            assert!(fields.len() < 256, "{print}: {} bytes", fields.len());
            assert!(spans.len() <= format.keys.len(), "{print}");
        }
    }
    // A width within bounds is kept (the kernel's own %03d).
    let format =
        format::EventFormat::parse(&crafted("\"irq=%03d name=%s\", REC->irq, __get_str(name)"))
            .unwrap();
    let (_, fields, _) = render::event(&format, &data, &mut symbols).unwrap();
    assert_eq!(fields, "irq=036 name=ab");
}

#[test]
fn the_lost_events_count_saturates() {
    let dir = fixture();
    let mut d = decoder(&dir);
    d.missed = u64::MAX - 1;
    // A page whose header says events were lost, and their count stored.
    let layout =
        page::PageLayout::parse(&std::fs::read_to_string(dir.join("formats/header_page")).unwrap())
            .unwrap();
    let mut p = vec![0u8; 4096];
    let flags: u64 = (1 << 31) | (1 << 30);
    let commit = flags | 8;
    p[layout.commit_offset..layout.commit_offset + layout.commit_size]
        .copy_from_slice(&commit.to_le_bytes()[..layout.commit_size]);
    let end = layout.data_offset + 8;
    p[end..end + layout.commit_size].copy_from_slice(&u64::MAX.to_le_bytes()[..layout.commit_size]);
    let mut out = Vec::new();
    d.page(0, &p, &mut out);
    d.page(0, &p, &mut out);
    assert_eq!(d.missed, u64::MAX);
}

#[test]
fn a_name_with_other_bytes_or_a_line_feed_reads_the_same_from_pages_and_from_text() {
    let dir = fixture();
    let text = std::fs::read_to_string(dir.join("formats/sched/sched_switch.format")).unwrap();
    let format = format::EventFormat::parse(&text).unwrap();
    // A switch from a task of nobody named "\xff\xfe ==> x\n" (PID 77) to
    // PID 4243, as its record holds it.
    let mut data = vec![0u8; 64];
    data[..2].copy_from_slice(&format.id.to_le_bytes());
    data[4..8].copy_from_slice(&77i32.to_le_bytes());
    data[8..8 + 9].copy_from_slice(b"\xff\xfe ==> x\n");
    data[24..28].copy_from_slice(&77i32.to_le_bytes());
    data[28..32].copy_from_slice(&120i32.to_le_bytes());
    data[32..40].copy_from_slice(&1i64.to_le_bytes());
    data[40..40 + 12].copy_from_slice(b"rtlab-timer0");
    data[56..60].copy_from_slice(&4243i32.to_le_bytes());
    data[60..64].copy_from_slice(&9i32.to_le_bytes());
    let (_, fields, spans) = render::event(&format, &data, &mut Symbols::default()).unwrap();
    let pages = crate::trace::event::Event {
        comm: rtlab_core::text::task_name(b"\xff\xfe ==> x\n").into(),
        pid: 77,
        cpu: 1,
        ts_ns: 5_000_000_000,
        name: "sched_switch".into(),
        fields,
        spans,
    };
    assert_eq!(pages.field("prev_comm"), Some("?? ==> x?"));
    assert_eq!(pages.comm.as_ref(), "?? ==> x?");
    assert_eq!(pages.num("next_pid"), Some(4243));
    // The kernel's text of the same switch: the name as it is, its line
    // feed splitting the line.
    let kernel = b"       \xff\xfe ==> x\n-77      [001] d..2. 5.000000: sched_switch: prev_comm=\xff\xfe ==> x\n prev_pid=77 prev_prio=120 prev_state=S ==> next_comm=rtlab-timer0 next_pid=4243 next_prio=9\n";
    let kernel = rtlab_core::text::lossy(kernel);
    let (lines, complete) = crate::trace::fields::event_lines(&kernel);
    assert!(complete);
    assert_eq!(lines.len(), 1, "{lines:?}");
    let text = text::line(lines[0]).unwrap();
    for key in [
        "prev_comm",
        "prev_pid",
        "prev_state",
        "next_comm",
        "next_pid",
        "next_prio",
    ] {
        assert_eq!(text.field(key), pages.field(key), "{key}");
    }
    assert_eq!((text.comm.as_ref(), text.pid), (pages.comm.as_ref(), 77));
}

#[test]
fn records_located_then_decoded_are_the_events_decoded_at_once() {
    let dir = fixture();
    for cpu in ["cpu0.raw", "cpu1.raw"] {
        let pages = std::fs::read(dir.join(cpu)).unwrap();
        let mut at_once = Vec::new();
        decoder(&dir).pages(1, &pages, &mut at_once);
        let mut d = decoder(&dir);
        let (mut later, mut marks, mut switches) = (Vec::new(), 0, (0, 0));
        for page in pages.chunks(4096) {
            let mut located = Vec::new();
            d.locate(1, page, &mut located, |found| match found {
                Found::Mark(e) => marks += usize::from(e.name == "tracing_mark_write"),
                Found::Switch { from_idle, to_idle } => {
                    switches.0 += usize::from(to_idle);
                    switches.1 += usize::from(from_idle);
                }
            });
            later.extend(located.iter().filter_map(|a| d.decode_at(1, page, a)));
        }
        assert!(!at_once.is_empty());
        assert_eq!(later.len(), at_once.len(), "{cpu}");
        for (l, e) in later.iter().zip(&at_once) {
            // Named as the kernel's text names them, by the name the task
            // has last had (an exec renames a task from then on): what was
            // unknown when the event came is named.
            let latest = d.comm(l.pid).map(|c| &**c);
            let named = l.comm == e.comm || Some(&*l.comm) == latest;
            assert!(named, "{cpu}: {} against {}", l.comm, e.comm);
            let (l, e) = (
                (l.ts_ns, l.pid, &l.name, &l.fields),
                (e.ts_ns, e.pid, &e.name, &e.fields),
            );
            assert_eq!(l, e, "{cpu}");
        }
        // What locating tells is what the decoded events say.
        let recent = crate::trace::event::Recent::new(&at_once);
        assert_eq!(switches, recent.idle_switches(), "{cpu}");
        let printed = at_once
            .iter()
            .filter(|e| e.name == "tracing_mark_write")
            .count();
        assert_eq!(marks, printed, "{cpu}");
    }
}
