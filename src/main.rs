fn main() {
    std::process::exit(rtlab::cli::main());
}
