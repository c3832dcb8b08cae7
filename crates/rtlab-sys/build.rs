//! Compiles the BPF program (`bpf/rt_wakeup.bpf.c`) with clang, when the
//! target is one that carries the BPF source (x86_64, aarch64) and clang
//! is found (`RTLAB_BPF_CLANG`, else `clang` on PATH). Without clang the
//! crate builds all the same, without the program: `rtlab` then says at
//! run time that this build has no BPF, and runs the tracefs path. The
//! object is CPU-independent BPF (little-endian; every target here is),
//! relocated at load against the running kernel's BTF (CO-RE).

use std::env;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(rtlab_bpf)");
    println!("cargo::rerun-if-changed=bpf/rt_wakeup.bpf.c");
    println!("cargo::rerun-if-env-changed=RTLAB_BPF_CLANG");
    let arch = env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    if arch != "x86_64" && arch != "aarch64" {
        return;
    }
    let Some(out) = env::var_os("OUT_DIR").map(PathBuf::from) else {
        return;
    };
    let clang = env::var("RTLAB_BPF_CLANG").unwrap_or_else(|_| "clang".into());
    let object = out.join("rt_wakeup.bpf.o");
    let built = Command::new(&clang)
        .args(["-O2", "-g", "-target", "bpfel", "-Wall", "-Werror", "-c"])
        .arg("bpf/rt_wakeup.bpf.c")
        .arg("-o")
        .arg(&object)
        .status();
    match built {
        Ok(s) if s.success() => println!("cargo::rustc-cfg=rtlab_bpf"),
        Ok(s) => println!(
            "cargo::warning=the BPF program did not compile ({clang}: {s}): this build has no BPF source"
        ),
        Err(e) => println!(
            "cargo::warning=no BPF source in this build: {clang} not found ({e}); install clang to build it"
        ),
    }
}
