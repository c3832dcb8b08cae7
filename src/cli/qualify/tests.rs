use super::*;

fn contract(pairs: &[(&str, &str)]) -> Contract {
    Contract::read(|k| {
        pairs
            .iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| v.to_string())
    })
    .unwrap()
}

fn measured(status: i32, maxima: &[u64]) -> Measured {
    Measured {
        status,
        maxima_us: maxima.to_vec(),
        result: None,
    }
}

#[test]
fn the_limit_is_held_as_cnf_tests_holds_it() {
    // cyclictest and oslat: every maximum below the limit.
    let m = measured(0, &[12, 29]);
    assert_eq!(judge(Tool::Cyclictest, Some(30), &m), Verdict::Pass);
    assert_eq!(judge(Tool::Cyclictest, Some(29), &m), Verdict::Fail);
    assert_eq!(judge(Tool::Oslat, None, &m), Verdict::Unchecked);
    assert_eq!(
        judge(Tool::Oslat, Some(30), &measured(1, &[3])),
        Verdict::Failed(1)
    );
    // hwlatdetect judges itself (exit 1: over its hard limit).
    assert_eq!(
        judge(Tool::Hwlatdetect, Some(20), &measured(1, &[25])),
        Verdict::Fail
    );
    assert_eq!(
        judge(Tool::Hwlatdetect, None, &measured(1, &[1500])),
        Verdict::Failed(1)
    );
    // Its own `>`: a maximum equal to the limit passes, as hwlatdetect
    // exits 0 then (cnf-tests reads only its status).
    assert_eq!(
        judge(Tool::Hwlatdetect, Some(20), &measured(0, &[20])),
        Verdict::Pass
    );
    assert_eq!(
        judge(Tool::Hwlatdetect, Some(0), &measured(0, &[0])),
        Verdict::Pass
    );
}

#[test]
fn each_tool_gets_its_command_line() {
    let c = contract(&[
        ("LATENCY_TEST_RUN", "true"),
        ("LATENCY_TEST_RUNTIME", "10"),
        ("MAXIMUM_LATENCY", "20"),
    ]);
    let w = |t| words(&command_line(t, &c, &[2, 3, 5]).unwrap());
    assert_eq!(
        w(Tool::Cyclictest),
        "-q -m -p 95 -i 1000 -h 30 -D 10 -t 2 -a 3,5 --mainaffinity 2"
    );
    assert_eq!(
        w(Tool::Oslat),
        "-D 10 --rtprio 1 --cpu-list 3,5 --cpu-main-thread 2"
    );
    assert_eq!(
        w(Tool::Hwlatdetect),
        "--duration 10s --hardlimit 20 --cpu-list 2-3,5 --threshold 20"
    );
    let one = command_line(Tool::Cyclictest, &c, &[4]).unwrap();
    assert_eq!(
        words(&one),
        "-q -m -p 95 -i 1000 -h 30 -D 10 -t 1 -a 4 --mainaffinity 4"
    );
    let e = command_line(Tool::Oslat, &c, &[4]).unwrap_err();
    assert!(e.contains("2 CPUs"), "{e}");
    let none = contract(&[("LATENCY_TEST_RUN", "true")]);
    let hw = words(&command_line(Tool::Hwlatdetect, &none, &[0]).unwrap());
    assert_eq!(hw, "--duration 300s --hardlimit 1000 --cpu-list 0");
}

#[test]
fn cpus_and_tests_are_chosen_or_refused() {
    assert_eq!(chosen_cpus(&[1, 2, 3], None).unwrap(), [1, 2, 3]);
    assert_eq!(chosen_cpus(&[1, 2, 3], Some(2)).unwrap(), [1, 2]);
    let e = chosen_cpus(&[1, 2], Some(3)).unwrap_err();
    assert!(e.message.contains("LATENCY_TEST_CPUS is 3") && e.message.contains("1-2"));
    let t = tests_asked(&["oslat".into(), "cyclictest".into(), "oslat".into()]).unwrap();
    assert_eq!(t, [Tool::Cyclictest, Tool::Oslat]);
    assert!(tests_asked(&["stress".into()]).is_err());
    assert_eq!(tests_asked(&[]).unwrap(), Tool::ALL);
}
