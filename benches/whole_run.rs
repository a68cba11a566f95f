//! Whole runs of `scenarios/bench-pipeline.toml` (pipeline-bench v2) at 10,000 and 100,000 jobs,
//! seed 42, exactly as `durasim run --no-rows` runs them minus the file output: `run::run_once`
//! with the full checker and metrics on and no attempt rows. Throughput is jobs, so criterion
//! prints jobs/s, the unit of `shared/peers/README.md`.
//!
//! Before timing, each size runs once and prints its trace hash (and verdict) to stderr: an
//! optimisation that changes behaviour changes the hash.
//!
//! Run: `cargo bench --bench whole_run` (about a minute on 2 cores).

use criterion::{
    criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput,
};
use durasim::history::TraceHash;
use durasim::run::{run_once, RunRequest};
use durasim::scenario::Scenario;
use durasim::vocab::counters::Counter;
use std::hint::black_box;
use std::time::Duration;

fn bench_pipeline() -> Scenario {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/bench-pipeline.toml");
    let text = std::fs::read_to_string(path).expect("read scenarios/bench-pipeline.toml");
    Scenario::parse(path, &text).unwrap_or_else(|e| panic!("{e}"))
}

fn whole_runs(c: &mut Criterion) {
    let scenario = bench_pipeline();
    let mut group = c.benchmark_group("bench_pipeline_run_once");
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(5));
    for jobs in [10_000u64, 100_000] {
        let mut request = RunRequest::for_scenario(&scenario);
        request.jobs = Some(jobs);
        let report = run_once(&scenario, &request, None);
        let violated: Vec<&str> = report.check.violated().iter().map(|i| i.name()).collect();
        eprintln!(
            "bench_pipeline_run_once/{jobs}: seed {} trace {} heap_events {} records {} \
             virtual_ms {} acked {} violated {:?}",
            request.seed,
            TraceHash::hex(report.outcome.trace_hash),
            report.outcome.heap_events,
            report.outcome.records,
            report.outcome.virtual_time_ms,
            report.metrics.counts.get(Counter::Acked),
            violated
        );
        assert!(
            report.check.holds(),
            "bench-pipeline at {jobs} jobs violates {violated:?}"
        );
        group.throughput(Throughput::Elements(jobs));
        group.bench_with_input(BenchmarkId::from_parameter(jobs), &request, |b, r| {
            b.iter(|| black_box(run_once(&scenario, r, None).outcome.trace_hash))
        });
    }
    group.finish();
}

criterion_group!(benches, whole_runs);
criterion_main!(benches);
