use super::*;

#[test]
fn clock_moves_forward_and_sleep_reaches_deadline() {
    let start = monotonic_ns();
    let deadline = start + 2_000_000;
    assert_eq!(sleep_until_ns(deadline), 0);
    assert!(monotonic_ns() >= deadline);
}

#[test]
fn affinity_roundtrip_on_current_thread() {
    let before = get_affinity(0).unwrap();
    std::thread::spawn(move || {
        set_affinity(0, &[before[0]]).unwrap();
        assert_eq!(get_affinity(0).unwrap(), vec![before[0]]);
    })
    .join()
    .unwrap();
}

#[test]
fn nice_roundtrip_on_a_thread() {
    std::thread::spawn(|| {
        set_sched(
            0,
            Sched {
                policy: Policy::Batch,
                priority: 5,
            },
        )
        .unwrap();
        let got = get_sched(0).unwrap();
        assert_eq!(got.policy, Policy::Batch);
        assert_eq!(got.priority, 5);
    })
    .join()
    .unwrap();
}

#[test]
fn out_of_range_cpu_is_an_error_not_a_panic() {
    assert!(set_affinity(0, &[100_000]).is_err());
}
