//! The records read back what was written, exactly, through every storage path: a job's track
//! (live, finished, with rare parts and values too wide; never leased; enqueue times by runs of
//! job ids; the renewal as an offset from the lease time), a key's (in its first job's record,
//! or an orphan's), and a key with several jobs.

use super::*;
use crate::base::ids::{DocumentId, EventId, Fence, OperationId, TenantId, WorkerId};
use crate::check::facts::job_track::{DlqEntry, Failure, Lease, Terminal};

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
        visible_from: 1_200,
        lease: Some(Lease {
            fence: Fence(9),
            holder: WorkerId(4),
            at: 1_300,
            renewed_at: 1_600,
            renewed: true,
        }),
        lease_held: true,
        leases: 2,
        place: Place::Leased,
        terminal: Some((Terminal::DeadLettered, 2_000)),
        failure: Some(Failure::new(Fence(9), "timeout", 1_900)),
        dlq: DlqEntry::Held,
        reprocessed_from: Some(JobId(5)),
        audited: true,
        reprocessed: false,
        own_result: true,
    }
}

/// The latest lease of `t`, to change it.
fn lease(t: &mut JobTrack) -> &mut Lease {
    t.lease.as_mut().expect("the test's track is leased")
}

/// Creates the job (live) if new, then gives it track `t` (finished if `t` has a terminal record).
fn set(tracks: &mut Tracks, job: JobId, t: &JobTrack) {
    if tracks.get(job).is_none() {
        let live = JobTrack {
            terminal: None,
            ..*t
        };
        tracks.create(job, &live);
    }
    tracks.update(job, |x| *x = *t);
}

/// The track of a job that exists.
fn got(tracks: &Tracks, job: u32) -> JobTrack {
    tracks
        .get(JobId(job))
        .unwrap_or_else(|| panic!("job {job} exists"))
        .into_owned()
}

/// A commit under `key` (registered first, as the reducer does).
fn commit(tracks: &mut Tracks, key: &IdempotencyKey, at: SimTime, w: Written, p: PayloadId) {
    let k = tracks.register(key, Some(w.job));
    tracks.commit(&k, at, w, p);
}

#[test]
fn a_live_track_is_plain_until_its_terminal_record_then_packed_and_its_slot_reused() {
    let mut tracks = Tracks::default();
    let mut t = track();
    t.terminal = None;
    tracks.create(JobId(0), &t);
    tracks.create(JobId(1), &t);
    assert_eq!(tracks.live_capacity(), 2);
    assert!(
        matches!(tracks.get(JobId(0)), Some(Cow::Borrowed(_))),
        "a live track is read in place"
    );
    tracks.update(JobId(0), |t| t.leases = 3);
    assert_eq!(got(&tracks, 0).leases, 3);
    tracks.set_place(JobId(0), Place::Ready);
    assert_eq!(tracks.place(JobId(0)), Some(Place::Ready));
    tracks.update(JobId(0), |t| t.terminal = Some((Terminal::Acked, 5_000)));
    assert!(
        matches!(tracks.get(JobId(0)), Some(Cow::Owned(_))),
        "a finished track is unpacked from its record"
    );
    let done = got(&tracks, 0);
    assert_eq!(done.leases, 3);
    assert_eq!(done.terminal, Some((Terminal::Acked, 5_000)));
    assert_eq!(tracks.place(JobId(0)), Some(Place::Ready));
    // The freed slot serves the next job; the packed one is untouched by it.
    tracks.create(JobId(2), &t);
    assert_eq!(tracks.live_capacity(), 2);
    assert_eq!(got(&tracks, 0).leases, 3);
    assert_eq!(got(&tracks, 2).leases, 2);
    // A record naming a finished job (a zombie's write) changes its packed track.
    tracks.update(JobId(0), |t| lease(t).fence = Fence(11));
    assert_eq!(got(&tracks, 0).fence(), Some(Fence(11)));
    assert!(tracks.update(JobId(7), |_| ()).is_none());
    assert!(tracks.place(JobId(7)).is_none());
}

/// The slab holds as many plain tracks as there were ever unfinished jobs at once, not one a job.
#[test]
fn live_tracks_are_bounded_by_the_jobs_unfinished_at_once() {
    let mut tracks = Tracks::default();
    let mut t = track();
    t.terminal = None;
    for j in 0..1_000u32 {
        tracks.create(JobId(j), &t);
        // At most three jobs unfinished at once: each job ends two jobs later.
        if let Some(done) = j.checked_sub(2) {
            tracks.update(JobId(done), |x| x.terminal = Some((Terminal::Acked, 3_000)));
        }
    }
    assert_eq!(tracks.live_capacity(), 3);
    assert_eq!(tracks.len(), 1_000);
    for j in 0..998 {
        assert_eq!(got(&tracks, j).terminal, Some((Terminal::Acked, 3_000)));
    }
    assert_eq!(got(&tracks, 999).terminal, None);
}

#[test]
fn a_track_reads_back_as_it_was_written_and_a_record_takes_56_bytes() {
    assert_eq!(std::mem::size_of::<PackedTrack>(), 56);
    let mut tracks = Tracks::default();
    let t = track();
    set(&mut tracks, JobId(2), &t);
    assert_eq!(got(&tracks, 2), t);
    assert!(tracks.get(JobId(1)).is_none(), "a gap is no job");
    assert!(tracks.get(JobId(3)).is_none());
    assert!(tracks.side.is_empty());
    tracks.set_place(JobId(2), Place::Done);
    assert_eq!(tracks.place(JobId(2)), Some(Place::Done));
    // The lease as the fast reader sees it: held, then not (without unpacking).
    assert_eq!(tracks.held_lease(JobId(2)), t.lease);
    tracks.update(JobId(2), |x| x.lease_held = false);
    assert_eq!(tracks.held_lease(JobId(2)), None);
    assert_eq!(tracks.ended_and_leases(JobId(2)), Some((true, 2)));
    assert!(tracks.ended_and_leases(JobId(1)).is_none());
}

/// A job never leased has no lease, live or finished: not a lease at time 0 with token 0.
#[test]
fn a_never_leased_job_has_no_lease_by_type() {
    let mut tracks = Tracks::default();
    let t = JobTrack {
        lease: None,
        lease_held: false,
        leases: 0,
        failure: None,
        own_result: false,
        terminal: Some((Terminal::Cancelled, 1_100)),
        ..track()
    };
    set(&mut tracks, JobId(0), &t);
    let back = got(&tracks, 0);
    assert_eq!(back, t);
    assert_eq!((back.lease, back.fence(), back.held()), (None, None, None));
    assert_eq!(tracks.held_lease(JobId(0)), None);
    // Leased after its end (a late lease) with token 0 at time 0: a lease all the same.
    tracks.update(JobId(0), |x| {
        x.leases = 1;
        x.lease = Some(Lease {
            fence: Fence(0),
            holder: WorkerId(0),
            at: 0,
            renewed_at: 0,
            renewed: false,
        });
    });
    let back = got(&tracks, 0);
    assert_eq!(back.fence(), Some(Fence(0)), "token 0 at time 0 is a lease");
    assert_eq!(back.lease.map(|l| l.at), Some(0));
}

#[test]
fn a_finished_jobs_rare_parts_come_and_go_with_its_records() {
    let mut tracks = Tracks::default();
    let mut t = track();
    t.failure = None;
    t.reprocessed_from = None;
    t.audited = false;
    set(&mut tracks, JobId(4), &t);
    assert!(
        tracks.rare.is_empty(),
        "a plain finished job keeps no rare part"
    );
    // A zombie's failed attempt after the terminal record, then its decision.
    tracks.update(JobId(4), |t| {
        t.failure = Some(Failure::new(Fence(12), "schema_invalid", 2_500))
    });
    let f = got(&tracks, 4).failure.unwrap();
    assert_eq!(
        (f.fence, f.at, f.error()),
        (Fence(12), 2_500, "schema_invalid")
    );
    assert_eq!(tracks.rare.len(), 1);
    tracks.update(JobId(4), |t| t.failure = None);
    assert!(got(&tracks, 4).failure.is_none());
    assert!(tracks.rare.is_empty());
    // A reprocess's successor keeps its link once finished.
    t.reprocessed_from = Some(JobId(4));
    set(&mut tracks, JobId(9), &t);
    assert_eq!(got(&tracks, 9).reprocessed_from, Some(JobId(4)));
    assert!(got(&tracks, 4).reprocessed_from.is_none());
    assert!(
        tracks.needs_finish_check(JobId(9)),
        "a reprocess's successor"
    );
    assert!(!tracks.needs_finish_check(JobId(4)), "a plain finished job");
    // The reprocess flags.
    tracks.update(JobId(4), |t| t.reprocessed = true);
    assert!(got(&tracks, 4).reprocessed);
    assert_eq!(tracks.rare.len(), 2);
}

#[test]
fn values_too_wide_for_their_packed_field_are_kept_exactly() {
    let mut tracks = Tracks::default();
    let mut t = track();
    // A time before the enqueue (a store's clock), one far after it, and 64-bit tokens.
    t.visible_from = 999;
    t.lease = Some(Lease {
        fence: Fence(u64::MAX - 1),
        holder: WorkerId(70_000),
        at: 1_000 + (1 << 40),
        renewed_at: u64::MAX,
        renewed: true,
    });
    t.leases = 65_535;
    t.failure = Some(Failure::new(Fence(1 << 33), "timeout", 0));
    // Finished (tracks of live jobs are kept plain), long after its enqueue.
    t.terminal = Some((Terminal::Cancelled, 1_000 + (1 << 35)));
    t.reprocessed_from = None;
    set(&mut tracks, JobId(0), &t);
    assert_eq!(got(&tracks, 0), t);
    assert!(!tracks.side.is_empty());
    // Narrow again: the packed field wins over a stale side-table value.
    lease(&mut t).fence = Fence(10);
    set(&mut tracks, JobId(0), &t);
    assert_eq!(got(&tracks, 0), t);
}

#[test]
fn a_finished_job_keeps_its_payload_when_its_key_takes_another() {
    let mut tracks = Tracks::default();
    let mut t = track();
    t.failure = None;
    t.reprocessed_from = None;
    t.audited = false;
    set(&mut tracks, JobId(0), &t);
    assert!(tracks.rare.is_empty(), "the job's payload is its key's");
    let other = PayloadId {
        operation: OperationId(1),
        content: 5,
    };
    // A first commit under the key by another job (a broken history) takes its payload.
    let w = Written {
        job: JobId(8),
        output: 0xabc,
        event: None,
    };
    commit(&mut tracks, &t.key, 3_000, w, other);
    assert_eq!(tracks.key(&t.key, Some(JobId(0))).payload, Some(other));
    assert_eq!(got(&tracks, 0), t);
    assert_eq!(tracks.rare.len(), 1, "the job's own payload, apart");
    // A payload mutated after the end, then back.
    tracks.update(JobId(0), |x| x.payload = other);
    assert_eq!(got(&tracks, 0).payload, other);
    tracks.update(JobId(0), |x| x.payload = t.payload);
    assert_eq!(got(&tracks, 0), t);
    assert_eq!(tracks.key(&t.key, None).payload, Some(other));
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
            visible_from: 1_200 + j as u64 * 100,
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
            // The third job commits first, with its own payload (the first job, finished,
            // keeps its own), then ends.
            let w = Written {
                job: JobId(2),
                output: 0x77,
                event: Some(EventId(4)),
            };
            assert_eq!(tracks.key(&t.key, Some(JobId(2))).results, 0);
            commit(&mut tracks, &t.key, 1_500, w, t.payload);
            assert_eq!(tracks.key(&t.key, Some(JobId(2))).results, 1);
        }
        if j % 2 == 0 {
            t.terminal = Some((Terminal::Acked, 1_900));
            tracks.update(JobId(j), |x| *x = t);
        }
        want.push(t);
    }
    for (j, t) in want.iter().enumerate() {
        assert_eq!(got(&tracks, j as u32), *t, "job {j}");
    }
    let k = tracks.key(&base.key, Some(JobId(3)));
    assert_eq!(k.payload.unwrap().content, 2, "the first commit's payload");
    assert_eq!(
        k.first,
        Some(FirstCommit {
            at: 1_500,
            job: JobId(2),
            output: 0x77,
            event: Some(EventId(4)),
        })
    );
    assert_eq!(k.newest, Some(JobId(3)));
    assert!(k.enqueued);
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
    let k = tracks.register(&key(50), Some(JobId(0)));
    tracks.apply(&k, EventId(1));
    tracks.create(JobId(0), &live(7));
    tracks.create(JobId(1), &live(3));
    let k = tracks.register(&key(60), None);
    tracks.review(&k);
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
    assert_eq!(tracks.key(&key(50), None).applied, Some(EventId(1)));
    assert!(tracks.key(&key(60), None).reviewed);
    assert!(!tracks.key(&key(60), None).enqueued);
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
        lease(&mut t).holder = WorkerId(holder);
        t.leases = leases;
        set(&mut tracks, JobId(j as u32), &t);
        assert_eq!(got(&tracks, j as u32), t);
        assert_eq!(tracks.side.is_empty(), j == 0, "job {j}");
        let (ended, n) = tracks.ended_and_leases(JobId(j as u32)).unwrap();
        assert!(ended);
        assert_eq!(n, leases as u64);
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
        (t.enqueued_at, t.visible_from) = (at, at);
        let l = lease(&mut t);
        (l.at, l.renewed_at) = (at, at);
        t.terminal = Some((Terminal::Acked, at));
        (t.failure, t.reprocessed_from) = (None, None);
        set(&mut tracks, JobId(j), &t);
        want.push((j, t));
    }
    assert_eq!(tracks.epochs.runs(), 4);
    for (j, t) in &want {
        assert_eq!(got(&tracks, *j), *t, "job {j}");
    }
    // The key's first commit is an offset from its home job's enqueue time (job 0's: every job
    // here has the same key), or in the side table when it does not fit.
    let (_, t9) = want.iter().find(|(j, _)| *j == 9).unwrap();
    let w = Written {
        job: JobId(9),
        output: 1,
        event: None,
    };
    commit(&mut tracks, &t9.key, u64::MAX, w, t9.payload);
    let first = tracks.key(&t9.key, Some(JobId(9))).first.unwrap();
    assert_eq!((first.at, first.job, first.output), (u64::MAX, JobId(9), 1));
}

/// A finished job's renewal time is exact whatever the job's state (its lease held or not): an
/// offset from its lease time, a renewal before the lease (a store's clock) or too far after it
/// in the side table. (A renewal kept only where a rule could read it, the lease time standing
/// in for it elsewhere, before.)
#[test]
fn a_finished_jobs_renewal_reads_back_exactly() {
    let mut t = track();
    (t.failure, t.reprocessed_from) = (None, None);
    for held in [false, true] {
        let mut tracks = Tracks::default();
        t.lease_held = held;
        lease(&mut t).renewed_at = 1_700;
        set(&mut tracks, JobId(0), &t);
        assert_eq!(got(&tracks, 0), t, "held {held}");
        assert!(tracks.side.is_empty(), "an offset from the lease time");
        assert_eq!(tracks.held_lease(JobId(0)).is_some(), held);
        // A late lease: held, renewed at its own time; then released.
        tracks.update(JobId(0), |x| {
            let l = lease(x);
            (l.at, l.renewed_at, l.renewed) = (5_000, 5_000, false);
            x.lease_held = true;
        });
        let l = got(&tracks, 0).lease.unwrap();
        assert_eq!((l.at, l.renewed_at, l.renewed), (5_000, 5_000, false));
        assert!(tracks.held_lease(JobId(0)).is_some());
        tracks.update(JobId(0), |x| x.lease_held = false);
        assert!(tracks.held_lease(JobId(0)).is_none());
        assert_eq!(got(&tracks, 0).lease, Some(l), "released, still exact");
        // Far from the lease: the side table; before it: the side table; back: the offset.
        for renewed_at in [u64::MAX, 4_999, 5_000 + u32::MAX as u64 - 1, 6_000] {
            tracks.update(JobId(0), |x| lease(x).renewed_at = renewed_at);
            assert_eq!(got(&tracks, 0).lease.unwrap().renewed_at, renewed_at);
        }
        assert_eq!(got(&tracks, 0).lease.unwrap().at, 5_000);
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
        assert_eq!(got(&tracks, j), *t, "job {j}");
        assert_eq!(
            tracks.key(&t.key, None).payload.unwrap().content,
            content(j)
        );
    }
    // A payload mutated to 0 and back, after the end: the job's apart, the key's unchanged.
    tracks.update(JobId(4), |t| t.payload.content = 0);
    assert_eq!(got(&tracks, 4).payload.content, 0);
    assert_eq!(
        tracks.key(&want[4].key, None).payload.unwrap().content,
        content(4)
    );
    tracks.update(JobId(4), |t| t.payload.content = content(4));
    assert_eq!(got(&tracks, 4), want[4]);
}
