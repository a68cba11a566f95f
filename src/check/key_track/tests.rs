//! The packed key track reads back what was written, and each packed operation does what it
//! does on the plain track.

use super::*;
use crate::ids::{DocumentId, TenantId};

fn key(document: u32) -> IdempotencyKey {
    IdempotencyKey {
        tenant: Some(TenantId(1)),
        document: DocumentId(document),
        version: 1,
    }
}

/// Everything a family can read of a track.
fn seen(k: &KeyTrack) -> String {
    format!(
        "{:?} {} {:?} {:?} {:?} {} {} {:?} {}",
        k.payload(),
        k.enqueued(),
        k.first_commit(),
        k.result_event(),
        k.applied(),
        k.results,
        k.events,
        k.newest(),
        k.reviewed()
    )
}

#[test]
fn a_packed_key_track_is_44_bytes() {
    assert_eq!(std::mem::size_of::<Packed>(), 44);
}

#[test]
fn a_key_track_reads_back_as_it_was_written() {
    let mut keys = KeyTracks::default();
    assert_eq!(seen(&keys.get(&key(3))), seen(&KeyTrack::default()));
    let mut want = KeyTrack::default();
    let payload = PayloadId {
        operation: OperationId(2),
        content: 0xdead_beef_0000_0001,
    };
    for step in 0..6 {
        let change = |k: &mut KeyTrack| match step {
            0 => {
                k.set_newest(JobId(7));
                k.set_enqueued();
                k.set_payload(payload);
            }
            1 => {
                (k.first_at, k.first_job, k.first_output) = (1_000, JobId(7), 0xabc);
                k.results += 1;
                k.set_result_event(EventId(5));
                k.events += 1;
            }
            2 => k.set_applied(1_250, EventId(5)),
            3 => k.set_reviewed(),
            4 => k.results += 1,
            _ => k.set_newest(JobId(9)),
        };
        change(&mut want);
        keys.update(&key(3), change);
        assert_eq!(seen(&keys.get(&key(3))), seen(&want), "after step {step}");
        // One job, applied from its result event: nothing apart.
        assert_eq!(keys.wide.is_empty(), step < 5, "after step {step}");
    }
    // A second job moves the first committer to the side table.
    assert_eq!(keys.wide.len(), 1);
    assert_eq!(keys.get(&key(3)).first_job, JobId(7));
    assert_eq!(keys.len(), 1);
    let (k, _) = keys.at(0);
    assert_eq!(k, key(3));
}

/// The operations the families call, on a plain track: what the packed ones must equal.
#[derive(Clone, Copy, Debug)]
enum Op {
    Enqueue(u32, u64),
    Commit(SimTime, u32, Option<u64>),
    Publish(u64),
    Apply(SimTime, u64),
    Review,
}

fn plain(k: &mut KeyTrack, op: Op) -> String {
    let payload = |content| PayloadId {
        operation: OperationId(1),
        content,
    };
    match op {
        Op::Enqueue(job, content) => {
            let before = k.newest();
            k.set_newest(JobId(job));
            if !k.enqueued() {
                k.set_enqueued();
                k.set_payload(payload(content));
            }
            format!("{before:?}")
        }
        Op::Commit(at, job, event) => {
            let first = k.first_commit();
            if first.is_none() {
                (k.first_at, k.first_job, k.first_output) = (at, JobId(job), at * 3);
                k.set_payload(payload(job as u64));
            }
            k.results += 1;
            if let Some(e) = event {
                k.set_result_event(EventId(e));
                k.events += 1;
            }
            format!("{:?}", (first, k.results))
        }
        Op::Publish(e) => {
            k.events += 1;
            if k.result_event().is_none() {
                k.set_result_event(EventId(e));
            }
            String::new()
        }
        Op::Apply(at, e) => {
            let earlier = k.applied();
            if earlier.is_none() {
                k.set_applied(at, EventId(e));
            }
            format!("{:?}", (earlier, k.first_commit()))
        }
        Op::Review => {
            k.set_reviewed();
            String::new()
        }
    }
}

fn packed(keys: &mut KeyTracks, key: &IdempotencyKey, op: Op) -> String {
    let payload = |content| PayloadId {
        operation: OperationId(1),
        content,
    };
    match op {
        Op::Enqueue(job, content) => {
            format!("{:?}", keys.enqueue(key, JobId(job), payload(content)))
        }
        Op::Commit(at, job, event) => {
            let r = keys.commit(
                key,
                (at, JobId(job), at * 3),
                payload(job as u64),
                event.map(EventId),
            );
            format!("{r:?}")
        }
        Op::Publish(e) => {
            keys.publish_direct(key, EventId(e));
            String::new()
        }
        Op::Apply(at, e) => format!("{:?}", keys.apply(key, at, EventId(e))),
        Op::Review => {
            keys.review(key);
            String::new()
        }
    }
}

#[test]
fn each_operation_on_a_packed_track_does_what_it_does_on_a_plain_one() {
    use Op::*;
    let big = u32::MAX as u64 + 5;
    let histories: &[&[Op]] = &[
        // The usual life of a key, then late records: a second commit, a second apply.
        &[
            Enqueue(4, 9),
            Commit(100, 4, Some(1)),
            Apply(120, 1),
            Review,
        ],
        &[
            Enqueue(4, 9),
            Commit(100, 4, Some(1)),
            Commit(130, 4, None),
            Apply(140, 2),
        ],
        &[
            Enqueue(4, 9),
            Commit(100, 4, None),
            Publish(8),
            Publish(9),
            Apply(90, 8),
        ],
        // A second job under the key (a mode other than `forever`), before and after a commit.
        &[
            Enqueue(4, 9),
            Enqueue(6, 10),
            Commit(100, 6, Some(2)),
            Apply(150, 2),
        ],
        &[
            Enqueue(4, 9),
            Commit(100, 4, Some(2)),
            Enqueue(6, 10),
            Apply(150, 2),
        ],
        &[
            Enqueue(4, 9),
            Commit(100, 5, Some(2)),
            Apply(100, 2),
            Enqueue(5, 1),
        ],
        // Records a broken history can hold: an apply or a commit with no enqueue, an apply
        // before the commit, ids and times too wide for their fields.
        &[
            Apply(50, 3),
            Commit(100, 1, Some(3)),
            Enqueue(1, 2),
            Apply(60, 3),
        ],
        &[
            Commit(big, 7, Some(big)),
            Apply(big + 1, big),
            Publish(big + 2),
        ],
        &[
            Publish(big),
            Enqueue(0, 0),
            Commit(10, 0, None),
            Apply(big * 2, big),
        ],
        &[
            Enqueue(2, 2),
            Commit(10, 2, Some(1)),
            Apply(10 + big, 1),
            Review,
        ],
    ];
    for (n, history) in histories.iter().enumerate() {
        let mut keys = KeyTracks::default();
        let mut want = KeyTrack::default();
        for (i, op) in history.iter().enumerate() {
            let said = packed(&mut keys, &key(n as u32), *op);
            assert_eq!(said, plain(&mut want, *op), "history {n}, step {i}");
            let got = keys.get(&key(n as u32));
            assert_eq!(seen(&got), seen(&want), "history {n}, step {i}");
            assert_eq!(keys.newest(&key(n as u32)), want.newest());
            assert_eq!(keys.results(&key(n as u32)), want.results);
        }
    }
    // Counts past a packed field's range.
    let mut keys = KeyTracks::default();
    let mut want = KeyTrack::default();
    for i in 0..70_000 {
        let op = if i % 2 == 0 {
            Commit(i, 3, Some(i))
        } else {
            Publish(i)
        };
        assert_eq!(packed(&mut keys, &key(0), op), plain(&mut want, op));
    }
    assert_eq!(seen(&keys.get(&key(0))), seen(&want));
}

#[test]
fn values_apart_from_their_packed_field_are_kept_exactly() {
    let mut keys = KeyTracks::default();
    let mut want = KeyTrack::default();
    let change = |k: &mut KeyTrack| {
        // Applied before any commit, from another event, at a time before the commit's.
        k.set_applied(u64::MAX - 3, EventId(u64::MAX));
        (k.first_at, k.first_job, k.first_output) = (1 << 40, JobId(u32::MAX), u64::MAX);
        k.set_result_event(EventId(1 << 33));
        k.results = 70_000;
        k.events = u32::MAX;
        k.set_newest(JobId(4));
    };
    change(&mut want);
    keys.update(&key(0), change);
    assert_eq!(seen(&keys.get(&key(0))), seen(&want));
    assert_eq!(keys.get(&key(0)).first_job, JobId(u32::MAX));
    // Narrow again: the packed field wins over a stale side-table value.
    let narrow = |k: &mut KeyTrack| {
        k.first_at = 10;
        k.results = 2;
        k.set_result_event(EventId(6));
    };
    narrow(&mut want);
    keys.update(&key(0), narrow);
    assert_eq!(seen(&keys.get(&key(0))), seen(&want));
    // Applied before the first commit's time.
    let mut early = KeyTrack::default();
    let change = |k: &mut KeyTrack| {
        k.first_at = 500;
        k.results = 1;
        k.set_applied(400, EventId(0));
    };
    change(&mut early);
    keys.update(&key(1), change);
    assert_eq!(seen(&keys.get(&key(1))), seen(&early));
}
