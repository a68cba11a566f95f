//! The packed job track reads back what was written, exactly, through every storage path.

use super::*;

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
    }
}

fn same(a: &JobTrack, b: &JobTrack) -> bool {
    format!("{a:?}") == format!("{b:?}")
}

#[test]
fn a_live_track_is_plain_until_its_terminal_record_then_packed_and_its_slot_reused() {
    let mut tracks = JobTracks::default();
    let mut t = track();
    t.terminal = None;
    tracks.set(JobId(0), &t);
    tracks.set(JobId(1), &t);
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
    tracks.set(JobId(2), &t);
    assert_eq!(tracks.live_capacity(), 2);
    assert_eq!(tracks.get(JobId(0), 30_000).unwrap().leases, 3);
    assert_eq!(tracks.get(JobId(2), 30_000).unwrap().leases, 2);
    // A record naming a finished job (a zombie's write) changes its packed track.
    tracks.update(JobId(0), 30_000, |t| t.fence = Fence(11));
    assert_eq!(tracks.get(JobId(0), 30_000).unwrap().fence, Fence(11));
    assert!(tracks.update(JobId(7), 30_000, |_| ()).is_none());
}

#[test]
fn a_track_reads_back_as_it_was_written_and_takes_56_bytes() {
    assert_eq!(std::mem::size_of::<Packed>(), 56);
    let mut tracks = JobTracks::default();
    let t = track();
    tracks.set(JobId(2), &t);
    assert!(same(&tracks.get(JobId(2), 30_000).unwrap(), &t));
    assert!(tracks.get(JobId(1), 30_000).is_none(), "a gap is no job");
    assert!(tracks.get(JobId(3), 30_000).is_none());
    assert!(tracks.wide.is_empty());
    tracks.set_place(JobId(2), Place::Done);
    assert_eq!(tracks.place(JobId(2)), Some(Place::Done));
}

#[test]
fn a_finished_jobs_rare_parts_come_and_go_with_its_records() {
    let mut tracks = JobTracks::default();
    let mut t = track();
    t.failure = None;
    t.reprocessed_from = None;
    tracks.set(JobId(4), &t);
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
    tracks.set(JobId(9), &t);
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
    let mut tracks = JobTracks::default();
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
    tracks.set(JobId(0), &t);
    assert!(same(&tracks.get(JobId(0), 30_000).unwrap(), &t));
    assert!(!tracks.wide.is_empty());
    // Narrow again: the packed field wins over a stale side-table value.
    t.fence = Fence(10);
    tracks.set(JobId(0), &t);
    assert!(same(&tracks.get(JobId(0), 30_000).unwrap(), &t));
}
