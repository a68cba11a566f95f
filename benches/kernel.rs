//! The kernel: its future-event list alone (`sim::event_queue::EventQueue<Ev>`), and its event
//! loop (`sim::Sim` with a `NullObserver`: no checker, no metrics, no trace kept; the kernel
//! still computes the trace hash) on `scenarios/bench-pipeline.toml`.
//!
//! `event_queue/*`: the classic "hold" model. The queue holds a steady number of pending
//! events; one iteration pops the earliest and pushes one new event at the popped time plus a
//! delay, so the size stays put. Reported time = one pop + one push. Delays follow the mix of
//! pipeline-bench v2 (arrivals ~2 ms, extraction slices up to 150 ms, validation 5 ms, reviews
//! 90 ms, relay ticks 50 ms, depth samples 100 ms, lease checks 501 ms, restarts 1000 ms,
//! stalls and back-offs up to 2000 ms). Sizes: 256 pending events (v2: 160 workers, ~45
//! reviews, the arrival, relay and depth timers) and 16,384 (a 10,000-worker run); `far10`
//! sends 10% of the pushes 5 to 30 s ahead, beyond the 4096 ms wheel, into the far heap.
//!
//! `kernel_null_observer/*`: whole runs of the kernel alone at 10,000 and 100,000 jobs;
//! throughput is `RunOutcome::heap_events`, so criterion prints events/s: pop + dispatch +
//! the model's work + the pushes it schedules + the trace hash, per event.
//!
//! Run: `cargo bench --bench kernel` (or `-- event_queue` for the queue alone).

use criterion::{
    criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput,
};
use durasim::base::fastmap::mix64;
use durasim::base::ids::SimTime;
use durasim::history::{NullObserver, TraceHash};
use durasim::scenario::Scenario;
use durasim::sim::event_queue::EventQueue;
use durasim::sim::kernel::Ev;
use durasim::sim::{RunRequest, Sim};
use std::hint::black_box;
use std::time::Duration;

fn bench_pipeline() -> Scenario {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/bench-pipeline.toml");
    let text = std::fs::read_to_string(path).expect("read scenarios/bench-pipeline.toml");
    Scenario::parse(path, &text).unwrap_or_else(|e| panic!("{e}"))
}

/// A deterministic cycle of (delay ms, event) like pipeline-bench v2's pushes; `far_pct` percent
/// of them go 5,000 to 30,000 ms ahead instead.
fn delay_mix(len: usize, far_pct: u64) -> Vec<(SimTime, Ev)> {
    (0..len as u64)
        .map(|i| {
            let r = mix64(i);
            let (pick, x) = (r % 1000, (r >> 10) % 1_000_000);
            let worker = (x % 160) as u32;
            if (r >> 40) % 100 < far_pct {
                return (5_000 + x % 25_000, Ev::LeaseCheck { job: 0, fence: i });
            }
            match pick {
                // per job: 1 arrival, ~2.3 worker wake-ups, 1 review, rarer timers
                0..=199 => (exponential_ms(x, 2.0), Ev::Arrival),
                200..=549 => (1 + x % 150, Ev::WorkerWakes { worker }),
                550..=649 => (5, Ev::WorkerWakes { worker }),
                650..=949 => (90, Ev::ReviewDone { event: i, job: 0 }),
                950..=959 => (50, Ev::RelayTick),
                960..=967 => (100, Ev::DepthSample),
                968..=979 => (501, Ev::LeaseCheck { job: 0, fence: i }),
                980..=984 => (1_000, Ev::WorkerRestarts { worker }),
                985..=994 => (800 + x % 701, Ev::WorkerWakes { worker }),
                _ => (
                    100 + x % 1_901,
                    Ev::JobVisible {
                        job: 0,
                        visible_at: 0,
                    },
                ),
            }
        })
        .collect()
}

/// An exponential draw (rounded to whole ms) from `x` uniform in 0..1,000,000.
fn exponential_ms(x: u64, mean: f64) -> SimTime {
    let u = (x as f64 + 0.5) / 1_000_000.0;
    (-mean * u.ln()).round() as SimTime
}

fn event_queue(c: &mut Criterion) {
    let mut group = c.benchmark_group("event_queue");
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(3));
    for (name, pending, far_pct) in [
        ("hold", 256usize, 0u64),
        ("hold", 16_384, 0),
        ("hold_far10", 256, 10),
    ] {
        let mix = delay_mix(4096, far_pct);
        let mut q: EventQueue<Ev> = EventQueue::new();
        for (i, &(delay, ev)) in mix.iter().cycle().take(pending).enumerate() {
            q.push(delay + i as SimTime % 16, ev);
        }
        let mut i = 0usize;
        group.bench_function(BenchmarkId::new(name, pending), |b| {
            b.iter(|| {
                let (now, popped) = q.pop().expect("the hold model keeps the queue full");
                let (delay, ev) = mix[i];
                i = (i + 1) & 4095;
                q.push(now + delay, ev);
                black_box(popped)
            })
        });
        assert_eq!(q.len(), pending);
    }
    group.finish();
}

fn kernel_only(c: &mut Criterion) {
    let scenario = bench_pipeline();
    let mut group = c.benchmark_group("kernel_null_observer");
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(4));
    for jobs in [10_000u64, 100_000] {
        let options = RunRequest {
            jobs: Some(jobs),
            ..RunRequest::for_scenario(&scenario)
        };
        // One untimed run for the event count (the throughput unit) and the fingerprint.
        let (outcome, _) = Sim::new(&scenario, &options, NullObserver).run();
        assert!(
            outcome.quiescent,
            "bench-pipeline at {jobs} jobs did not settle"
        );
        eprintln!(
            "kernel_null_observer/{jobs}: seed {} trace {} heap_events {} records {} virtual_ms {}",
            options.seed,
            TraceHash::hex(outcome.trace_hash),
            outcome.heap_events,
            outcome.records,
            outcome.virtual_time_ms
        );
        group.throughput(Throughput::Elements(outcome.heap_events));
        group.bench_with_input(BenchmarkId::from_parameter(jobs), &options, |b, o| {
            b.iter(|| {
                let (outcome, _) = Sim::new(&scenario, o, NullObserver).run();
                black_box(outcome.trace_hash)
            })
        });
    }
    group.finish();
}

criterion_group!(benches, event_queue, kernel_only);
criterion_main!(benches);
