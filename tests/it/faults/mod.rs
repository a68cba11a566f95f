//! Fault kinds added through the fault tables and nothing else: what each causes is caught
//! where a bug makes it harmful, it is read back from the history file, it replays frozen, and
//! off it changes no trace.

mod consumer_crash;
mod slow_heartbeat;
