//! The records read back what was written, exactly, through every storage path: a job's track
//! (live, finished, with rare parts and values too wide; enqueue times by runs of job ids; a
//! renewal kept apart), a key's (in its first job's record, or an orphan's), and a key with
//! several jobs.

use super::*;
use crate::base::ids::{DocumentId, EventId, Fence, OperationId, TenantId, WorkerId};
use crate::check::job_track::{DlqEntry, Failure, Terminal};

fn track() -> JobTrack {
    JobTrack {
        tenant: TenantId(3),
        key: IdempotencyKey {
            tenant: Some(TenantId(3)),
            document: DocumentId(77),
            version: 65_535,
        },
        payload: PayloadId {
            operation: OperationId(2),
            content: 0xdead_beef_0000_0001,
        },
        enqueued_at: 1_000,
        deadline_at: 31_000,
        visible_from: 1_200,
        fence: Fence(9),
        holder: WorkerId(4),
        leased_at: 1_300,
        renewed_at: 1_600,
        renewed: true,
        lease_held: true,
        leases: 2,
        place: Place::Leased,
        terminal: Some((Terminal::DeadLettered, 2_000)),
        failure: Some(Failure::new(Fence(9), "timeout", 1_900)),
        dlq: DlqEntry::Held,
        reprocessed_from: Some(JobId(5)),
        audited: true,
        reprocessed: false,
        derived_hash: None,
    }
}

/// Creates the job (live) if new, then gives it track `t` (finished if `t` has a terminal record).
fn set(tracks: &mut Tracks, job: JobId, t: &JobTrack) {
    if tracks.get(job, 30_000).is_none() {
        let live = JobTrack {
            terminal: None,
            ..*t
        };
        tracks.create(job, &live);
    }
    tracks.update(job, 30_000, |x| *x = *t);
}

fn same(a: &JobTrack, b: &JobTrack) -> bool {
    format!("{a:?}") == format!("{b:?}")
}

#[test]
fn a_live_track_is_plain_until_its_terminal_record_then_packed_and_its_slot_reused() {
    let mut tracks = Tracks::default();
    let mut t = track();
    t.terminal = None;
    tracks.create(JobId(0), &t);
    tracks.create(JobId(1), &t);
    assert_eq!(tracks.live_capacity(), 2);
    tracks.update(JobId(0), 30_000, |t| t.leases = 3);
    assert_eq!(tracks.get(JobId(0), 30_000).unwrap().leases, 3);
    tracks.set_place(JobId(0), Place::Ready);
    assert_eq!(tracks.place(JobId(0)), Some(Place::Ready));
    tracks.update(JobId(0), 30_000, |t| {
        t.terminal = Some((Terminal::Acked, 5_000))
    });
    let done = tracks.get(JobId(0), 30_000).unwrap();
    assert_eq!(done.leases, 3);
    assert_eq!(done.terminal, Some((Terminal::Acked, 5_000)));
    assert_eq!(tracks.place(JobId(0)), Some(Place::Ready));
    // The freed slot serves the next job; the packed one is untouched by it.
    tracks.create(JobId(2), &t);
    assert_eq!(tracks.live_capacity(), 2);
    assert_eq!(tracks.get(JobId(0), 30_000).unwrap().leases, 3);
    assert_eq!(tracks.get(JobId(2), 30_000).unwrap().leases, 2);
    // A record naming a finished job (a zombie's write) changes its packed track.
    tracks.update(JobId(0), 30_000, |t| t.fence = Fence(11));
    assert_eq!(tracks.get(JobId(0), 30_000).unwrap().fence, Fence(11));
    assert!(tracks.update(JobId(7), 30_000, |_| ()).is_none());
}

#[test]
fn a_track_reads_back_as_it_was_written_and_a_record_takes_56_bytes() {
    assert_eq!(std::mem::size_of::<PackedTrack>(), 56);
    let mut tracks = Tracks::default();
    let t = track();
    set(&mut tracks, JobId(2), &t);
    assert!(same(&tracks.get(JobId(2), 30_000).unwrap(), &t));
    assert!(tracks.get(JobId(1), 30_000).is_none(), "a gap is no job");
    assert!(tracks.get(JobId(3), 30_000).is_none());
    assert!(tracks.side.is_empty());
    tracks.set_place(JobId(2), Place::Done);
    assert_eq!(tracks.place(JobId(2)), Some(Place::Done));
}

#[test]
fn a_finished_jobs_rare_parts_come_and_go_with_its_records() {
    let mut tracks = Tracks::default();
    let mut t = track();
    t.failure = None;
    t.reprocessed_from = None;
    set(&mut tracks, JobId(4), &t);
    assert!(
        tracks.rare.is_empty(),
        "a plain finished job keeps no rare part"
    );
    // A zombie's failed attempt after the terminal record, then its decision.
    tracks.update(JobId(4), 30_000, |t| {
        t.failure = Some(Failure::new(Fence(12), "schema_invalid", 2_500))
    });
    let f = tracks.get(JobId(4), 30_000).unwrap().failure.unwrap();
    assert_eq!(
        (f.fence, f.at, f.error()),
        (Fence(12), 2_500, "schema_invalid")
    );
    assert_eq!(tracks.rare.len(), 1);
    tracks.update(JobId(4), 30_000, |t| t.failure = None);
    assert!(tracks.get(JobId(4), 30_000).unwrap().failure.is_none());
    assert!(tracks.rare.is_empty());
    // A reprocess's successor keeps its link once finished.
    t.reprocessed_from = Some(JobId(4));
    set(&mut tracks, JobId(9), &t);
    assert_eq!(
        tracks.get(JobId(9), 30_000).unwrap().reprocessed_from,
        Some(JobId(4))
    );
    assert!(tracks
        .get(JobId(4), 30_000)
        .unwrap()
        .reprocessed_from
        .is_none());
}

#[test]
fn values_too_wide_for_their_packed_field_are_kept_exactly() {
    let mut tracks = Tracks::default();
    let mut t = track();
    // A time before the enqueue (a store's clock), one far after it, and 64-bit tokens.
    t.visible_from = 999;
    t.leased_at = 1_000 + (1 << 40);
    t.renewed_at = u64::MAX;
    t.fence = Fence(u64::MAX - 1);
    t.holder = WorkerId(70_000);
    t.leases = 65_535;
    t.failure = Some(Failure::new(Fence(1 << 33), "timeout", 0));
    // Finished (tracks of live jobs are kept plain), long after its enqueue.
    t.terminal = Some((Terminal::Cancelled, 1_000 + (1 << 35)));
    t.reprocessed_from = None;
    set(&mut tracks, JobId(0), &t);
    assert!(same(&tracks.get(JobId(0), 30_000).unwrap(), &t));
    assert!(!tracks.side.is_empty());
    // Narrow again: the packed field wins over a stale side-table value.
    t.fence = Fence(10);
    set(&mut tracks, JobId(0), &t);
    assert!(same(&tracks.get(JobId(0), 30_000).unwrap(), &t));
}

#[test]
fn a_finished_job_keeps_its_payload_when_its_key_takes_another() {
    let mut tracks = Tracks::default();
    let mut t = track();
    t.failure = None;
    t.reprocessed_from = None;
    set(&mut tracks, JobId(0), &t);
    assert!(tracks.rare.is_empty(), "the job's payload is its key's");
    let other = PayloadId {
        operation: OperationId(1),
        content: 5,
    };
    // A first commit under the key by another job (a broken history) takes its payload.
    tracks.commit(&t.key, (3_000, JobId(8), 0xabc), other, None);
    assert_eq!(tracks.key(&t.key, Some(JobId(0))).payload(), Some(other));
    assert!(same(&tracks.get(JobId(0), 30_000).unwrap(), &t));
    // A payload mutated after the end, then back.
    tracks.update(JobId(0), 30_000, |x| x.payload = other);
    assert_eq!(tracks.get(JobId(0), 30_000).unwrap().payload, other);
    tracks.update(JobId(0), 30_000, |x| x.payload = t.payload);
    assert!(same(&tracks.get(JobId(0), 30_000).unwrap(), &t));
}

/// A key with several jobs (a `unique` mode other than `forever`): its track stays in its first
/// job's record, the others' records hold their own job's part, and every job reads back.
#[test]
fn a_key_with_several_jobs_keeps_one_track_and_every_jobs_own() {
    let mut tracks = Tracks::default();
    let base = track();
    let mut want = Vec::new();
    for j in 0..4u32 {
        let mut t = JobTrack {
            enqueued_at: 1_000 + j as u64 * 100,
            deadline_at: 31_000 + j as u64 * 100,
            payload: PayloadId {
                operation: OperationId(2),
                content: j as u64,
            },
            failure: None,
            reprocessed_from: None,
            terminal: None,
            ..base
        };
        let before = tracks.create(JobId(j), &t);
        assert_eq!(before, j.checked_sub(1).map(JobId));
        assert_eq!(tracks.newest(&t.key, Some(JobId(j))), Some(JobId(j)));
        if j == 2 {
            // The third job commits first, with its own payload, then ends.
            let commit = (1_500, JobId(2), 0x77);
            assert_eq!(
                tracks.commit(&t.key, commit, t.payload, Some(EventId(4))),
                (None, 1)
            );
        }
        if j % 2 == 0 {
            t.terminal = Some((Terminal::Acked, 1_900));
            tracks.update(JobId(j), 30_000, |x| *x = t);
        }
        want.push(t);
    }
    for (j, t) in want.iter().enumerate() {
        assert!(
            same(&tracks.get(JobId(j as u32), 30_000).unwrap(), t),
            "job {j}"
        );
    }
    let k = tracks.key(&base.key, Some(JobId(3)));
    assert_eq!(
        k.payload().unwrap().content,
        2,
        "the first commit's payload"
    );
    assert_eq!(k.first_commit(), Some((1_500, JobId(2), 0x77)));
    assert_eq!(k.newest(), Some(JobId(3)));
    assert_eq!(k.result_event(), Some(EventId(4)));
    let mut c = KeyCursor::default();
    assert_eq!(tracks.next_key(&mut c).map(|(key, _)| key), Some(base.key));
    assert!(tracks.next_key(&mut c).is_none(), "one key");
}

#[test]
fn the_keys_are_visited_in_the_order_the_history_first_named_them() {
    let mut tracks = Tracks::default();
    let key = |document| IdempotencyKey {
        tenant: Some(TenantId(3)),
        document: DocumentId(document),
        version: 1,
    };
    let live = |document| JobTrack {
        key: key(document),
        terminal: None,
        ..track()
    };
    // A key named first by an apply (an orphan), jobs' keys, another orphan, a job enqueued
    // under the first orphan (its key stays the orphan's), a far document.
    tracks.apply(&key(50), Some(JobId(0)), 10, EventId(1));
    tracks.create(JobId(0), &live(7));
    tracks.create(JobId(1), &live(3));
    tracks.review(&key(60), None);
    tracks.create(JobId(2), &live(50));
    tracks.create(JobId(3), &live(4_000_000_000));
    tracks.create(JobId(4), &live(7));
    let mut c = KeyCursor::default();
    let mut seen = Vec::new();
    while let Some((k, _)) = tracks.next_key(&mut c) {
        seen.push(k.document.0);
    }
    assert_eq!(seen, [50, 7, 3, 60, 4_000_000_000]);
    assert_eq!(tracks.newest(&key(50), Some(JobId(2))), Some(JobId(2)));
    assert_eq!(tracks.newest(&key(7), Some(JobId(0))), Some(JobId(4)));
    assert_eq!(
        tracks.newest(&key(4_000_000_000), Some(JobId(1))),
        Some(JobId(3))
    );
    assert!(tracks.key(&key(50), None).applied().is_some());
    assert_eq!(
        tracks.heads.runs(),
        2,
        "document 3 is apart, 4e9 a run of its own"
    );
    assert_eq!(tracks.heads.apart.len(), 1);
}

#[test]
fn holders_and_lease_counts_past_a_byte_are_kept_exactly() {
    let mut tracks = Tracks::default();
    let mut t = track();
    t.failure = None;
    t.reprocessed_from = None;
    for (j, (holder, leases)) in [(254, 254), (255, 255), (256, 1_000), (u32::MAX, u32::MAX)]
        .into_iter()
        .enumerate()
    {
        t.holder = WorkerId(holder);
        t.leases = leases;
        set(&mut tracks, JobId(j as u32), &t);
        assert!(same(&tracks.get(JobId(j as u32), 30_000).unwrap(), &t));
        assert_eq!(tracks.side.is_empty(), j == 0, "job {j}");
        let (ended, got) = tracks.ended_and_leases(JobId(j as u32)).unwrap();
        assert!(ended);
        assert_eq!(got, leases as u64);
    }
}

/// Enqueue times: one run of job ids for times that grow, a new run where a time does not fit
/// (a jump past 32 bits, a time far back); all read back exactly.
#[test]
fn enqueue_times_read_back_exactly_whatever_their_order() {
    // A microsecond history on Unix-epoch times: runs of ~35 minutes.
    let start = 1_733_300_000_000_000u64;
    let times = [
        (0, start),
        (1, start + 5),
        (2, start + 3),             // a little back: the same run
        (3, start - 2_000_000_000), // 33 minutes back: the same run
        (4, start + (1 << 33)),     // 2.4 hours on: a new run
        (6, start + (1 << 33) + 1), // a gap in the ids
        (7, 0),                     // the time 0: a new run
        (9, u64::MAX),              // the end of time: a new run
    ];
    let mut tracks = Tracks::default();
    let mut want = Vec::new();
    for (j, at) in times {
        let mut t = track();
        (t.enqueued_at, t.visible_from, t.leased_at) = (at, at, at);
        t.renewed_at = at;
        t.deadline_at = at.saturating_add(30_000);
        t.terminal = Some((Terminal::Acked, at));
        (t.failure, t.reprocessed_from) = (None, None);
        set(&mut tracks, JobId(j), &t);
        want.push((j, t));
    }
    assert_eq!(tracks.epochs.runs(), 4);
    for (j, t) in &want {
        assert!(same(&tracks.get(JobId(*j), 30_000).unwrap(), t), "job {j}");
    }
    // A run's first commit is an offset from the job's own enqueue time.
    let (_, t9) = want.iter().find(|(j, _)| *j == 9).unwrap();
    tracks.commit(&t9.key, (u64::MAX, JobId(9), 1), t9.payload, None);
    assert_eq!(
        tracks.key(&t9.key, Some(JobId(9))).first_commit(),
        Some((u64::MAX, JobId(9), 1))
    );
}

/// A finished job's renewal time: its lease time unless it may still be read. Kept apart (and
/// exact, a wide value in the side table) while a lease is held, or under a retry formula that
/// reads what was left of the lease; else its lease time, which no rule tells from it (a
/// finished job's lease is not held, and a lease taken after the end renews at its lease time).
#[test]
fn a_finished_jobs_renewal_is_kept_only_where_it_can_be_read() {
    let mut t = track();
    (t.failure, t.reprocessed_from) = (None, None);
    t.renewed_at = 1_700;
    for (keep, held) in [(false, false), (false, true), (true, false), (true, true)] {
        let mut tracks = Tracks::default();
        tracks.keep_renewals(keep);
        t.lease_held = held;
        set(&mut tracks, JobId(0), &t);
        let got = tracks.get(JobId(0), 30_000).unwrap();
        if keep || held {
            assert!(same(&got, &t), "keep {keep}, held {held}");
        } else {
            assert_eq!(got.renewed_at, t.leased_at);
            assert!(same(
                &JobTrack {
                    renewed_at: t.renewed_at,
                    ..got
                },
                &t
            ));
            assert!(tracks.renewals.is_empty(), "nothing kept apart");
        }
        // A late lease: held, renewed at its own time; then released.
        tracks.update(JobId(0), 30_000, |x| {
            (x.leased_at, x.renewed_at, x.renewed, x.lease_held) = (5_000, 5_000, false, true)
        });
        let got = tracks.get(JobId(0), 30_000).unwrap();
        assert_eq!(
            (got.leased_at, got.renewed_at, got.lease_held),
            (5_000, 5_000, true)
        );
        // Far from the enqueue: the side table.
        tracks.update(JobId(0), 30_000, |x| x.renewed_at = u64::MAX);
        assert_eq!(tracks.get(JobId(0), 30_000).unwrap().renewed_at, u64::MAX);
        tracks.update(JobId(0), 30_000, |x| x.renewed_at = 5_000);
        assert_eq!(tracks.get(JobId(0), 30_000).unwrap().renewed_at, 5_000);
    }
}

/// A job created out of the order of ids (neither the reader nor the kernel does that: a debug
/// build refuses it in `Tracks::create`) takes its run's base if its time fits, else the side
/// table's place; it starts no run.
#[test]
fn an_enqueue_time_out_of_the_order_of_ids_fits_its_run_or_goes_apart() {
    let mut e = Epochs::default();
    assert_eq!(e.put(3, 7, false), WIDE, "no run yet");
    assert_eq!(e.put(3, 7, true), 7, "the time 0 is the base");
    assert_eq!(e.put(10, 1 << 40, true), 1 << 31);
    assert_eq!(e.runs(), 2);
    assert_eq!(e.put(5, 100, false), 100, "job 5 in job 3's run");
    assert_eq!(e.base(5), 0);
    assert_eq!(
        e.put(12, (1 << 40) - 1, true),
        (1 << 31) - 1,
        "a step back in the run"
    );
    assert_eq!(e.put(11, 1 << 35, false), WIDE, "does not fit job 10's run");
    assert_eq!(e.put(2, 1, false), WIDE, "before every run");
    assert_eq!(e.runs(), 2);
    assert_eq!(e.base(12), (1 << 40) - (1 << 31));
}

/// A payload's content: 0 (a generated document's default) in the record's flags alone; any
/// other in a map while few, then in a column by record; each reads back exactly, for the key
/// and for a finished job whose payload is not its key's.
#[test]
fn contents_other_than_0_are_kept_apart_exactly() {
    let mut tracks = Tracks::default();
    let base = JobTrack {
        failure: None,
        reprocessed_from: None,
        ..track()
    };
    let content = |j: u32| {
        if j.is_multiple_of(3) {
            0
        } else {
            (j as u64) << 40 | 7
        }
    };
    let mut want = Vec::new();
    for j in 0..3_000u32 {
        let t = JobTrack {
            key: IdempotencyKey {
                document: DocumentId(j),
                ..base.key
            },
            payload: PayloadId {
                operation: OperationId(2),
                content: content(j),
            },
            ..base
        };
        set(&mut tracks, JobId(j), &t);
        want.push(t);
        if j == 1_000 {
            assert!(!tracks.side.contents_in_column(), "few: a map");
        }
    }
    assert!(tracks.side.contents_in_column(), "many: a column");
    for (j, t) in want.iter().enumerate() {
        let j = j as u32;
        assert!(same(&tracks.get(JobId(j), 30_000).unwrap(), t), "job {j}");
        assert_eq!(
            tracks.key(&t.key, None).payload().unwrap().content,
            content(j)
        );
    }
    // A payload mutated to 0 and back, after the end: the job's apart, the key's unchanged.
    tracks.update(JobId(4), 30_000, |t| t.payload.content = 0);
    assert_eq!(tracks.get(JobId(4), 30_000).unwrap().payload.content, 0);
    assert_eq!(
        tracks.key(&want[4].key, None).payload().unwrap().content,
        content(4)
    );
    tracks.update(JobId(4), 30_000, |t| t.payload.content = content(4));
    assert!(same(&tracks.get(JobId(4), 30_000).unwrap(), &want[4]));
}
