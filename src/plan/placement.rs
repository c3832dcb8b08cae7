//! Where each stanza runs: its CPUs online, its cpuset, its CPUs inside
//! that cpuset, and a program's output target.

use crate::config::keys::StanzaKind;
use crate::config::{Diagnostic, Spanned};
use crate::isolate::cpuset::CpusetTarget;
use std::path::{Path, PathBuf};

use super::Planner;

impl Planner<'_> {
    pub(super) fn cpus(&mut self, list: &Option<Spanned<Vec<usize>>>) -> Option<Vec<usize>> {
        let list = list.as_ref()?;
        let offline: Vec<usize> = list
            .value
            .iter()
            .copied()
            .filter(|c| !self.online.contains(c))
            .collect();
        if !offline.is_empty() {
            self.diags.push(
                Diagnostic::new(
                    list.pos,
                    format!(
                        "CPU {} {} not online",
                        crate::cpulist::format(&offline),
                        if offline.len() == 1 { "is" } else { "are" }
                    ),
                )
                .with_hint(Some(format!(
                    "this machine's online CPUs are {}",
                    crate::cpulist::format(&self.online)
                ))),
            );
        }
        Some(list.value.clone())
    }

    /// Resolves the `cpuset` key of a stanza and checks its CPUs against it.
    /// Without the key, the thread stays in `inherited` (the main thread's
    /// cpuset, or the one rtlab was started in) and its CPUs must be there.
    /// Returns the cpuset to enter, and the CPUs the thread may use there.
    pub(super) fn place(
        &mut self,
        kind: StanzaKind,
        who: &str,
        key: &Option<Spanned<String>>,
        cpus: &Option<Spanned<Vec<usize>>>,
        inherited: Option<&CpusetTarget>,
    ) -> (Option<CpusetTarget>, Option<Vec<usize>>) {
        let target = match key {
            Some(k) => match self.cpuset_target(kind, who, k) {
                Some(t) => Some(t),
                None => return (None, None),
            },
            None => None,
        };
        let Some(space) = target.as_ref().or(inherited) else {
            return (None, None);
        };
        let allowed: Vec<usize> = self
            .online
            .iter()
            .copied()
            .filter(|c| space.cpus.contains(c))
            .collect();
        if let Some(list) = cpus {
            self.check_inside(who, list, space, target.is_some());
        }
        (target, Some(allowed))
    }

    /// The cpuset `k` names, if it can hold this stanza (a diagnostic says
    /// why not).
    fn cpuset_target(
        &mut self,
        kind: StanzaKind,
        who: &str,
        k: &Spanned<String>,
    ) -> Option<CpusetTarget> {
        match self.machine.cpuset(Some(&k.value)) {
            // v2 places whole processes, and a program's process is in
            // rtlab's tracking cgroup of the same hierarchy.
            Ok(t) if t.v2 && kind != StanzaKind::Main => {
                let (msg, hint) = if kind == StanzaKind::Timer {
                    (
                        "a thread of its own cpuset needs cgroup v1: v2 places whole processes",
                        "give main the cpuset instead: the whole rtlab process moves, timer threads with it",
                    )
                } else {
                    (
                        "a program's cpuset on cgroup v2 is not supported: on v2 a process is in one cgroup, and rtlab's tracking cgroup holds it",
                        "leave it out: on v2 the kernel keeps every other cgroup off an isolated partition's CPUs; choose the program's CPUs with cpu_affinity",
                    )
                };
                self.diags.push(
                    Diagnostic::new(k.pos, format!("{who}: {msg}")).with_hint(Some(hint.into())),
                );
                None
            }
            Ok(t) if t.cpus.is_empty() => {
                self.diags.push(
                    Diagnostic::new(k.pos, format!("{who}: cpuset `{}` has no CPUs", k.value))
                        .with_hint(Some(
                            "give it CPUs (its cpuset.cpus), or name a cpuset that has some (`rtlab partition show`)".into(),
                        )),
                );
                None
            }
            Ok(t) => Some(t),
            Err(e) => {
                self.diags.push(
                    Diagnostic::new(k.pos, format!("{who}: {e}")).with_hint(Some(
                        "make the rt/nrt partitions with `rtlab partition create CPUS`, or name an existing cpuset".into(),
                    )),
                );
                None
            }
        }
    }

    /// `cpu_affinity` CPUs outside the cpuset the stanza runs in (`named`:
    /// its own `cpuset` key, else the one it inherits) are refused.
    fn check_inside(
        &mut self,
        who: &str,
        list: &Spanned<Vec<usize>>,
        space: &CpusetTarget,
        named: bool,
    ) {
        let outside: Vec<usize> = list
            .value
            .iter()
            .copied()
            .filter(|c| !space.cpus.contains(c) && self.online.contains(c))
            .collect();
        if outside.is_empty() {
            return;
        }
        let cpus = crate::cpulist::format(&outside);
        let (msg, hint) = if named {
            (
                format!(
                    "{who}: CPU {cpus} not in cpuset `{}` (CPUs {})",
                    space.name,
                    crate::cpulist::format(&space.cpus)
                ),
                "choose CPUs of that cpuset, or another cpuset".to_string(),
            )
        } else {
            (
                format!(
                    "{who}: CPU {cpus} outside the cpuset it would run in ({}: CPUs {})",
                    space.display(),
                    crate::cpulist::format(&space.cpus)
                ),
                "add `cpuset NAME` naming the partition that holds these CPUs (e.g. `cpuset rt`), or choose CPUs of this one".to_string(),
            )
        };
        self.diags
            .push(Diagnostic::new(list.pos, msg).with_hint(Some(hint)));
    }

    /// A program's output target (relative to the current directory).
    pub(super) fn path_target(&mut self, t: &Option<Spanned<String>>) -> PathBuf {
        let Some(t) = t else {
            return PathBuf::from("/dev/null");
        };
        let path = PathBuf::from(&t.value);
        // The one device a program's output may go to; anything else must
        // be a file rtlab can write safely.
        if path != Path::new("/dev/null")
            && let Err(e) = crate::sys::outfile::check(&path, false)
        {
            self.diags
                .push(Diagnostic::new(t.pos, e.to_string()).with_hint(Some(e.hint)));
        }
        path
    }
}
