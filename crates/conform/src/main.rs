//! The `durasim-conform` binary: `durasim conform` runs it (and the harness runs it again for
//! each worker and relay process). Exit codes as `durasim run`: 0 holds, 1 violated, 2 bad input.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = durasim_conform::main_with(args);
    if let Err(e) = &result {
        eprintln!("error: {e:#}");
    }
    std::process::exit(durasim::cli::exit_code(&result));
}
