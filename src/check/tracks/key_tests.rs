//! A key's track reads back what was written, and each operation on it does what it does on the
//! plain track, whether the track is in its first job's record or an orphan's.

use super::*;
use crate::base::ids::{DocumentId, OperationId, TenantId};

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

/// A live job of `key` with `payload`, to enqueue.
fn job_of(key: IdempotencyKey, payload: PayloadId) -> JobTrack {
    JobTrack::enqueued(TenantId(1), key, payload, 0, 0, 0)
}

#[test]
fn a_key_track_reads_back_as_it_was_written() {
    for home in [true, false] {
        reads_back(home);
    }
}

/// In its job's record (`home`: job 7 enqueued under it first), or an orphan's.
fn reads_back(home: bool) {
    let mut keys = Tracks::default();
    assert_eq!(seen(&keys.key(&key(3), None)), seen(&KeyTrack::default()));
    let mut want = KeyTrack::default();
    let payload = PayloadId {
        operation: OperationId(2),
        content: 0xdead_beef_0000_0001,
    };
    if home {
        keys.create(JobId(7), &job_of(key(3), payload));
    }
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
        keys.update_key(&key(3), change);
        assert_eq!(
            seen(&keys.key(&key(3), None)),
            seen(&want),
            "after step {step}"
        );
        // One job, applied from its result event: nothing apart.
        if home {
            assert_eq!(keys.side.is_empty(), step < 5, "after step {step}");
        }
    }
    // A second job is the newest, apart.
    match home {
        true => assert_eq!(keys.side.len(), 1),
        // An orphan key has no job of its own: its newest job and first committer are apart.
        false => assert_eq!(keys.orphans.side.len(), 2),
    }
    assert_eq!(keys.key(&key(3), None).first_job, JobId(7));
    let mut c = KeyCursor::default();
    assert_eq!(keys.next_key(&mut c).map(|(k, _)| k), Some(key(3)));
    assert!(keys.next_key(&mut c).is_none());
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

fn packed(keys: &mut Tracks, key: &IdempotencyKey, op: Op) -> String {
    let payload = |content| PayloadId {
        operation: OperationId(1),
        content,
    };
    match op {
        Op::Enqueue(job, content) => {
            format!(
                "{:?}",
                keys.create(JobId(job), &job_of(*key, payload(content)))
            )
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
            keys.publish_direct(key, None, EventId(e));
            String::new()
        }
        Op::Apply(at, e) => format!("{:?}", keys.apply(key, Some(JobId(4)), at, EventId(e))),
        Op::Review => {
            keys.review(key, Some(JobId(2)));
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
        let mut keys = Tracks::default();
        let mut want = KeyTrack::default();
        for (i, op) in history.iter().enumerate() {
            let said = packed(&mut keys, &key(n as u32), *op);
            assert_eq!(said, plain(&mut want, *op), "history {n}, step {i}");
            let got = keys.key(&key(n as u32), None);
            assert_eq!(seen(&got), seen(&want), "history {n}, step {i}");
            assert_eq!(keys.newest(&key(n as u32), None), want.newest());
            assert_eq!(keys.results(&key(n as u32), None), want.results);
        }
    }
    // Counts past a packed field's range, in a job's record.
    let mut keys = Tracks::default();
    let mut want = KeyTrack::default();
    for op in [Enqueue(3, 3), Commit(0, 3, Some(0))] {
        assert_eq!(packed(&mut keys, &key(0), op), plain(&mut want, op));
    }
    for i in 1..70_000 {
        let op = if i % 2 == 0 {
            Commit(i, 3, Some(i))
        } else {
            Publish(i)
        };
        assert_eq!(packed(&mut keys, &key(0), op), plain(&mut want, op));
    }
    assert_eq!(seen(&keys.key(&key(0), None)), seen(&want));
}

#[test]
fn values_apart_from_their_packed_field_are_kept_exactly() {
    let mut keys = Tracks::default();
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
    keys.update_key(&key(0), change);
    assert_eq!(seen(&keys.key(&key(0), None)), seen(&want));
    assert_eq!(keys.key(&key(0), None).first_job, JobId(u32::MAX));
    // Narrow again: the packed field wins over a stale side-table value.
    let narrow = |k: &mut KeyTrack| {
        k.first_at = 10;
        k.results = 2;
        k.set_result_event(EventId(6));
    };
    narrow(&mut want);
    keys.update_key(&key(0), narrow);
    assert_eq!(seen(&keys.key(&key(0), None)), seen(&want));
    // Applied before the first commit's time.
    let mut early = KeyTrack::default();
    let change = |k: &mut KeyTrack| {
        k.first_at = 500;
        k.results = 1;
        k.set_applied(400, EventId(0));
    };
    change(&mut early);
    keys.update_key(&key(1), change);
    assert_eq!(seen(&keys.key(&key(1), None)), seen(&early));
}

/// A document's keys (its tenants and versions; a key without a tenant): the first is found
/// through the document's head, the others through the map of other keys; each reads back its
/// own track, near documents and far ones alike.
#[test]
fn a_documents_several_keys_each_keep_their_own_track() {
    let mut keys = Tracks::default();
    let payload = |c| PayloadId {
        operation: OperationId(1),
        content: c,
    };
    let mut all = Vec::new();
    for document in [5, 3_000_000_000] {
        for (tenant, version) in [(Some(1), 1), (Some(2), 1), (Some(1), 2), (None, 1)] {
            let key = IdempotencyKey {
                tenant: tenant.map(TenantId),
                document: DocumentId(document),
                version,
            };
            let mut job = job_of(key, payload(all.len() as u64));
            job.tenant = TenantId(tenant.unwrap_or(9));
            all.push(key);
            let j = JobId(all.len() as u32 - 1);
            assert_eq!(keys.create(j, &job), None, "a new key");
        }
    }
    assert_eq!(keys.others.len(), 6);
    for (j, key) in all.iter().enumerate() {
        let j = JobId(j as u32);
        assert_eq!(keys.newest(key, None), Some(j));
        assert_eq!(keys.newest(key, Some(JobId(0))), Some(j), "a wrong hint");
        assert_eq!(keys.key(key, None).payload(), Some(payload(j.0 as u64)));
        keys.commit(key, (100 + j.0 as u64, j, 7), payload(j.0 as u64), None);
        assert_eq!(keys.results(key, None), 1);
    }
    let absent = IdempotencyKey {
        version: 3,
        ..all[0]
    };
    assert_eq!(keys.newest(&absent, None), None);
    let mut c = KeyCursor::default();
    let mut seen = Vec::new();
    while let Some((k, t)) = keys.next_key(&mut c) {
        seen.push(k);
        assert_eq!(
            t.first_commit().map(|f| f.1),
            Some(JobId(seen.len() as u32 - 1))
        );
    }
    assert_eq!(seen, all);
}

/// The heads guess a document's first key's record by runs: one run while each job is a new
/// document's first (documents numbered as the jobs, or from any start), a new one past a job
/// that is not, a map for a first key below a document seen before; every key is found, and a
/// guess that names a record of another document, or of another key of the document, is not
/// taken for the key's.
#[test]
fn the_heads_guess_first_keys_by_runs_and_keep_the_rest_apart() {
    let mut keys = Tracks::default();
    let payload = PayloadId {
        operation: OperationId(1),
        content: 0,
    };
    let with = |document, version| IdempotencyKey {
        version,
        ..key(document)
    };
    // Jobs 0..10 on documents 0..10; job 10 resubmits document 4 as a new version (a key of
    // its own, the document's second); jobs 11..20 on documents 10..19 (a run shifted by one);
    // job 20 on document 1000 (a run), job 21 on document 500 (apart), job 22 on document
    // 1002 (the run of 1000).
    let mut plan: Vec<IdempotencyKey> = (0..10).map(|d| with(d, 1)).collect();
    plan.push(with(4, 2));
    plan.extend((10..19).map(|d| with(d, 1)));
    plan.extend([with(1000, 1), with(500, 1), with(1002, 1)]);
    for (j, k) in plan.iter().enumerate() {
        assert_eq!(keys.create(JobId(j as u32), &job_of(*k, payload)), None);
    }
    assert_eq!(keys.heads.runs(), 3);
    assert_eq!(keys.heads.apart.len(), 1);
    assert_eq!(keys.others.len(), 1);
    for (j, k) in plan.iter().enumerate() {
        assert_eq!(keys.newest(k, None), Some(JobId(j as u32)), "{k:?}");
    }
    // Document 11's guess is record 12, which holds document 11: a key of it not enqueued yet is
    // not found there; document 19's guess (record 20) holds document 1000.
    assert_eq!(keys.newest(&with(11, 2), None), None);
    assert_eq!(keys.newest(&with(19, 1), None), None);
    assert_eq!(keys.create(JobId(23), &job_of(with(19, 1), payload)), None);
    assert_eq!(keys.heads.apart.len(), 2, "below document 1002: apart");
    assert_eq!(keys.newest(&with(19, 1), None), Some(JobId(23)));
    let mut c = KeyCursor::default();
    let mut seen = Vec::new();
    while let Some((k, _)) = keys.next_key(&mut c) {
        seen.push(k);
    }
    plan.push(with(19, 1));
    assert_eq!(seen, plan);
}
