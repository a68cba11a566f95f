//! Fuzz target: any bytes as a history file (what `durasim verify` reads). The reader must never
//! panic or allocate past its limits; a refusal must be a short message naming the file; an
//! accepted history must be judged without a panic and written back to the same records (the
//! properties live in `durasim::history_fuzz`, shared with tests/fuzz_history_smoke.rs).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(broken) = durasim::history_fuzz::check_history_bytes(data) {
        panic!("{broken}");
    }
});
