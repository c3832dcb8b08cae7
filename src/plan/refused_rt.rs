//! Why a real-time policy is refused, in the order the kernel decides it:
//! the capability (or RLIMIT_RTPRIO) first, then a user namespace in which
//! the capability does not count, then RT group scheduling's budget of
//! each cpu cgroup, then a seccomp filter. Each is one sentence that names
//! what is missing and what to add; the sentences are built here from the
//! facts the system layer reads (so they are tested on fake trees).

use crate::sys::Privileges;
use crate::sys::cgroup_rt::{self, RtGroup, RtGroups};
use crate::sys::os::Sched;

/// Where rtlab would have to write as the container's user: the capability.
const CAP_HINT: &str = "podman or docker `--cap-add SYS_NICE` (with `--cap-add IPC_LOCK` for \
     memory locking), Kubernetes `securityContext.capabilities.add: [\"SYS_NICE\"]`";

/// The rules refuse `sched` (no CAP_SYS_NICE, RLIMIT_RTPRIO below its
/// priority): the message and hint.
pub(super) fn no_capability(who: &str, sched: Sched, p: &Privileges) -> (String, String) {
    let (policy, prio) = (sched.policy.name(), sched.priority);
    if p.root {
        // Root without the capability: a container that did not add it, or
        // a bounding set that dropped it.
        return (
            format!(
                "{who}: {policy} priority {prio} needs CAP_SYS_NICE, which this process lacks \
                 (uid 0, but CAP_SYS_NICE is not among its effective capabilities; \
                 RLIMIT_RTPRIO {})",
                p.rtprio_limit
            ),
            format!(
                "add the capability CAP_SYS_NICE: {CAP_HINT}; rtlab never runs a thread at a \
                 lower policy than asked"
            ),
        );
    }
    (
        format!(
            "{who}: {policy} priority {prio} needs root, CAP_SYS_NICE or RLIMIT_RTPRIO >= {prio} \
             (this process: uid {}, no CAP_SYS_NICE, RLIMIT_RTPRIO {})",
            crate::sys::os::geteuid(),
            p.rtprio_limit
        ),
        format!(
            "run with sudo, or `setcap cap_sys_nice,cap_ipc_lock+ep rtlab`, or raise `rtprio` to \
             {prio} in /etc/security/limits.conf; in a container add CAP_SYS_NICE: {CAP_HINT}; \
             rtlab never runs a thread at a lower policy than asked"
        ),
    )
}

/// The kernel refused `sched` that the rules allow, with `e`: why, in the
/// kernel's order, as the message's tail (after the error) and the hint.
pub(super) fn kernel_refusal(
    e: &std::io::Error,
    p: &Privileges,
    priority: i32,
    groups: Option<&RtGroups>,
) -> (String, String) {
    use crate::sys::consts::{ENOSYS, EPERM};
    let errno = e.raw_os_error();
    if errno == Some(ENOSYS) {
        let who = if p.seccomp_filter {
            "a seccomp filter is on this process (Seccomp: 2 in /proc/self/status) and refuses it"
        } else {
            "an emulator or a seccomp filter refuses it"
        };
        return (
            format!("the sched_setscheduler syscall is not available here (ENOSYS): {who}"),
            "allow sched_setscheduler in the container's seccomp profile (`--security-opt \
             seccomp=PROFILE`), or run on the host"
                .into(),
        );
    }
    if errno == Some(EPERM) {
        // The kernel takes RLIMIT_RTPRIO before the capability: a limit
        // that covers the priority is no user namespace's matter.
        let limit_covers = u64::try_from(priority).is_ok_and(|x| x <= p.rtprio_limit);
        if let Some(map) = p
            .user_namespace
            .as_deref()
            .filter(|_| p.cap_sys_nice && !limit_covers)
        {
            return user_namespace(map);
        }
        if let Some(refusal) = groups.and_then(rt_group) {
            return refusal;
        }
        if p.seccomp_filter {
            return (
                "a seccomp filter is on this process (Seccomp: 2 in /proc/self/status) and may \
                 refuse it"
                    .into(),
                "allow sched_setscheduler in the container's seccomp profile (`--security-opt \
                 seccomp=PROFILE`; `seccomp=unconfined` to check)"
                    .into(),
            );
        }
    }
    let checked = match groups {
        Some(_) => "every cpu cgroup of this process visible here has RT time",
        None => "no RT group scheduling seen (no v1 cpu.rt_runtime_us)",
    };
    (
        format!("the rules allow it and {checked}"),
        "look for a security module (SELinux, AppArmor) or a seccomp filter that refuses \
         sched_setscheduler; with CONFIG_RT_GROUP_SCHED, each cpu cgroup from the root down to \
         this process's needs a non-zero cpu.rt_runtime_us"
            .into(),
    )
}

/// The kernel refused a negative nice (`priority` < 0 of a normal
/// policy): RT group scheduling has nothing to do with it.
pub(super) fn nice_refusal(nice: i32) -> (String, String) {
    (
        format!(
            "a negative nice needs CAP_SYS_NICE or RLIMIT_NICE >= {}",
            20i64.saturating_sub(i64::from(nice))
        ),
        format!(
            "run with sudo, or raise `nice` in /etc/security/limits.conf; in a container add \
             CAP_SYS_NICE: {CAP_HINT}"
        ),
    )
}

fn user_namespace(map: &str) -> (String, String) {
    (
        format!(
            "this process is in a user namespace (/proc/self/uid_map: {map}): its CAP_SYS_NICE \
             does not count for real-time policies, which need it in the host's namespace"
        ),
        "run the container as root on the host (rootful podman: `sudo podman run`), or raise \
         RLIMIT_RTPRIO to the priority (`--ulimit rtprio=99`, where the host's limits allow it)"
            .into(),
    )
}

/// RT group scheduling: the cgroups without RT time, ancestors first, and
/// what to write; None when every visible one has some. Kept short: a
/// diagnostic line is cut at 400 characters, and a container's cgroup
/// path alone takes 80.
fn rt_group(g: &RtGroups) -> Option<(String, String)> {
    let first = g.chain.iter().position(|x| x.runtime_us == Some(0))?;
    let zero = &g.chain[first..];
    let own = g.chain.last()?;
    let dirs = zero
        .iter()
        .map(|x| format!("/{}", x.dir))
        .collect::<Vec<_>>()
        .join(", ");
    let period = own.period_us.filter(|&p| p > 0).unwrap_or(1_000_000);
    let hidden = first == 0 && !g.top_is_root;
    let whose = if !hidden {
        format!("its cpu cgroup {}", own.cgroup)
    } else if own.cgroup == "/" {
        "its cpu cgroup, the container's (`/` of its cgroup namespace),".to_string()
    } else {
        format!("the container's cpu cgroup {}", own.cgroup)
    };
    let message = format!(
        "{whose} has no RT time (CONFIG_RT_GROUP_SCHED): {} is 0 in {dirs}",
        cgroup_rt::RUNTIME_FILE
    );
    let hint = if hidden {
        hidden_hint(own, period)
    } else {
        visible_hint(first.checked_sub(1).map(|i| &g.chain[i]), zero, period)
    };
    Some((message, hint))
}

/// A tenth of the period: ample for timer threads, which sleep most of
/// it; a real-time load needs its own share on top.
fn suggested(period: i64) -> i64 {
    period / 10
}

/// The cgroups above the container's are the host's: written there.
fn hidden_hint(own: &RtGroup, period: i64) -> String {
    let value = suggested(period);
    let find = if own.cgroup == "/" {
        " (`grep cpu /proc/PID/cgroup` on the host names it)"
    } else {
        ""
    };
    format!(
        "on the host, write a non-zero {} (e.g. {value} of each {period} µs, within what the \
         parent has left) to each cgroup above the container's in the cpu hierarchy, top first, \
         then to the container's{find}; podman: `--cpu-rt-runtime={value}` under a \
         `--cgroup-parent` that has RT time (a new cgroup has 0)",
        cgroup_rt::RUNTIME_FILE
    )
}

/// `zero`: the groups without RT time, top first; `parent`: the one above
/// the first of them (None when that is the hierarchy's root).
fn visible_hint(parent: Option<&RtGroup>, zero: &[RtGroup], period: i64) -> String {
    // What is left is in the first group's period: its value too.
    let period = zero[0].period_us.filter(|&p| p > 0).unwrap_or(period);
    let left = parent.and_then(|p| cgroup_rt::left_for(p, &zero[0]));
    let files = zero
        .iter()
        .map(|x| format!("/{}", x.runtime_file()))
        .collect::<Vec<_>>()
        .join(", then ");
    const PODMAN: &str = "podman: `--cpu-rt-runtime=N` under a `--cgroup-parent` that has N left (a new cgroup has 0)";
    let fit = match (parent, left) {
        (Some(p), Some(l)) if l > 0 => format!(
            "at most {l} per {period} µs: /{}'s {} less {} its other children hold",
            p.dir,
            p.runtime_us
                .filter(|&r| r >= 0)
                .map_or("unlimited share".to_string(), |r| r.to_string()),
            zero[0].siblings_us.unwrap_or(0)
        ),
        (Some(p), Some(_)) => {
            return format!(
                "/{}'s other children hold all of its {} µs: lower one of theirs, then write to \
                 {files}; {PODMAN}",
                p.dir,
                p.runtime_us.unwrap_or(0)
            );
        }
        _ => "each within what its parent has left".to_string(),
    };
    let value = left.map_or(suggested(period), |l| l.min(suggested(period)));
    format!("write {value} to {files} ({fit}); {PODMAN}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::SysRoot;
    use crate::sys::fake::write_tree;
    use crate::sys::os::Policy;

    fn privileges() -> Privileges {
        Privileges {
            root: true,
            cap_sys_nice: true,
            rtprio_limit: 0,
            rt_runtime_us: Some(950_000),
            seccomp_filter: false,
            user_namespace: None,
        }
    }

    fn eperm() -> std::io::Error {
        std::io::Error::from_raw_os_error(crate::sys::consts::EPERM)
    }

    const FIFO99: Sched = Sched {
        policy: Policy::Fifo,
        priority: 99,
    };

    #[test]
    fn root_without_the_capability_is_told_to_add_it() {
        let p = Privileges {
            cap_sys_nice: false,
            ..privileges()
        };
        let (m, h) = no_capability("timer_thread[0]", FIFO99, &p);
        assert!(
            m.contains("needs CAP_SYS_NICE, which this process lacks"),
            "{m}"
        );
        assert!(h.contains("--cap-add SYS_NICE"), "{h}");
        assert!(h.contains("capabilities.add: [\"SYS_NICE\"]"), "{h}");
        let (m, h) = no_capability("main", FIFO99, &Privileges { root: false, ..p });
        assert!(
            m.contains("needs root, CAP_SYS_NICE or RLIMIT_RTPRIO >= 99"),
            "{m}"
        );
        assert!(h.contains("`rtprio` to 99"), "{h}");
        assert!(h.contains("--cap-add SYS_NICE"), "{h}");
    }

    /// A host: root 950000, /a 0 beside /b holding 300000, rtlab in /a/c.
    fn host(tree: &std::path::Path) -> SysRoot {
        let c = "sys/fs/cgroup/cpu";
        write_tree(
            tree,
            &[
                (
                    "proc/self/mountinfo",
                    "32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n",
                ),
                ("proc/self/cgroup", "2:cpu:/a/c\n"),
                (&format!("{c}/release_agent"), "\n"),
                (&format!("{c}/cpu.rt_runtime_us"), "950000\n"),
                (&format!("{c}/cpu.rt_period_us"), "1000000\n"),
                (&format!("{c}/b/cpu.rt_runtime_us"), "300000\n"),
                (&format!("{c}/b/cpu.rt_period_us"), "1000000\n"),
                (&format!("{c}/a/cpu.rt_runtime_us"), "0\n"),
                (&format!("{c}/a/cpu.rt_period_us"), "1000000\n"),
                (&format!("{c}/a/c/cpu.rt_runtime_us"), "0\n"),
                (&format!("{c}/a/c/cpu.rt_period_us"), "1000000\n"),
            ],
        );
        SysRoot::at(tree)
    }

    #[test]
    fn a_hosts_cgroups_without_rt_time_are_named_with_a_value() {
        let dir = tempfile::tempdir().unwrap();
        let g = cgroup_rt::rt_groups(&host(dir.path())).unwrap();
        let (m, h) = kernel_refusal(&eperm(), &privileges(), 99, Some(&g));
        assert!(m.contains("its cpu cgroup /a/c has no RT time"), "{m}");
        assert!(
            m.ends_with("cpu.rt_runtime_us is 0 in /sys/fs/cgroup/cpu/a, /sys/fs/cgroup/cpu/a/c"),
            "{m}"
        );
        assert!(
            h.starts_with(
                "write 100000 to /sys/fs/cgroup/cpu/a/cpu.rt_runtime_us, then \
                 /sys/fs/cgroup/cpu/a/c/cpu.rt_runtime_us (at most 650000 per 1000000 µs: \
                 /sys/fs/cgroup/cpu's 950000 less 300000 its other children hold)"
            ),
            "{h}"
        );
        assert!(h.contains("--cpu-rt-runtime=N"), "{h}");
        // A parent whose children hold all of it.
        write_tree(
            dir.path(),
            &[("sys/fs/cgroup/cpu/b/cpu.rt_runtime_us", "950000\n")],
        );
        let g = cgroup_rt::rt_groups(&SysRoot::at(dir.path())).unwrap();
        let (_, h) = kernel_refusal(&eperm(), &privileges(), 99, Some(&g));
        assert!(h.contains("other children hold all of its 950000"), "{h}");
        // Every group with RT time: not this cause.
        write_tree(
            dir.path(),
            &[
                ("sys/fs/cgroup/cpu/a/cpu.rt_runtime_us", "1000\n"),
                ("sys/fs/cgroup/cpu/a/c/cpu.rt_runtime_us", "1000\n"),
            ],
        );
        let g = cgroup_rt::rt_groups(&SysRoot::at(dir.path())).unwrap();
        let (m, _) = kernel_refusal(&eperm(), &privileges(), 99, Some(&g));
        assert!(m.contains("every cpu cgroup"), "{m}");
    }

    #[test]
    fn a_containers_cgroup_is_named_as_seen_and_written_on_the_host() {
        let dir = tempfile::tempdir().unwrap();
        let c = "sys/fs/cgroup/cpu";
        write_tree(
            dir.path(),
            &[
                (
                    "proc/self/mountinfo",
                    "90 89 0:29 /libpod_parent/libpod-1 /sys/fs/cgroup/cpu ro - cgroup cgroup rw,cpu\n",
                ),
                ("proc/self/cgroup", "1:cpu:/libpod_parent/libpod-1\n"),
                (&format!("{c}/cpu.rt_runtime_us"), "0\n"),
                (&format!("{c}/cpu.rt_period_us"), "1000000\n"),
            ],
        );
        let root = SysRoot::at(dir.path());
        let g = cgroup_rt::rt_groups(&root).unwrap();
        let (m, h) = kernel_refusal(&eperm(), &privileges(), 99, Some(&g));
        assert!(
            m.contains("the container's cpu cgroup /libpod_parent/libpod-1 has no RT time"),
            "{m}"
        );
        assert!(
            m.ends_with("cpu.rt_runtime_us is 0 in /sys/fs/cgroup/cpu"),
            "{m}"
        );
        assert!(h.starts_with("on the host, write"), "{h}");
        assert!(h.contains("e.g. 100000 of each 1000000 µs"), "{h}");
        assert!(h.contains("--cpu-rt-runtime=100000"), "{h}");
        // A private cgroup namespace: `/`, not the hierarchy's root.
        write_tree(
            dir.path(),
            &[
                (
                    "proc/self/mountinfo",
                    "90 89 0:29 / /sys/fs/cgroup/cpu ro - cgroup cgroup rw,cpu\n",
                ),
                ("proc/self/cgroup", "1:cpu:/\n"),
            ],
        );
        let g = cgroup_rt::rt_groups(&root).unwrap();
        let (m, h) = kernel_refusal(&eperm(), &privileges(), 99, Some(&g));
        assert!(
            m.contains("the container's (`/` of its cgroup namespace)"),
            "{m}"
        );
        assert!(h.contains("`grep cpu /proc/PID/cgroup` on the host"), "{h}");
        // However long the path, the diagnostic stays whole (a line is cut
        // at 400 characters): a real podman ID.
        let long = format!("/libpod_parent/libpod-{}", "0123456789abcdef".repeat(4));
        write_tree(
            dir.path(),
            &[
                (
                    "proc/self/mountinfo",
                    &format!("90 89 0:29 {long} /sys/fs/cgroup/cpu ro - cgroup cgroup rw,cpu\n"),
                ),
                ("proc/self/cgroup", &format!("1:cpu:{long}\n")),
            ],
        );
        let g = cgroup_rt::rt_groups(&root).unwrap();
        let (m, h) = kernel_refusal(&eperm(), &privileges(), 99, Some(&g));
        let whole = format!(
            "timer_thread[0]: the kernel refuses FIFO priority 99: {}: {m}",
            eperm()
        );
        assert!(whole.chars().count() <= 400, "{whole}");
        assert!(h.chars().count() <= 400, "{h}");
    }

    #[test]
    fn user_namespace_then_seccomp_then_the_rest() {
        let userns = Privileges {
            user_namespace: Some("0 1000 1".into()),
            seccomp_filter: true,
            ..privileges()
        };
        let (m, h) = kernel_refusal(&eperm(), &userns, 99, None);
        assert!(m.contains("user namespace"), "{m}");
        assert!(h.contains("rtprio"), "{h}");
        // RLIMIT_RTPRIO covering the priority: the namespace is not why.
        let covered = Privileges {
            rtprio_limit: 99,
            ..userns.clone()
        };
        let (m, _) = kernel_refusal(&eperm(), &covered, 99, None);
        assert!(!m.contains("user namespace"), "{m}");
        let seccomp = Privileges {
            user_namespace: None,
            ..userns
        };
        let (m, h) = kernel_refusal(&eperm(), &seccomp, 99, None);
        assert!(m.contains("a seccomp filter"), "{m}");
        assert!(h.contains("seccomp="), "{h}");
        let enosys = std::io::Error::from_raw_os_error(crate::sys::consts::ENOSYS);
        let (m, _) = kernel_refusal(&enosys, &seccomp, 99, None);
        assert!(m.contains("ENOSYS") && m.contains("seccomp"), "{m}");
        let (m, h) = kernel_refusal(&eperm(), &privileges(), 99, None);
        assert!(m.contains("no RT group scheduling seen"), "{m}");
        assert!(h.contains("security module"), "{h}");
        // A negative nice: its own rule, never RT time.
        let (m, h) = nice_refusal(-5);
        assert!(m.contains("RLIMIT_NICE >= 25"), "{m}");
        assert!(
            h.contains("--cap-add SYS_NICE") && !h.contains("rt_runtime"),
            "{h}"
        );
    }
}
