//! Textbook queueing theory for durasim's validation scenarios (`scenarios/validation/`), and
//! the measurement of one scenario over many seeds. Shared, by `#[path]`, between the example
//! that prints `docs/validation.md`'s table (`cargo run --release --example queueing_validation`)
//! and `tests/it/queueing_theory.rs`, which asserts on exactly these figures.
//!
//! Owns: recognising a scenario as an M/M/c or M/G/1 queue, Erlang C (M/M/c) and
//! Pollaczek-Khinchine (M/G/1), and pooling per-seed figures with their standard errors across
//! independent seeds.
//! Does not: simulate (`durasim::run::run_once` does, exactly as `durasim run`), or judge (the
//! test does).
//!
//! How durasim's quantities map onto the textbook's, with every fault off:
//! - an arrival is a generated job (`[arrivals] interarrival_ms`, exponential: Poisson arrivals);
//! - a server is a worker (`[workers] count` = c); the queue is first come, first served;
//! - the service time S is the whole time a worker holds the job: extraction (`inferenceMs`,
//!   split by heartbeats, which take no time) + validation (`validateMs`, 0 here); commit, ack
//!   and the next lease are instantaneous, so a worker that acks at t leases the next job at t;
//! - the wait W is `queueWaitMs` = lease time - visibleAt, and visibleAt is the enqueue time of
//!   a job's only attempt (no retries without faults), so W is the time spent queued;
//! - the depth is the number of ready jobs (visible, not leased): the queue *excluding* the jobs
//!   in service, Lq. `queueDepth.mean` is its average over samples every `depth_sample_ms`;
//! - time is integer milliseconds: every drawn gap and service time is rounded to the nearest ms.

use durasim::observe::metrics::Latency;
use durasim::run::{run_once, RunReport, RunRequest};
use durasim::scenario::{Dist, Scenario};
use durasim::vocab::counters::Counter;

/// A scenario seen as a textbook queue. Times in ms, rates per ms.
#[derive(Clone, Debug)]
pub struct Textbook {
    /// "M/M/4", "M/D/1", "M/U/1".
    pub kind: String,
    pub servers: u32,
    pub lambda: f64,
    /// E[S] and E[S^2] of the service time as durasim draws it (integer ms).
    pub service_mean: f64,
    pub service_m2: f64,
    /// Exponential service: Erlang C gives the whole wait distribution.
    pub markovian: bool,
}

impl Textbook {
    /// The queue a scenario is, or why it is not one.
    pub fn of(s: &Scenario) -> Result<Textbook, String> {
        let f = &s.faults;
        let faults = [f.crash, f.transient_error, f.permanent_error];
        if faults
            .iter()
            .chain(f.struck.iter())
            .chain(f.held.iter().map(|h| &h.rate))
            .any(|&r| r != 0.0)
            || f.outage.is_some()
            || !s.script.is_empty()
        {
            return Err("a fault is on".into());
        }
        let a = &s.arrivals;
        if a.document_collision != 0.0 || a.resubmit != 0.0 || a.invalid_documents.is_some() {
            return Err("collisions, resubmissions or invalid documents are on".into());
        }
        if !(s.enqueue.is_empty() && s.burst.is_empty() && s.operator.is_empty()) {
            return Err("explicit enqueues, bursts or operator actions".into());
        }
        if s.stages.validate_ms != (Dist::Constant { value: 0 }) {
            return Err("validate_ms must be the constant 0 (the service is inference_ms)".into());
        }
        if s.queue.heartbeat_ms >= s.queue.lease_ms {
            return Err("heartbeats must renew the lease (heartbeat_ms < lease_ms)".into());
        }
        let Dist::Exponential { mean: gap } = a.interarrival_ms else {
            return Err("interarrival_ms must be exponential (Poisson arrivals)".into());
        };
        let (letter, mean, m2) = match s.stages.inference_ms {
            // Continuous moments: rounding to whole ms moves E[S] by -1/(24 E[S]) ms (a few
            // millionths of a 100 ms mean) and E[S^2] by about 1/12 ms^2.
            Dist::Exponential { mean } => ("M", mean, 2.0 * mean * mean),
            Dist::Constant { value } => ("D", value as f64, (value * value) as f64),
            // Integer uniform on [min, max]: variance ((max - min + 1)^2 - 1) / 12.
            Dist::Uniform { min, max } => {
                let m = (min + max) as f64 / 2.0;
                let n = (max - min + 1) as f64;
                ("U", m, m * m + (n * n - 1.0) / 12.0)
            }
            Dist::Lognormal { .. } => return Err("lognormal service is not supported".into()),
        };
        let c = s.workers.count;
        if letter != "M" && c != 1 {
            return Err("M/G/c has no closed form for c > 1: use exponential service".into());
        }
        let t = Textbook {
            kind: format!("M/{letter}/{c}"),
            servers: c,
            lambda: 1.0 / gap,
            service_mean: mean,
            service_m2: m2,
            markovian: letter == "M",
        };
        if t.rho() >= 1.0 {
            return Err(format!("utilisation {} >= 1: no steady state", t.rho()));
        }
        Ok(t)
    }

    /// Utilisation ρ = λ E[S] / c.
    pub fn rho(&self) -> f64 {
        self.lambda * self.service_mean / self.servers as f64
    }

    /// cμ - λ: the rate at which an M/M/c wait's tail decays.
    fn decay(&self) -> f64 {
        self.servers as f64 / self.service_mean - self.lambda
    }

    /// P(W > 0): Erlang C for M/M/c, ρ for M/G/1.
    pub fn p_wait(&self) -> f64 {
        if !self.markovian {
            return self.rho();
        }
        let (c, a) = (self.servers, self.lambda * self.service_mean);
        let mut b = 1.0; // Erlang B, by the recursion B(k) = a B(k-1) / (k + a B(k-1))
        for k in 1..=c {
            b = a * b / (k as f64 + a * b);
        }
        let rho = a / c as f64;
        b / (1.0 - rho * (1.0 - b))
    }

    /// E[W]: C / (cμ - λ) for M/M/c; λ E[S^2] / (2 (1 - ρ)) for M/G/1 (Pollaczek-Khinchine).
    pub fn mean_wait(&self) -> f64 {
        if self.markovian {
            self.p_wait() / self.decay()
        } else {
            self.lambda * self.service_m2 / (2.0 * (1.0 - self.rho()))
        }
    }

    /// P(W > t) = C exp(-(cμ - λ) t), M/M/c only.
    pub fn tail(&self, t: f64) -> Option<f64> {
        self.markovian
            .then(|| self.p_wait() * (-self.decay() * t).exp())
    }

    /// The q-quantile of W, M/M/c only: 0 when q <= 1 - C, else ln(C / (1 - q)) / (cμ - λ).
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let c = self.p_wait();
        self.markovian.then(|| {
            if 1.0 - q <= c {
                (c / (1.0 - q)).ln() / self.decay()
            } else {
                0.0
            }
        })
    }

    /// Whether the q-quantile sits at the edge of W's atom at 0 (|q - (1 - C)| < 0.02), where
    /// the sample quantile jumps between 0 and a positive wait from seed to seed.
    pub fn quantile_at_atom(&self, q: f64) -> bool {
        (q - (1.0 - self.p_wait())).abs() < 0.02
    }

    /// The probability mass of W in (0, 1 ms]: how far whole milliseconds can move P(W > t)
    /// for any t. Integer times make a wait under a millisecond either 0 or 1 ms (a job that
    /// arrives in the millisecond a worker frees up waits 0), so durasim's P(W > 0) reads like
    /// the textbook's P(W > ~0.5 ms). The density of W at 0+ is the largest it gets: C (cμ - λ)
    /// for M/M/c, λ (1 - ρ) for M/G/1.
    pub fn mass_in_first_ms(&self) -> f64 {
        if self.markovian {
            self.p_wait() * (1.0 - (-self.decay()).exp())
        } else {
            self.lambda * (1.0 - self.rho())
        }
    }

    /// E[Lq] = λ E[W] (Little's law for the queue without the jobs in service).
    pub fn mean_depth(&self) -> f64 {
        self.lambda * self.mean_wait()
    }
}

/// The quantiles the table and the test look at.
pub const QUANTILES: [f64; 3] = [0.50, 0.95, 0.99];

/// One seed's figures, from what `durasim run` reports (`summary.json`'s `queueWaitMs`,
/// `queueWaitedShare`, `queueDepth`).
#[derive(Clone, Debug)]
pub struct SeedFigures {
    pub jobs: u64,
    pub p_wait: f64,
    pub mean_wait: f64,
    /// queueWaitMs p50, p95, p99.
    pub quantiles: [f64; 3],
    /// P(W > t) at the theoretical p50, p95, p99 (rounded to whole ms), M/M/c only.
    pub tails: [f64; 3],
    pub mean_depth: f64,
    /// Jobs per ms of virtual time, the run's own λ for Little's law on this sample path.
    pub lambda_run: f64,
}

impl SeedFigures {
    pub fn of(t: &Textbook, report: &RunReport) -> SeedFigures {
        let m = &report.metrics;
        let w: &Latency = &m.queue_wait;
        let stats = w.stats();
        let tails = QUANTILES.map(|q| match t.quantile(q) {
            Some(x) => w.share_above(x.round() as u64),
            None => f64::NAN,
        });
        SeedFigures {
            jobs: stats.count,
            p_wait: w.share_above(0),
            mean_wait: stats.mean,
            quantiles: [stats.p50 as f64, stats.p95 as f64, stats.p99 as f64],
            tails,
            mean_depth: m.depth_stats().mean,
            lambda_run: stats.count as f64 / report.outcome.virtual_time_ms as f64,
        }
    }

    /// Little's law on this run alone: mean depth / (λ_run × mean wait). The depth is sampled
    /// on a grid, so this is 1 only up to the sampling error.
    pub fn little_ratio(&self) -> f64 {
        self.mean_depth / (self.lambda_run * self.mean_wait)
    }
}

/// The mean over seeds and its standard error (sample standard deviation / sqrt(seeds)). Seeds
/// are independent replications, so this needs no batch means and no assumption about how
/// strongly one job's wait depends on the previous one's.
#[derive(Clone, Copy, Debug)]
pub struct Estimate {
    pub mean: f64,
    pub se: f64,
}

impl Estimate {
    pub fn of(values: impl Iterator<Item = f64>) -> Estimate {
        let v: Vec<f64> = values.collect();
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0);
        Estimate {
            mean,
            se: (var / n).sqrt(),
        }
    }

    /// (estimate - theory) in standard errors.
    pub fn z(&self, theory: f64) -> f64 {
        if self.mean == theory {
            return 0.0; // also when the SE is 0 (a quantile that is 0 in every seed)
        }
        (self.mean - theory) / self.se
    }
}

/// A scenario run over seeds `0..seeds`, every run checked to be the textbook queue it claims.
pub struct Measured {
    pub textbook: Textbook,
    pub seeds: Vec<SeedFigures>,
}

impl Measured {
    pub fn run(s: &Scenario, seeds: u64, jobs: Option<u64>) -> Result<Measured, String> {
        let textbook = Textbook::of(s)?;
        let mut figures = Vec::new();
        for seed in 0..seeds {
            let mut request = RunRequest::for_scenario(s);
            request.seed = seed;
            request.jobs = jobs;
            let report = run_once(s, &request, None);
            let n = jobs.unwrap_or(s.arrivals.jobs);
            let m = &report.metrics;
            // Every job served once: no retry, expiry, cancellation or loss bent the queue.
            if !(report.outcome.quiescent
                && report.check.holds()
                && m.counts.get(Counter::Acked) == n
                && m.counts.get(Counter::Attempts) == n
                && m.counts.get(Counter::LeasesExpired) == 0)
            {
                return Err(format!(
                    "{} seed {seed} is not a plain queue: acked {}, leases {}, expired {}, violated {:?}",
                    s.name,
                    m.counts.get(Counter::Acked),
                    m.counts.get(Counter::Attempts),
                    m.counts.get(Counter::LeasesExpired),
                    report.check.violated()
                ));
            }
            figures.push(SeedFigures::of(&textbook, &report));
        }
        Ok(Measured {
            textbook,
            seeds: figures,
        })
    }

    pub fn estimate(&self, f: impl Fn(&SeedFigures) -> f64) -> Estimate {
        Estimate::of(self.seeds.iter().map(f))
    }

    pub fn jobs(&self) -> u64 {
        self.seeds.iter().map(|s| s.jobs).sum()
    }
}
