//! Nanoseconds per decision, for each algorithm, on the allowed and the
//! refused path; the sliding log at limits 10, 1,000 and 10,000.
//!
//! `cargo bench -p rl-core`

use criterion::{criterion_group, criterion_main, Criterion};
use rl_core::{FixedWindow, Gcra, Instant, Limiter, LogView, SlidingCounter, SlidingLog, TokenBucket};
use std::hint::black_box;

const NOW: u64 = 1_763_700_000_000_000;
const SEC: u64 = 1_000_000;

/// Decide once at `NOW` from the state left by `setup` calls.
fn bench_whole_state<L>(c: &mut Criterion, name: &str, limiter: L, setup: u64)
where
    L: for<'a> Limiter<State<'a> = <L as Limiter>::Change>,
    L::Change: Clone,
{
    let mut state = None;
    for _ in 0..setup {
        if let Some(u) = limiter.check(state.as_ref(), Instant::from_micros(NOW), 1).update {
            state = Some(u.change);
        }
    }
    c.bench_function(name, |b| {
        b.iter(|| {
            black_box(limiter.check(black_box(state.as_ref()), Instant::from_micros(black_box(NOW)), 1))
        })
    });
}

fn decisions(c: &mut Criterion) {
    bench_whole_state(c, "gcra/allowed", Gcra::new(99, 100, SEC).unwrap(), 10);
    bench_whole_state(c, "gcra/refused", Gcra::new(9, 10, SEC).unwrap(), 10);
    bench_whole_state(c, "gcra/fractional_allowed", Gcra::new(99, 7, SEC).unwrap(), 10);
    bench_whole_state(
        c,
        "token_bucket/allowed",
        TokenBucket::new(100, 100, SEC).unwrap(),
        10,
    );
    bench_whole_state(
        c,
        "token_bucket/refused",
        TokenBucket::new(10, 10, SEC).unwrap(),
        10,
    );
    bench_whole_state(c, "fixed/allowed", FixedWindow::new(100, SEC).unwrap(), 10);
    bench_whole_state(c, "fixed/refused", FixedWindow::new(10, SEC).unwrap(), 10);
    bench_whole_state(
        c,
        "sliding_counter/allowed",
        SlidingCounter::new(100, SEC).unwrap(),
        10,
    );
    bench_whole_state(
        c,
        "sliding_counter/refused",
        SlidingCounter::new(10, SEC).unwrap(),
        10,
    );

    for limit in [10u64, 1_000, 10_000] {
        let log = SlidingLog::new(limit, 60 * SEC).unwrap();
        // A full ring of instants spread over the last minute, turned halfway.
        let instants: Vec<u64> = (0..limit)
            .map(|i| NOW - 60 * SEC + 1 + i * (60 * SEC - 2) / limit)
            .collect();
        let half = (limit / 2) as usize;
        let mut ring: Vec<u8> = Vec::new();
        for t in instants[half..].iter().chain(&instants[..half]) {
            ring.extend_from_slice(&t.to_le_bytes());
        }
        let n = limit as usize;
        let view = LogView::new(&ring, n - half).unwrap();
        c.bench_function(&format!("sliding_log/{limit}/refused"), |b| {
            b.iter(|| black_box(log.check(black_box(Some(&view)), Instant::from_micros(black_box(NOW)), 1)))
        });
        // 30 s later half the entries have left: allowed.
        c.bench_function(&format!("sliding_log/{limit}/allowed"), |b| {
            b.iter(|| {
                black_box(log.check(
                    black_box(Some(&view)),
                    Instant::from_micros(black_box(NOW + 30 * SEC)),
                    1,
                ))
            })
        });
    }
}

criterion_group!(benches, decisions);
criterion_main!(benches);
