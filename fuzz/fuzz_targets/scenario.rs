//! Fuzz target: any bytes as a scenario file. Parsing and validation must never panic; a refusal
//! must be a message naming the file; an accepted scenario must write back and parse again to
//! itself (the properties live in `tests/it/support/scenario_props.rs`, shared with the in-suite
//! smoke tests/it/fuzz/scenario_smoke.rs).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/it/support/scenario_props.rs"]
mod scenario_props;

fuzz_target!(|data: &[u8]| {
    if let Err(broken) = scenario_props::check_scenario_bytes(data) {
        panic!("{broken}");
    }
});
