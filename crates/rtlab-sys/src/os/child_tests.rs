use super::*;

#[test]
fn the_announced_line_is_the_decimal_pid() {
    for pid in [1, 9, 10, 4242, i32::MAX] {
        let mut buf = [0u8; 32];
        let n = pgid_line(&mut buf, pid);
        assert_eq!(&buf[..n], format!("pgid {pid}\n").as_bytes());
    }
}

#[test]
fn a_child_runs_though_nobody_reads_its_announcement() {
    let (read, write) = std::io::pipe().unwrap();
    drop(read);
    use std::os::fd::AsRawFd;
    let mut cmd = Command::new("true");
    cmd.process_group(0);
    prepare_child(
        &mut cmd,
        ChildSetup {
            announce_to: Some(write.as_raw_fd()),
            ..ChildSetup::default()
        },
    )
    .unwrap();
    // Not killed by SIGPIPE: it runs its program, which succeeds.
    assert!(cmd.status().unwrap().success());
}

#[test]
fn a_child_announces_its_group_before_it_runs() {
    let (mut read, write) = std::io::pipe().unwrap();
    use std::os::fd::AsRawFd;
    let mut cmd = Command::new("true");
    cmd.process_group(0);
    prepare_child(
        &mut cmd,
        ChildSetup {
            die_with_parent: true,
            announce_to: Some(write.as_raw_fd()),
            ..ChildSetup::default()
        },
    )
    .unwrap();
    let mut child = cmd.spawn().unwrap();
    drop(cmd);
    drop(write);
    let pid = child.id();
    child.wait().unwrap();
    let mut said = String::new();
    use std::io::Read;
    read.read_to_string(&mut said).unwrap();
    assert_eq!(said, format!("pgid {pid}\n"));
}
