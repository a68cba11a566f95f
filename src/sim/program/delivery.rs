//! The broker between a relay program and a consumer program.
//!
//! Owns: `broker.publish` (the relay sends an outbox event: recorded `published`, with how
//! many times it was sent; the call returns once the consumer is done with it, or fails if
//! the consumer died holding it), `broker.receive` (the consumer waits for the next event;
//! calling it again says it is done with the one it held), and handing events over in the
//! order they were published.
//! Does not: decide whether the consumer crashes (`drive.rs` asks at its next call after an
//! effect, `faults::strikes` decides) or record an effect (`store_calls.rs`, at the consumer's
//! commit).

use super::protocol::{self, hex, Call};
use super::state::Delivery;
use crate::base::ids::{EventId, JobId};
use crate::history::{Event, Observer};
use crate::model::semantics::QueueSemantics;
use crate::model::store::{Pk, Row, Table};
use crate::sim::kernel::Sim;
use serde_json::json;

impl<'s, O: Observer, Q: QueueSemantics> Sim<'s, O, Q> {
    pub(super) fn delivery_call(&mut self, slot: u32, line: u64, id: u64, call: Call) {
        match call {
            Call::Publish { event } => self.publish(slot, id, event),
            Call::Receive => {
                let sl = &mut self.progs().slots[slot as usize];
                if sl.receive_call.is_some() {
                    let m = "broker.receive while its earlier broker.receive has not returned";
                    return self.program_fault(slot, Some(line), m);
                }
                sl.receive_call = Some(id);
                if let Some(d) = sl.in_hand.take() {
                    self.delivered_to_consumer(d);
                }
                self.hand_to_consumer();
            }
            _ => unreachable!("a broker call"),
        }
    }

    fn publish(&mut self, slot: u32, id: u64, event: u64) {
        let row = self
            .progs()
            .store
            .row(Table::Outbox, &Pk::Id(event))
            .cloned();
        let Some(Row::Outbox(row)) = row else {
            let m = format!("no outbox row has event {event}");
            return self.post(slot, protocol::error(id, "no_such_event", m), None);
        };
        let key = self.program_key(&row.key).expect("checked at insert");
        let p = self.progs();
        let sends = p.sends.entry(event).or_insert(0);
        *sends += 1;
        let send = *sends;
        let sl = &mut p.slots[slot as usize];
        sl.unmarked += 1;
        let publisher = (slot, sl.life, id);
        self.record(Event::Published {
            event: EventId(event),
            key,
            job: JobId(row.job),
            output: row.output,
            send: Some(send),
            direct: false,
        });
        self.progs().broker.push_back(Delivery {
            event,
            key: row.key,
            job: JobId(row.job),
            output: row.output,
            publisher,
        });
        self.hand_to_consumer();
    }

    /// The consumer is done with `d`: the relay's publish returns.
    fn delivered_to_consumer(&mut self, d: Delivery) {
        let (publisher, life, id) = d.publisher;
        if self.progs().slots[publisher as usize].life == life {
            self.post(publisher, protocol::ok(id, json!({})), None);
        }
    }

    /// The next published event to a consumer waiting in `broker.receive`.
    fn hand_to_consumer(&mut self) {
        let p = self.progs();
        let c = p.consumer();
        let sl = &p.slots[c as usize];
        if sl.program.is_none() || sl.receive_call.is_none() || sl.in_hand.is_some() {
            return;
        }
        let Some(d) = p.broker.pop_front() else {
            return;
        };
        let sl = &mut p.slots[c as usize];
        let id = sl.receive_call.take().expect("checked");
        let message = protocol::ok(
            id,
            json!({
                "event": d.event,
                "key": d.key,
                "job": d.job.0,
                "output": hex(d.output),
            }),
        );
        sl.in_hand = Some(d);
        self.post(c, message, None);
    }
}
