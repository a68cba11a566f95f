//! The history's vocabulary: the words a history is written in, shared by whoever writes one (the
//! simulator's model and kernel, an external recorder through the reader) and whoever judges one
//! (the checker).
//!
//! Owns: idempotency keys and the name tables behind them (`key`), payload fingerprints and the
//! published payload hash (`payload`), the run configuration a history's header carries
//! (`config`), the closed sets of codes (`codes`), and the figures of a run (`counters`: their
//! names in `summary.json`, `[expect]` and the text summary, which the metrics count and the
//! checker counts again), the latency distributions `summary.json` reports (`latency`: how a
//! figure is summed up, so the metrics and the checker's recomputation agree on what a
//! percentile is), the fault kinds (`faults`), and the closed word lists of a queue-semantics
//! profile's parameters (`queue_params`: a scenario's `[queue]` keys, and the header's `unique`
//! and `backoff`, are spelled in them), and the bug switches (`bugs`: their table, and the set a
//! run has on, which the model, the kernel and the metrics read and the checker never does).
//! Does not: decide anything. `check/` imports this and `history`, never `model/`: the imports
//! show that the checker does not lean on the model.

pub mod bugs;
pub mod codes;
pub mod config;
pub mod counters;
pub mod faults;
pub mod fnv_suffix;
pub mod key;
pub mod key_index;
pub mod latency;
pub mod payload;
pub mod queue_params;
