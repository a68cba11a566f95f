//! A key's track reads back what was written, and each writer does to it what it does to the
//! plain track (`KeyTrack` and `KeyRare`, by the rules of docs/checker-rules.md), whether the
//! track is in its first job's record or an orphan's.

use super::*;
use crate::base::ids::{DocumentId, OperationId, TenantId};

fn key(document: u32) -> IdempotencyKey {
    IdempotencyKey {
        tenant: Some(TenantId(1)),
        document: DocumentId(document),
        version: 1,
    }
}

fn payload(content: u64) -> PayloadId {
    PayloadId {
        operation: OperationId(1),
        content,
    }
}

/// A live job of `key` with `payload`, to enqueue (at 50).
fn job_of(key: IdempotencyKey, payload: PayloadId) -> JobTrack {
    JobTrack::enqueued(TenantId(1), key, payload, 50, 50, None)
}

/// What the history said of a key, kept plain: what the packed track must read back as.
#[derive(Debug, Default, PartialEq, Hash)]
struct Plain {
    track: KeyTrack,
    rare: KeyRare,
}

/// The records that change a key, as the reducer passes them to the writers.
#[derive(Clone, Copy, Debug, Hash)]
enum Op {
    /// `enqueued` of job (`u32`) with a payload of content (`u64`).
    Enqueue(u32, u64),
    /// `result_committed` at, by job, with its event; the output is `at * 3`, the payload's
    /// content the job's number.
    Commit(SimTime, u32, Option<u64>),
    /// `published` directly (by job 2, output the event).
    Publish(u64),
    /// `effect_applied` from the event.
    Apply(u64),
    Review,
}

/// What a record does to a key's plain track; what the writer returns, as text.
fn plain(p: &mut Plain, op: Op) -> String {
    let k = &mut p.track;
    match op {
        Op::Enqueue(job, content) => {
            let before = k.newest;
            k.newest = Some(JobId(job));
            if !k.enqueued {
                if k.results == 0 {
                    k.payload = Some(payload(content));
                }
                k.enqueued = true;
            }
            format!("{before:?}")
        }
        Op::Commit(at, job, event) => {
            let w = Written {
                job: JobId(job),
                output: at * 3,
                event: event.map(EventId),
            };
            if k.results == 0 {
                k.first = Some(FirstCommit {
                    at,
                    job: w.job,
                    output: w.output,
                    event: w.event,
                });
                k.payload = Some(payload(job as u64));
            } else {
                p.rare.commits.push(w);
                k.rare = true;
            }
            k.results += 1;
            String::new()
        }
        Op::Publish(e) => {
            if !p.rare.direct.iter().any(|d| d.event == Some(EventId(e))) {
                p.rare.direct.push(Written {
                    job: JobId(2),
                    output: e,
                    event: Some(EventId(e)),
                });
            }
            k.rare = true;
            String::new()
        }
        Op::Apply(e) => {
            k.applied.get_or_insert(EventId(e));
            String::new()
        }
        Op::Review => {
            k.reviewed = true;
            String::new()
        }
    }
}

/// The same record through the packed writers (a key registered first, as the reducer does;
/// the hints are the jobs the records name, right or wrong).
fn packed(keys: &mut Tracks, key: &IdempotencyKey, op: Op) -> String {
    match op {
        Op::Enqueue(job, content) => {
            format!(
                "{:?}",
                keys.create(JobId(job), &job_of(*key, payload(content)))
            )
        }
        Op::Commit(at, job, event) => {
            let k = keys.register(key, Some(JobId(job)));
            let w = Written {
                job: JobId(job),
                output: at * 3,
                event: event.map(EventId),
            };
            keys.commit(&k, at, w, payload(job as u64));
            String::new()
        }
        Op::Publish(e) => {
            let k = keys.register(key, None);
            let w = Written {
                job: JobId(2),
                output: e,
                event: Some(EventId(e)),
            };
            keys.publish_direct(&k, w);
            String::new()
        }
        Op::Apply(e) => {
            let k = keys.register(key, Some(JobId(4)));
            keys.apply(&k, EventId(e));
            String::new()
        }
        Op::Review => {
            let k = keys.register(key, Some(JobId(2)));
            keys.review(&k);
            String::new()
        }
    }
}

/// Applies `op` to both, and compares everything a rule can read of the key.
fn step(keys: &mut Tracks, want: &mut Plain, key: &IdempotencyKey, op: Op, what: &str) {
    assert_eq!(packed(keys, key, op), plain(want, op), "{what}: {op:?}");
    assert_eq!(keys.key(key, None), want.track, "{what}: {op:?}");
    assert_eq!(
        keys.key_rare(key).cloned().unwrap_or_default(),
        want.rare,
        "{what}: {op:?}"
    );
    assert_eq!(keys.newest(key, None), want.track.newest, "{what}: {op:?}");
}

#[test]
fn a_key_track_reads_back_as_it_was_written() {
    for home in [true, false] {
        reads_back(home);
    }
}

/// In its job's record (`home`: job 7 enqueued under it first), or an orphan's (the history
/// names it before any job is enqueued under it).
fn reads_back(home: bool) {
    use Op::*;
    let mut keys = Tracks::default();
    let mut want = Plain::default();
    let k = key(3);
    assert_eq!(keys.key(&k, None), KeyTrack::default());
    match home {
        true => step(&mut keys, &mut want, &k, Enqueue(7, 0xdead_beef), "home"),
        false => {
            keys.register(&k, None);
            assert_eq!(keys.key(&k, None), KeyTrack::default(), "named, empty");
        }
    }
    let steps = [
        Commit(1_000, 7, Some(5)),
        Apply(5),
        Review,
        Commit(1_100, 7, None),
        Enqueue(9, 4),
    ];
    for (n, op) in steps.into_iter().enumerate() {
        step(&mut keys, &mut want, &k, op, &format!("home {home}"));
        // One job, applied from its result event: nothing apart (a second commit goes to the
        // key's rare parts).
        if home {
            assert_eq!(keys.side.is_empty(), n < 4, "after step {n}");
        }
    }
    // A second job is the newest, apart.
    match home {
        true => assert_eq!(keys.side.len(), 1),
        // An orphan key has no job of its own: its newest job and first committer are apart.
        false => assert_eq!(keys.orphans.side.len(), 2),
    }
    assert_eq!(keys.key(&k, None).first.map(|c| c.job), Some(JobId(7)));
    let mut c = KeyCursor::default();
    assert_eq!(keys.next_key(&mut c).map(|(k, _)| k), Some(key(3)));
    assert!(keys.next_key(&mut c).is_none());
}

#[test]
fn each_writer_on_a_packed_track_does_what_it_does_on_a_plain_one() {
    use Op::*;
    let big = u32::MAX as u64 + 5;
    let histories: &[&[Op]] = &[
        // The usual life of a key, then late records: a second commit, a second apply.
        &[Enqueue(4, 9), Commit(100, 4, Some(1)), Apply(1), Review],
        &[
            Enqueue(4, 9),
            Commit(100, 4, Some(1)),
            Commit(130, 4, None),
            Apply(2),
            Apply(1),
        ],
        &[
            Enqueue(4, 9),
            Commit(100, 4, None),
            Publish(8),
            Publish(9),
            Publish(8),
            Apply(8),
        ],
        // A second job under the key (a mode other than `forever`), before and after a commit.
        &[
            Enqueue(4, 9),
            Enqueue(6, 10),
            Commit(100, 6, Some(2)),
            Apply(2),
        ],
        &[
            Enqueue(4, 9),
            Commit(100, 4, Some(2)),
            Enqueue(6, 10),
            Apply(2),
        ],
        &[
            Enqueue(4, 9),
            Commit(100, 5, Some(2)),
            Apply(2),
            Enqueue(5, 1),
        ],
        // Records a broken history can hold: an apply or a commit with no enqueue, an apply
        // before the commit, a commit before the enqueue's time, ids and times too wide for
        // their fields.
        &[Apply(3), Commit(100, 1, Some(3)), Enqueue(1, 2), Apply(3)],
        &[Commit(big, 7, Some(big)), Apply(big), Publish(big + 2)],
        &[Publish(big), Enqueue(0, 0), Commit(10, 0, None), Apply(big)],
        &[Enqueue(2, 2), Commit(10, 2, Some(1)), Apply(1), Review],
        &[Review, Commit(10, 2, Some(1)), Enqueue(3, 3), Enqueue(8, 4)],
    ];
    for (n, history) in histories.iter().enumerate() {
        let mut keys = Tracks::default();
        let mut want = Plain::default();
        for (i, op) in history.iter().enumerate() {
            let what = format!("history {n}, step {i}");
            step(&mut keys, &mut want, &key(n as u32), *op, &what);
        }
    }
    // Counts past a packed field's range (3 bits of results), in a job's record.
    let mut keys = Tracks::default();
    let mut want = Plain::default();
    for op in [Enqueue(3, 3), Commit(0, 3, Some(0))] {
        step(&mut keys, &mut want, &key(0), op, "counts");
    }
    for i in 1..40 {
        let op = if i % 2 == 0 {
            Commit(i, 3, Some(i))
        } else {
            Publish(i)
        };
        step(&mut keys, &mut want, &key(0), op, "counts");
    }
    assert_eq!(keys.key(&key(0), None).results, 20);
    assert!(!keys.side.is_empty(), "20 results: in the side table");
}

/// Every value of a key's track too wide for its packed field, or not the one its record
/// implies, is kept exactly apart, in a job's record and in an orphan's. (A packed field written
/// again narrower, before: the writers now set a key's first commit, results and newest job
/// once or upward only, so a key's field never narrows again.)
#[test]
fn values_apart_from_their_packed_field_are_kept_exactly() {
    use Op::*;
    for home in [true, false] {
        let mut keys = Tracks::default();
        let mut want = Plain::default();
        let k = key(0);
        let what = format!("home {home}");
        if home {
            step(&mut keys, &mut want, &k, Enqueue(0, 9), &what);
        }
        // Applied before any commit, from another event than the commit's, one past 32 bits;
        // the first commit far from the enqueue, by a job no record holds, with an event past
        // 32 bits; results past 3 bits; a newest job not the record's.
        let mut ops = vec![Apply(u64::MAX), Commit(1 << 40, u32::MAX, Some(1 << 33))];
        ops.extend((0..8).map(|i| Commit(i, 1, None)));
        ops.push(Enqueue(4, 1));
        for op in ops {
            step(&mut keys, &mut want, &k, op, &what);
        }
        let side = match home {
            true => &keys.side,
            false => &keys.orphans.side,
        };
        // The applied event, the first commit's time, job and event, the results, the newest.
        assert_eq!(side.len(), 6, "{what}");
        let first = keys.key(&k, None).first.unwrap();
        assert_eq!(
            (first.at, first.job, first.event),
            (1 << 40, JobId(u32::MAX), Some(EventId(1 << 33)))
        );
    }
}

/// A document's keys (its tenants and versions; a key without a tenant): the first is found
/// through the document's head, the others through the map of other keys; each reads back its
/// own track, near documents and far ones alike.
#[test]
fn a_documents_several_keys_each_keep_their_own_track() {
    let mut keys = Tracks::default();
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
        assert_eq!(keys.key(key, None).payload, Some(payload(j.0 as u64)));
        let at = keys.register(key, Some(j));
        let w = Written {
            job: j,
            output: 7,
            event: None,
        };
        keys.commit(&at, 100 + j.0 as u64, w, payload(j.0 as u64));
        assert_eq!(keys.key(key, None).results, 1);
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
        assert_eq!(t.first.map(|f| f.job), Some(JobId(seen.len() as u32 - 1)));
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
    let payload = payload(0);
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
