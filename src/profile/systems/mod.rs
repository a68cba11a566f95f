//! One file a system: each profile's defaults, every value with its source.
//!
//! Owns: the values of docs/queues.md §2.2, as [`super::Semantics`].
//! Does not: resolve overrides (see `resolve`) or run anything.

pub mod bullmq;
pub mod durasim;
pub mod graphile_worker;
pub mod oban;
pub mod pg_boss;
pub mod pgmq;
pub mod procrastinate;
pub mod river;
pub mod sidekiq;
pub mod sqs;
pub mod temporal;
