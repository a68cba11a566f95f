//! The `durasim` binary: parse arguments, call the library, map the outcome to 0 / 1 / 2.

use clap::Parser;

fn main() {
    let cli = match durasim::cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    let result = durasim::cli::main_with(cli);
    if let Err(e) = &result {
        eprintln!("error: {e:#}");
    }
    std::process::exit(durasim::cli::exit_code(&result));
}
