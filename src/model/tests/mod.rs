//! Model tests written against `cargo mutants` survivors (docs/testing.md, "Mutation testing"): each pins
//! a rule of a model file that no other unit test of the library checked. They live here, beside
//! the model, so that the files they test stay as their owners keep them.
//! Owns: nothing but tests.

mod consumer;
mod dead_letter;
mod outbox;
mod queue;
mod queue_by_id;
mod retry;
mod semantics;
mod store;
