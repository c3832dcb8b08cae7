use super::*;
use crate::config::Pos;
use crate::isolate::cpuset::{CpusetError, CpusetTarget};
use crate::sys::Privileges;
use crate::sys::os::{Policy, Sched};
use crate::tune::bandwidth::BandwidthError;

pub(crate) struct Fake {
    online: Vec<usize>,
    pub(crate) root: bool,
    probe_ok: bool,
    rt_runtime: Option<i64>,
    cpusets: Vec<CpusetTarget>,
    started_in: &'static str,
}

impl Machine for Fake {
    fn online_cpus(&self) -> Vec<usize> {
        self.online.clone()
    }
    fn privileges(&self) -> Privileges {
        Privileges {
            root: self.root,
            cap_sys_nice: self.root,
            rtprio_limit: 0,
            rt_runtime_us: self.rt_runtime,
            seccomp_filter: false,
            user_namespace: None,
        }
    }
    fn probe_sched(&self, _: Sched) -> std::io::Result<()> {
        if self.probe_ok {
            Ok(())
        } else {
            Err(std::io::Error::from_raw_os_error(crate::sys::consts::EPERM))
        }
    }
    fn probe_deadline(&self, _: &[usize], _: crate::sched::Deadline) -> std::io::Result<()> {
        if self.probe_ok {
            Ok(())
        } else {
            Err(std::io::Error::from_raw_os_error(crate::sys::consts::EPERM))
        }
    }
    fn find_command(&self, name: &str) -> Option<PathBuf> {
        ["find", "sh", "ping"]
            .contains(&name)
            .then(|| PathBuf::from("/usr/bin").join(name))
    }
    fn cpuset(&self, name: Option<&str>) -> Result<CpusetTarget, CpusetError> {
        let name = name.unwrap_or(self.started_in);
        self.cpusets
            .iter()
            .find(|c| c.name == name)
            .cloned()
            .ok_or_else(|| CpusetError::NotFound {
                name: name.into(),
                hierarchy: "the fake hierarchy".into(),
                others: Vec::new(),
            })
    }
    fn irqs(&self) -> Vec<(u32, Vec<String>)> {
        vec![
            (24, vec!["eth0".into()]),
            (36, vec!["virtio1-req.0".into()]),
        ]
    }
    fn freq_policies(&self) -> Result<Vec<crate::sys::power::FreqPolicy>, String> {
        Err("no policy (fake)".into())
    }
    fn idle_states(&self, cpus: &[usize]) -> Vec<crate::sys::power::IdleState> {
        cpus.iter()
            .map(|&cpu| crate::sys::power::IdleState {
                cpu,
                index: 1,
                name: "C1".into(),
                desc: String::new(),
                latency_us: 2,
                residency_us: 2,
                usage: 0,
                time_us: 0,
                disabled: false,
            })
            .collect()
    }
    fn thread_names(&self) -> Vec<String> {
        vec!["ksoftirqd/0".into(), "ksoftirqd/1".into()]
    }
    fn other_threads(&self) -> Vec<(i32, String)> {
        vec![
            (10, "ksoftirqd/0".into()),
            (11, "ksoftirqd/1".into()),
            (500, "app".into()),
        ]
    }
    fn net_interfaces(&self) -> Vec<String> {
        vec!["eth0".into(), "lo".into()]
    }
    fn cpu_bandwidth(&self) -> Result<(), BandwidthError> {
        Ok(())
    }
    fn process_exists(&self, pid: i32) -> bool {
        pid == 4242 || pid == 4243
    }
    /// 4242 is pinned to CPU 1, 4243 may run anywhere.
    fn process_cpus(&self, pid: i32) -> Option<Vec<usize>> {
        match pid {
            4242 => Some(vec![1]),
            4243 => Some(self.online.clone()),
            _ => None,
        }
    }
    fn mem_available_kib(&self) -> Option<u64> {
        Some(1 << 20)
    }
}

fn cpuset(name: &str, cpus: &[usize], v2: bool) -> CpusetTarget {
    CpusetTarget {
        name: name.into(),
        dir: format!("sys/fs/cgroup/cpuset/{name}"),
        cpus: cpus.to_vec(),
        v2,
    }
}

/// A machine with partitions rt = 1, nrt = 0, rtlab started in nrt.
fn partitioned(v2: bool) -> Fake {
    Fake {
        cpusets: vec![
            cpuset("", &[0, 1], v2),
            cpuset("rt", &[1], v2),
            cpuset("nrt", &[0], v2),
        ],
        started_in: "nrt",
        ..fake()
    }
}

#[test]
fn cpuset_keys_place_threads_and_check_their_cpus() {
    let text = "main\n{\n  cpuset nrt\n}\ntimer_thread[0]\n{\n  cpuset rt\n}\n\
                timer_thread[1]\n{\n  cpuset rt\n  cpu_affinity 1\n}\n\
                program[0]\n{\n  cmdline sh\n  cpuset nrt\n}\n";
    let plan = plan_text(text, "f", &partitioned(false), &PlanOptions::default()).unwrap();
    assert_eq!(plan.main.cpuset.as_ref().unwrap().name, "nrt");
    // Without cpu_affinity, a timer thread takes its cpuset's CPUs.
    assert_eq!(plan.timers[0].spec.cpus, vec![1]);
    assert_eq!(
        plan.timers[0].spec.cpuset.as_ref().unwrap().thread_file(),
        "sys/fs/cgroup/cpuset/rt/tasks"
    );
    assert_eq!(
        plan.programs[0].cpuset.as_ref().unwrap().process_file(),
        "sys/fs/cgroup/cpuset/nrt/cgroup.procs"
    );
}

#[test]
fn cpuset_mistakes_are_refused_at_their_position() {
    // A CPU of rt, but the thread would stay in nrt.
    let text = "timer_thread[0]\n{\n  cpu_affinity 1\n}\n";
    let d = plan_text(text, "f", &partitioned(false), &PlanOptions::default()).unwrap_err();
    assert_eq!(d[0].pos, Pos { line: 3, col: 16 });
    assert!(
        d[0].message
            .contains("outside the cpuset it would run in (/nrt: CPUs 0)"),
        "{}",
        d[0].message
    );
    assert!(d[0].hint.as_ref().unwrap().contains("cpuset rt"));
    // A CPU outside the named cpuset.
    let text = "timer_thread[0]\n{\n  cpuset rt\n  cpu_affinity 0\n}\n";
    let d = plan_text(text, "f", &partitioned(false), &PlanOptions::default()).unwrap_err();
    assert_eq!(
        d[0].message,
        "timer_thread[0]: CPU 0 not in cpuset `rt` (CPUs 1)"
    );
    // An unknown cpuset.
    let text = "timer_thread[0]\n{\n  cpuset rtt\n}\n";
    let d = plan_text(text, "f", &partitioned(false), &PlanOptions::default()).unwrap_err();
    assert_eq!(d[0].pos, Pos { line: 3, col: 10 });
    assert!(
        d[0].hint
            .as_ref()
            .unwrap()
            .contains("rtlab partition create")
    );
    // v2 places processes, not threads.
    let text = "timer_thread[0]\n{\n  cpuset rt\n}\n";
    let d = plan_text(text, "f", &partitioned(true), &PlanOptions::default()).unwrap_err();
    assert!(d[0].message.contains("needs cgroup v1"), "{}", d[0].message);
    assert_eq!(d[0].pos, Pos { line: 3, col: 10 });
    let text = "program[0]\n{\n  cmdline sh\n  cpuset nrt\n}\n";
    let d = plan_text(text, "f", &partitioned(true), &PlanOptions::default()).unwrap_err();
    assert!(
        d[0].message.contains("tracking cgroup holds it"),
        "{}",
        d[0].message
    );
    assert!(d[0].hint.as_ref().unwrap().contains("cpu_affinity"));
    // No cpuset controller at all: a key is refused, no key is fine.
    let d = plan_text(text, "f", &fake(), &PlanOptions::default()).unwrap_err();
    assert!(d[0].message.contains("no cpuset"), "{}", d[0].message);
}

/// The refusals of `text` on the fake machine, as `LINE:COL: message`.
pub(crate) fn refusals(text: &str) -> Vec<String> {
    let exp = crate::config::parse(text).expect("parses");
    match build(&exp, text, &fake(), &PlanOptions::default()) {
        Ok(_) => Vec::new(),
        Err(d) => d
            .iter()
            .map(|d| format!("{}:{}: {}", d.pos.line, d.pos.col, d.message))
            .collect(),
    }
}

pub(crate) fn fake() -> Fake {
    Fake {
        online: vec![0, 1],
        root: true,
        probe_ok: true,
        rt_runtime: Some(950_000),
        cpusets: Vec::new(),
        started_in: "",
    }
}

const TWO_CPU: &str = include_str!("../../examples/two-cpu.cfg");
const HOST: &str = include_str!("../../examples/host.cfg");

#[test]
fn an_irq_this_machine_lacks_is_refused_before_the_run() {
    let text = |irq: &str| {
        format!("timer_thread[0]\n{{\n}}\nirq_task[0]\n{{\n  irq {irq}\n  task.name dd\n}}\n")
    };
    let plan = |irq: &str| plan_text(&text(irq), "f", &fake(), &PlanOptions::default());
    assert!(plan("virtio1-req.0").is_ok());
    assert!(plan("36").is_ok());
    // A mistyped name: refused at its position, the near one offered.
    let d = plan("virtio1-req0").unwrap_err();
    assert_eq!((d[0].pos.line, d[0].pos.col), (6, 7));
    assert!(
        d[0].message.contains("\"virtio1-req0\""),
        "{}",
        d[0].message
    );
    let hint = d[0].hint.as_ref().unwrap();
    assert!(
        hint.contains("did you mean virtio1-req.0 (IRQ 36)"),
        "{hint}"
    );
    // Nothing near: the list command.
    let d = plan("sound-card").unwrap_err();
    assert!(!d[0].hint.as_ref().unwrap().contains("did you mean"));
    assert!(
        plan("99").unwrap_err()[0]
            .message
            .contains("IRQ 99 does not exist")
    );
}

#[test]
fn two_cpu_example_plans() {
    let plan = plan_text(TWO_CPU, "two-cpu.cfg", &fake(), &PlanOptions::default()).unwrap();
    assert_eq!(plan.timers.len(), 1);
    assert_eq!(plan.timers[0].spec.cpus, vec![1]);
    assert_eq!(plan.timers[0].filename, "timer_thread00.txt");
    assert_eq!(plan.programs.len(), 3);
    assert_eq!(plan.programs[0].argv[7], ";");
    assert_eq!(plan.main.cpus, Some(vec![0]));
}

#[test]
fn offline_cpu_is_refused_with_the_online_set() {
    let diags = plan_text(HOST, "host.cfg", &fake(), &PlanOptions::default()).unwrap_err();
    assert_eq!(diags.len(), 2, "{diags:?}");
    assert_eq!(diags[0].pos, Pos { line: 6, col: 16 });
    assert_eq!(diags[0].message, "CPU 2-6 are not online");
    assert_eq!(
        diags[0].hint.as_deref(),
        Some("this machine's online CPUs are 0-1")
    );
    assert_eq!(diags[1].message, "CPU 7 is not online");
}

#[test]
fn missing_command_is_refused() {
    let text = "program[0]\n{\n  cmdline nosuchcmd -x\n}\n";
    let diags = plan_text(text, "f", &fake(), &PlanOptions::default()).unwrap_err();
    assert_eq!(diags[0].pos, Pos { line: 3, col: 11 });
    assert!(diags[0].message.contains("`nosuchcmd` not found"));
}

#[test]
fn rt_without_privilege_is_refused_with_cause_and_fix() {
    let mut m = fake();
    m.root = false;
    let diags = plan_text(TWO_CPU, "f", &m, &PlanOptions::default()).unwrap_err();
    assert_eq!(diags.len(), 1);
    assert!(diags[0].message.contains("FIFO priority 99 needs root"));
    assert!(
        diags[0]
            .hint
            .as_ref()
            .unwrap()
            .contains("never runs a thread at a lower policy")
    );
    assert_eq!(diags[0].pos, Pos { line: 18, col: 18 });
}

#[test]
fn kernel_refusal_and_throttling_are_refused() {
    let mut m = fake();
    m.probe_ok = false;
    let diags = plan_text(TWO_CPU, "f", &m, &PlanOptions::default()).unwrap_err();
    assert!(diags[0].message.contains("kernel refuses FIFO priority 99"));
    // The fake machine has no cpu cgroups to name: what was checked, and
    // where else to look.
    assert!(
        diags[0].message.contains("no RT group scheduling seen"),
        "{}",
        diags[0].message
    );
    assert!(
        diags[0]
            .hint
            .as_ref()
            .unwrap()
            .contains("CONFIG_RT_GROUP_SCHED")
    );
    let mut m = fake();
    m.rt_runtime = Some(0);
    let diags = plan_text(TWO_CPU, "f", &m, &PlanOptions::default()).unwrap_err();
    assert!(diags[0].message.contains("sched_rt_runtime_us = 0"));
}

#[test]
fn builtin_experiment_has_a_fifo_99_thread_per_cpu() {
    let online = vec![0, 1, 3];
    let mut m = fake();
    m.online = online.clone();
    let plan = plan_text(
        &builtin_experiment_text(&online, &[]),
        "<built-in>",
        &m,
        &PlanOptions::default(),
    )
    .unwrap();
    // With partitions, each thread goes in the one holding its CPU.
    let parts = vec![("rt".to_string(), vec![1]), ("nrt".to_string(), vec![0])];
    let parted = plan_text(
        &builtin_experiment_text(&[0, 1], &parts),
        "<built-in>",
        &partitioned(false),
        &PlanOptions::default(),
    )
    .unwrap();
    assert_eq!(parted.timers[0].spec.cpuset.as_ref().unwrap().name, "nrt");
    assert_eq!(parted.timers[1].spec.cpuset.as_ref().unwrap().name, "rt");
    assert_eq!(plan.timers.len(), 3);
    for (t, cpu) in plan.timers.iter().zip(&online) {
        assert_eq!(t.spec.cpus, vec![*cpu]);
        assert_eq!(
            t.spec.sched,
            Sched {
                policy: Policy::Fifo,
                priority: 99
            }
        );
        assert_eq!(t.spec.period_ns, 1_000_000);
        assert_eq!(t.spec.duration_ns, Some(10_000_000_000));
    }
}

#[test]
fn an_empty_experiment_is_refused() {
    let diags = plan_text("main\n{\n}\n", "f", &fake(), &PlanOptions::default()).unwrap_err();
    assert!(diags[0].message.contains("nothing to run"));
}

#[test]
fn duplicate_result_files_are_refused() {
    let text = "timer_thread[0]\n{\n stats.filename a.txt\n}\ntimer_thread[1]\n{\n stats.filename a.txt\n}\n";
    let diags = plan_text(text, "f", &fake(), &PlanOptions::default()).unwrap_err();
    assert!(diags[0].message.contains("also timer_thread[0]'s"));
}

#[test]
fn outdir_places_result_files_and_csv_changes_the_extension() {
    let text = "main\n{\n stats.format csv\n}\ntimer_thread[3]\n{\n}\n";
    let opts = PlanOptions {
        outdir: Some(PathBuf::from("/tmp")),
        dbg_level: Some(2),
        no_result_files: false,
    };
    let plan = plan_text(text, "f", &fake(), &opts).unwrap();
    assert_eq!(
        plan.timers[0].path,
        PathBuf::from("/tmp/timer_thread03.csv")
    );
    assert_eq!(plan.main.dbg_level, 2);
}
