//! Fuzz target: any bytes as a history file (what `durasim verify` reads). The reader must never
//! panic or allocate past its limits; a refusal must be a short message naming the file; an
//! accepted history must be judged without a panic and written back to the same records (the
//! properties live in `tests/it/support/history_props.rs`, shared with the in-suite smoke
//! tests/it/fuzz/history_smoke.rs).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/it/support/history_props.rs"]
mod history_props;

fuzz_target!(|data: &[u8]| {
    if let Err(broken) = history_props::check_history_bytes(data) {
        panic!("{broken}");
    }
});
