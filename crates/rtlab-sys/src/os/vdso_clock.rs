use std::sync::atomic::{AtomicUsize, Ordering};

/// The address of the vDSO's clock_gettime once [`prepare`] found it;
/// 0 until then, and where there is none: the syscall.
static CLOCK: AtomicUsize = AtomicUsize::new(0);

#[cfg(target_arch = "x86_64")]
const NAME: &[u8] = b"__vdso_clock_gettime";
#[cfg(target_arch = "aarch64")]
const NAME: &[u8] = b"__kernel_clock_gettime";

type ClockFn = unsafe extern "C" fn(libc::clockid_t, *mut libc::timespec) -> libc::c_int;

/// Now, on CLOCK_MONOTONIC. One load and one test before the call:
/// no lookup here (a read before [`prepare`] takes the syscall), and
/// `ts` is not zeroed first (the vDSO or the kernel fills it).
#[inline(always)]
pub(super) fn monotonic() -> libc::timespec {
    let mut ts = std::mem::MaybeUninit::<libc::timespec>::uninit();
    let f = CLOCK.load(Ordering::Relaxed);
    // SAFETY: a non-zero `f` is the address of the vDSO's
    // clock_gettime (its C signature), found by `find` in the image
    // the kernel mapped for the life of the process; `ts` is writable.
    if f == 0
        || unsafe {
            std::mem::transmute::<usize, ClockFn>(f)(libc::CLOCK_MONOTONIC, ts.as_mut_ptr())
        } != 0
    {
        syscall(ts.as_mut_ptr());
    }
    // SAFETY: the vDSO returned 0, so it wrote `ts`, or the syscall
    // did: clock_gettime(CLOCK_MONOTONIC) on a valid, writable
    // timespec cannot fail (the clock always exists).
    unsafe { ts.assume_init() }
}

/// Looks the function up (once it is found, never again); whether the
/// clock reads call it.
#[cold]
pub(super) fn prepare() -> bool {
    if CLOCK.load(Ordering::Relaxed) == 0
        && let Some(f) = find()
    {
        CLOCK.store(f, Ordering::Relaxed);
    }
    CLOCK.load(Ordering::Relaxed) != 0
}

/// clock_gettime(CLOCK_MONOTONIC, ts) as the syscall instruction.
#[inline(always)]
fn syscall(ts: *mut libc::timespec) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the x86_64 syscall convention: number in rax, arguments
    // in rdi, rsi; the kernel clobbers rcx and r11 and writes `ts`, a
    // valid, writable timespec. CLOCK_MONOTONIC cannot fail.
    unsafe {
        std::arch::asm!(
            "syscall",
            inlateout("rax") libc::SYS_clock_gettime as isize => _,
            in("rdi") libc::CLOCK_MONOTONIC as isize,
            in("rsi") ts,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: the aarch64 syscall convention: number in x8, arguments
    // in x0, x1, result in x0; the kernel writes `ts`, a valid,
    // writable timespec. CLOCK_MONOTONIC cannot fail.
    unsafe {
        std::arch::asm!(
            "svc 0",
            in("x8") libc::SYS_clock_gettime as isize,
            inlateout("x0") libc::CLOCK_MONOTONIC as isize => _,
            in("x1") ts,
            options(nostack),
        );
    }
}

/// ELF64 file header, program header, dynamic entry, symbol (the
/// fields read).
#[repr(C)]
struct Ehdr {
    ident: [u8; 16],
    kind: u16,
    machine: u16,
    version: u32,
    entry: u64,
    phoff: u64,
    shoff: u64,
    flags: u32,
    ehsize: u16,
    phentsize: u16,
    phnum: u16,
}
#[repr(C)]
struct Phdr {
    kind: u32,
    flags: u32,
    offset: u64,
    vaddr: u64,
    paddr: u64,
    filesz: u64,
    memsz: u64,
    align: u64,
}
#[repr(C)]
struct Dyn {
    tag: i64,
    val: u64,
}
#[repr(C)]
struct Sym {
    name: u32,
    info: u8,
    other: u8,
    shndx: u16,
    value: u64,
    size: u64,
}
const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;
const DT_NULL: i64 = 0;
const DT_HASH: i64 = 4;
const DT_STRTAB: i64 = 5;
const DT_SYMTAB: i64 = 6;
const STT_FUNC: u8 = 2;
const STB_GLOBAL: u8 = 1;
const STB_WEAK: u8 = 2;

/// The address of the vDSO's clock_gettime: None without a vDSO (the
/// auxiliary vector has no AT_SYSINFO_EHDR: valgrind, some kernels), or
/// an image without a symbol hash table or the function.
fn find() -> Option<usize> {
    // SAFETY: getauxval only reads the auxiliary vector.
    let base = unsafe { libc::getauxval(libc::AT_SYSINFO_EHDR) } as usize;
    if base == 0 {
        return None;
    }
    // SAFETY: AT_SYSINFO_EHDR is the address of the vDSO's ELF header,
    // an image the kernel maps readable for the life of the process;
    // every offset read below is the image's own (its program headers,
    // its dynamic section, its symbol, string and hash tables, all
    // inside its loaded segment), checked for the 64-bit ELF layout
    // these structs describe before any is followed.
    unsafe {
        let ehdr = &*(base as *const Ehdr);
        if ehdr.ident[..5] != *b"\x7fELF\x02"
            || usize::from(ehdr.phentsize) != std::mem::size_of::<Phdr>()
        {
            return None;
        }
        let phdrs = std::slice::from_raw_parts(
            (base + ehdr.phoff as usize) as *const Phdr,
            usize::from(ehdr.phnum),
        );
        // The image's addresses are its link-time ones plus `bias`.
        let load = phdrs.iter().find(|p| p.kind == PT_LOAD)?;
        let bias = (base + load.offset as usize).wrapping_sub(load.vaddr as usize);
        let dynamic = phdrs.iter().find(|p| p.kind == PT_DYNAMIC)?;
        let mut d = bias.wrapping_add(dynamic.vaddr as usize) as *const Dyn;
        let (mut hash, mut strtab, mut symtab) = (0usize, 0usize, 0usize);
        while (*d).tag != DT_NULL {
            let at = bias.wrapping_add((*d).val as usize);
            match (*d).tag {
                DT_HASH => hash = at,
                DT_STRTAB => strtab = at,
                DT_SYMTAB => symtab = at,
                _ => {}
            }
            d = d.add(1);
        }
        if hash == 0 || strtab == 0 || symtab == 0 {
            return None;
        }
        // DT_HASH: nbucket, nchain (= the number of symbols), ...
        let symbols = *((hash as *const u32).add(1)) as usize;
        let syms = std::slice::from_raw_parts(symtab as *const Sym, symbols);
        syms.iter()
            .find(|s| {
                let kind = s.info & 0xf;
                let bind = s.info >> 4;
                kind == STT_FUNC
                    && (bind == STB_GLOBAL || bind == STB_WEAK)
                    && s.shndx != 0
                    && std::ffi::CStr::from_ptr((strtab + s.name as usize) as *const libc::c_char)
                        .to_bytes()
                        == NAME
            })
            .map(|s| bias.wrapping_add(s.value as usize))
    }
}

#[cfg(test)]
mod tests {
    /// The vDSO's clock (found on any kernel that maps one) and the
    /// syscall read the same clock: each read lies between the other's.
    #[test]
    fn the_vdso_clock_and_the_syscall_agree() {
        // Found or not (no vDSO: the syscall both ways), the same clock.
        super::prepare();
        for _ in 0..100 {
            let mut a = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            super::syscall(&mut a);
            let b = super::monotonic();
            let mut c = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            super::syscall(&mut c);
            let ns = |t: libc::timespec| t.tv_sec as i128 * 1_000_000_000 + t.tv_nsec as i128;
            let (a, b, c) = (ns(a), ns(b), ns(c));
            assert!(a <= b && b <= c, "{a} {b} {c}");
        }
    }
}
