//! Bounded fuzz runs inside `cargo test`: thousands of mutated scenario files and history files,
//! each checked by the properties the open-ended fuzz targets check (`support/scenario_props.rs`,
//! `support/history_props.rs`; `cargo fuzz run scenario|history`, fuzz/README.md), and the tools
//! that read a history on edited histories of every bug switch (`tools_smoke.rs`).

mod history_smoke;
mod scenario_smoke;
mod tools_smoke;
