//! The conformance harness's tests, as one test binary (`cargo test -p durasim-conform --test
//! it`): `real_stores` runs `durasim-conform` on SQLite, PostgreSQL and pgmq, `pgmq_profile`
//! compares the simulator's pgmq profile with real pgmq; `support` is what they share.
//!
//! The tests that need PostgreSQL are `#[ignore = "needs PostgreSQL: ..."]`: `cargo test` lists
//! them as ignored, `cargo test -- --ignored` runs them (`.ci/run` does, after installing
//! PostgreSQL), and without PostgreSQL they fail. They never pass unrun.

mod support;

mod operator_targets;
mod pgmq_profile;
mod random_kills;
mod real_stores;
