//! Helpers shared by the integration tests.

use std::process::Output;
use std::time::{Duration, Instant};

/// A command's status, stdout and stderr, for assertion messages.
pub fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Polls `cond` until it holds or `timeout` passes; its last answer.
#[allow(dead_code)] // not every test file polls
pub fn wait_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < timeout {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    cond()
}
