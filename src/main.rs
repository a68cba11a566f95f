//! The `durasim` binary: parse arguments, call the library, map the outcome to 0 / 1 / 2.

use clap::Parser;

fn main() {
    // Like other Unix tools, end quietly when the reader of our output goes away (`| head`)
    // instead of panicking on the failed write: Rust ignores SIGPIPE by default.
    #[cfg(unix)]
    // SAFETY: setting a signal's disposition to the default at start-up, before any thread.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
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
