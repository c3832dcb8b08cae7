#![forbid(unsafe_code)]
fn main() {
    std::process::exit(rtlab::cli::main());
}
