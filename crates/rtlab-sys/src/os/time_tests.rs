use super::*;

#[test]
fn deadlines_past_2038_split_exactly_and_never_wrap_in_32_bits() {
    let last_32 = i32::MAX as u64 * 1_000_000_000 + 999_999_999;
    assert_eq!(split_ns(last_32), (i32::MAX as i64, 999_999_999));
    assert_eq!(split_ns_32(last_32), Ok((i32::MAX, 999_999_999)));
    // One second later (2038-01-19T03:14:08Z on CLOCK_REALTIME): 64-bit
    // exact, 32-bit refused rather than wrapped to 1901.
    let next = last_32 + 1;
    assert_eq!(split_ns(next), (i32::MAX as i64 + 1, 0));
    assert_eq!(split_ns_32(next), Err(libc::EOVERFLOW));
    // The largest deadline a u64 holds (year 2554).
    assert_eq!(split_ns(u64::MAX).0, 18_446_744_073);
}

#[test]
fn an_absolute_sleep_to_a_past_deadline_returns_at_once() {
    // Through whichever syscall this target uses (time64 on 32-bit).
    let now = monotonic_ns();
    assert_eq!(sleep_until_ns(now.saturating_sub(1_000_000)), 0);
    assert!(monotonic_ns() >= now);
}
