//! The `durasim` binary: parse arguments, call the library, map the outcome to 0 / 1 / 2.

use clap::Parser;

fn main() {
    // Like other Unix tools, end quietly when the reader of our output goes away (`| head`)
    // instead of panicking on the failed write: Rust ignores SIGPIPE by default. This is safe for
    // the outputs because no command prints on stdout while its temporary output directory
    // exists (they print once the directory is in place).
    #[cfg(unix)]
    // SAFETY: setting a signal's disposition to the default at start-up, before any thread.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    remove_temporary_outputs_on_signals();
    let cli = match durasim::shell::cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    let result = durasim::shell::cli::main_with(cli);
    if let Err(e) = &result {
        eprintln!("error: {e:#}");
    }
    std::process::exit(durasim::shell::cli::exit_code(&result));
}

/// Ctrl-C, `kill` and a closed terminal end the process as they always would (by the signal,
/// so a shell sees 130 / 143 / 129), but first the temporary directory of an output being
/// written is removed: an interrupted run leaves nothing behind.
fn remove_temporary_outputs_on_signals() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
        return;
    };
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            durasim::shell::report::output_dir::remove_live_dirs();
            let _ = signal_hook::low_level::emulate_default_handler(signal);
            std::process::exit(128 + signal);
        }
    });
}
