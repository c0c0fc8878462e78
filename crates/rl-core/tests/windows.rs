//! Table-driven cases for the window family at window edges:
//! (instant, quantity) -> the exact reply.

mod common;

use common::{Driver, MS, SEC};
use rl_core::{FixedWindow, RetryAfter, SlidingCounter, SlidingLog, TimeUnit::*};

/// A window boundary for every window length used here.
const T0: u64 = 1_763_700_000 * SEC;

#[test]
fn fixed_window_edges() {
    let mut d = Driver::new(FixedWindow::new(3, 10 * SEC).unwrap());
    assert_eq!(d.reply(T0, 0, Seconds), [0, 3, 3, -1, 0]);
    assert_eq!(d.reply(T0, 1, Seconds), [0, 3, 2, -1, 10]);
    assert_eq!(d.reply(T0 + 3 * SEC, 2, Seconds), [0, 3, 0, -1, 7]);
    assert_eq!(d.reply(T0 + 3 * SEC, 1, Seconds), [1, 3, 0, 7, 7]);
    // The last microsecond of the window, then the first of the next.
    assert_eq!(d.reply(T0 + 10 * SEC - 1, 1, Millis), [1, 3, 0, 1, 1]);
    assert_eq!(d.reply(T0 + 10 * SEC, 1, Seconds), [0, 3, 2, -1, 10]);
    // A gap of several windows starts afresh.
    assert_eq!(d.reply(T0 + 55 * SEC, 1, Seconds), [0, 3, 2, -1, 5]);
    // More than the limit never fits.
    let out = d.peek(T0 + 55 * SEC, 4);
    assert_eq!(out.retry_after, RetryAfter::Never);
    assert_eq!(out.to_reply(Seconds), [1, 3, 2, -1, 5]);
    // The clock steps back into an earlier window: the stored one holds.
    assert_eq!(d.reply(T0 + 45 * SEC, 2, Seconds), [0, 3, 0, -1, 15]);
    assert_eq!(d.reply(T0 + 45 * SEC, 1, Seconds), [1, 3, 0, 15, 15]);
}

#[test]
fn fixed_window_in_milliseconds() {
    let mut d = Driver::new(FixedWindow::new(2, 250 * MS).unwrap());
    assert_eq!(d.reply(T0 + 100 * MS, 2, Millis), [0, 2, 0, -1, 150]);
    assert_eq!(d.reply(T0 + 100 * MS + 1, 1, Millis), [1, 2, 0, 150, 150]);
    assert_eq!(d.reply(T0 + 250 * MS, 1, Millis), [0, 2, 1, -1, 250]);
}

#[test]
fn sliding_log_edges() {
    let mut d = Driver::new(SlidingLog::new(3, 10 * SEC).unwrap());
    assert_eq!(d.reply(T0, 1, Seconds), [0, 3, 2, -1, 10]);
    assert_eq!(d.reply(T0 + 2 * SEC, 1, Seconds), [0, 3, 1, -1, 10]);
    assert_eq!(d.reply(T0 + 4 * SEC, 1, Seconds), [0, 3, 0, -1, 10]);
    // Full: the oldest entry (T0) leaves at T0 + 10 s.
    assert_eq!(d.reply(T0 + 5 * SEC, 1, Seconds), [1, 3, 0, 5, 9]);
    // Two units need the two oldest gone: T0 + 2 s leaves at T0 + 12 s.
    assert_eq!(d.reply(T0 + 5 * SEC, 2, Seconds), [1, 3, 0, 7, 9]);
    assert_eq!(d.reply(T0 + 10 * SEC - 1, 1, Millis), [1, 3, 0, 1, 4001]);
    // Exactly W after an entry, that entry is out of (now - W, now].
    assert_eq!(d.reply(T0 + 10 * SEC, 1, Seconds), [0, 3, 0, -1, 10]);
    assert_eq!(d.state.len(), 3 * 8, "never more than limit entries");
    // Two units at one instant are two entries.
    assert_eq!(d.reply(T0 + 30 * SEC, 2, Seconds), [0, 3, 1, -1, 10]);
    assert_eq!(d.reply(T0 + 30 * SEC, 2, Seconds), [1, 3, 1, 10, 10]);
    assert_eq!(d.reply(T0 + 35 * SEC, 0, Seconds), [0, 3, 1, -1, 5]);
    // A gap of several windows: everything has left.
    assert_eq!(d.reply(T0 + 100 * SEC, 0, Seconds), [0, 3, 3, -1, 0]);
    assert_eq!(d.peek(T0, 4).retry_after, RetryAfter::Never);
}

#[test]
fn sliding_log_clock_stepping_back() {
    let mut d = Driver::new(SlidingLog::new(2, 10 * SEC).unwrap());
    assert_eq!(d.reply(T0 + 20 * SEC, 1, Seconds), [0, 2, 1, -1, 10]);
    // Back by 15 s: the entry "from the future" still counts (the limiter
    // rests when it leaves, 25 s on), and the new one is logged now, before
    // it: it leaves the window in 10 s, and then one more fits.
    assert_eq!(d.reply(T0 + 5 * SEC, 1, Seconds), [0, 2, 0, -1, 25]);
    assert_eq!(d.reply(T0 + 5 * SEC, 1, Seconds), [1, 2, 0, 10, 25]);
    assert_eq!(d.reply(T0 + 15 * SEC, 1, Seconds), [0, 2, 0, -1, 15]);
}

#[test]
fn sliding_counter_edges() {
    let mut d = Driver::new(SlidingCounter::new(10, 10 * SEC).unwrap());
    assert_eq!(d.reply(T0 + 5 * SEC, 4, Seconds), [0, 10, 6, -1, 15]);
    assert_eq!(d.reply(T0 + 9 * SEC, 6, Seconds), [0, 10, 0, -1, 11]);
    // Full: only in the next window, once 10 * (W - e) + W <= 10 W, e >= 1 s.
    assert_eq!(d.reply(T0 + 9 * SEC, 1, Seconds), [1, 10, 0, 2, 11]);
    // At e = 2 s the previous window weighs 8.
    assert_eq!(d.reply(T0 + 12 * SEC, 2, Seconds), [0, 10, 0, -1, 18]);
    // Within this window, as the weight decays: 10 * (W - e) <= 7 W, e >= 3 s.
    assert_eq!(d.reply(T0 + 12 * SEC, 1, Seconds), [1, 10, 0, 1, 18]);
    assert_eq!(d.reply(T0 + 13 * SEC - 1, 1, Seconds), [1, 10, 0, 1, 18]);
    assert!(!d.peek(T0 + 13 * SEC, 1).blocked);
    // Last microsecond of the window, first of the next.
    assert_eq!(d.reply(T0 + 20 * SEC - 1, 0, Millis), [0, 10, 7, -1, 10_001]);
    assert_eq!(d.reply(T0 + 20 * SEC, 0, Seconds), [0, 10, 8, -1, 10]);
    // A gap of several windows: fully rested.
    assert_eq!(d.reply(T0 + 50 * SEC, 0, Seconds), [0, 10, 10, -1, 0]);
    assert_eq!(d.peek(T0, 11).retry_after, RetryAfter::Never);
}

#[test]
fn sliding_counter_may_wait_for_the_window_after_next() {
    // limit 2, previous window full: a request of 2 fits only when the
    // previous window has fully decayed, at the start of the next one.
    let mut d = Driver::new(SlidingCounter::new(2, 10 * SEC).unwrap());
    assert_eq!(d.reply(T0 + 9 * SEC, 2, Seconds), [0, 2, 0, -1, 11]);
    assert_eq!(d.reply(T0 + 9 * SEC, 2, Seconds), [1, 2, 0, 11, 11]);
    assert_eq!(d.reply(T0 + 20 * SEC - 1, 2, Seconds), [1, 2, 1, 1, 1]);
    assert_eq!(d.reply(T0 + 20 * SEC, 2, Seconds), [0, 2, 0, -1, 20]);
}

#[test]
fn window_parameter_ranges() {
    assert!(FixedWindow::new(0, 1).is_err());
    assert!(FixedWindow::new(1, 0).is_err());
    assert!(SlidingCounter::new(1_000_000_001, 1).is_err());
    assert!(SlidingLog::new(1, 1_000_000_000_000_001).is_err());
    assert_eq!(
        SlidingLog::new(0, 1).unwrap_err().to_string(),
        "limit must be an integer from 1 to 1000000000"
    );
}

/// Regression: the soak test found keys whose expiry lay years ahead. A
/// stored window *index* written under a 50 ms window and read under a
/// 250 ms one pointed five times further from the epoch. Windows are now
/// stored by their start instant, so a change of length stays local.
#[test]
fn changing_the_window_length_never_pushes_the_window_away() {
    let now = T0 + 123 * MS;
    let mut fixed = Driver::new(FixedWindow::new(5, 50 * MS).unwrap());
    fixed.call(now, 1);
    let longer = FixedWindow::new(5, 250 * MS).unwrap();
    let out = rl_core::Limiter::check(
        &longer,
        fixed.state.as_ref(),
        rl_core::Instant::from_micros(now),
        1,
    );
    // The 50 ms window [T0+100ms, T0+150ms) counts in the 250 ms window that
    // holds its start, [T0, T0+250ms), and ends with it.
    assert_eq!(out.decision.to_reply(Millis), [0, 5, 3, -1, 127]);
    assert_eq!(
        out.update.unwrap().expires_at,
        rl_core::Instant::from_micros(T0 + 250 * MS)
    );

    let mut counter = Driver::new(SlidingCounter::new(5, 50 * MS).unwrap());
    counter.call(now, 1);
    let longer = SlidingCounter::new(5, 250 * MS).unwrap();
    let out = rl_core::Limiter::check(
        &longer,
        counter.state.as_ref(),
        rl_core::Instant::from_micros(now),
        1,
    );
    // Its count weighs in [T0, T0+250ms) and, decaying, in the next window.
    assert_eq!(out.decision.to_reply(Millis), [0, 5, 3, -1, 377]);
}

/// Regression: after a change of window length, a stored window that does not
/// start on a boundary of the new length was dropped at the next boundary,
/// while `retry_after`, `reset` and the expiry promised it until its start
/// plus the new length. It now counts in the window that holds its start, and
/// every time in the reply says when that window ends.
#[test]
fn a_longer_window_counts_the_previous_units_where_they_may_lie() {
    // Five units in [T0, T0+1s) and one in [T0+1s, T0+2s) under one-second
    // windows. Under two-second windows all six lie in [T0, T0+2s): the
    // stored previous window's units count there, not a window earlier.
    let mut counter = Driver::new(SlidingCounter::new(5, SEC).unwrap());
    assert_eq!(counter.reply(T0, 5, Millis), [0, 5, 0, -1, 2000]);
    assert_eq!(counter.reply(T0 + 1300 * MS, 1, Millis), [0, 5, 0, -1, 1700]);
    counter.limiter = SlidingCounter::new(5, 2 * SEC).unwrap();
    // Six in the window: full. They weigh until T0+2s, then decay over the
    // next window: 6 * (2 s - e) + 1 * 2 s <= 5 * 2 s from e = 666,667 µs.
    assert_eq!(
        counter.peek(T0 + 1302 * MS, 1).to_reply(Millis),
        [1, 5, 0, 1365, 2698]
    );
    assert!(counter.peek(T0 + 2 * SEC + 666_666, 1).blocked);
    assert!(!counter.peek(T0 + 2 * SEC + 666_667, 1).blocked);
    // A start on a boundary of the new length keeps its previous window
    // as the previous one (here the lengths share the boundary T0+2s).
    let mut aligned = Driver::new(SlidingCounter::new(5, SEC).unwrap());
    assert_eq!(aligned.reply(T0 + 1500 * MS, 5, Millis)[0], 0);
    assert_eq!(aligned.reply(T0 + 2300 * MS, 1, Millis), [0, 5, 0, -1, 1700]);
    aligned.limiter = SlidingCounter::new(5, 2 * SEC).unwrap();
    // Window [T0+2s, T0+4s): one unit, and the previous window's five weigh
    // 5 * (2 s - 0.302 s) / 2 s = 4.245: nothing more fits.
    assert_eq!(aligned.peek(T0 + 2302 * MS, 1).to_reply(Millis)[..3], [1, 5, 0]);
}

#[test]
fn a_shorter_window_does_not_know_when_the_old_units_were_taken() {
    // Documented, not conservative: 5 units at T0+1.5s under 2-second
    // windows count in [T0, T0+1s), the window of the new length holding
    // the old start, although they were taken in [T0+1s, T0+2s).
    let mut fixed = Driver::new(FixedWindow::new(5, 2 * SEC).unwrap());
    assert_eq!(fixed.reply(T0 + 1500 * MS, 5, Millis)[..3], [0, 5, 0]);
    fixed.limiter = FixedWindow::new(5, SEC).unwrap();
    assert_eq!(fixed.reply(T0 + 1600 * MS, 5, Millis), [0, 5, 0, -1, 400]);
    let mut counter = Driver::new(SlidingCounter::new(5, 2 * SEC).unwrap());
    assert_eq!(counter.reply(T0 + 1500 * MS, 5, Millis)[..3], [0, 5, 0]);
    counter.limiter = SlidingCounter::new(5, SEC).unwrap();
    // The five weigh as the previous window: 5 * 0.4 = 2, so 3 more fit.
    assert_eq!(counter.peek(T0 + 1600 * MS, 4).to_reply(Millis)[..3], [1, 5, 3]);
    assert_eq!(counter.reply(T0 + 1600 * MS, 3, Millis)[..3], [0, 5, 0]);
}

#[test]
fn a_window_of_another_length_ends_with_the_window_holding_its_start() {
    let s = T0 + 20 * MS; // a 10 ms boundary, inside the 15 ms window [T0+15, T0+30)
    let mut fixed = Driver::new(FixedWindow::new(3, 10 * MS).unwrap());
    assert_eq!(fixed.reply(s, 3, Millis), [0, 3, 0, -1, 10]);
    fixed.limiter = FixedWindow::new(3, 15 * MS).unwrap();
    assert_eq!(fixed.peek(s + 630, 1).to_reply(Millis), [1, 3, 0, 10, 10]);
    assert!(fixed.peek(s + 10 * MS - 1, 1).blocked);
    assert_eq!(fixed.reply(s + 10 * MS, 1, Millis), [0, 3, 2, -1, 15]);

    let mut counter = Driver::new(SlidingCounter::new(3, 10 * MS).unwrap());
    assert_eq!(counter.reply(s, 3, Millis), [0, 3, 0, -1, 20]);
    counter.limiter = SlidingCounter::new(3, 15 * MS).unwrap();
    // Three units in [T0+15, T0+30): they weigh fully until T0+30, then
    // decay over the next window; one unit fits again at T0+35.
    assert_eq!(counter.peek(s + 630, 1).to_reply(Millis), [1, 3, 0, 15, 25]);
    assert!(counter.peek(s + 15 * MS - 1, 1).blocked);
    assert_eq!(counter.reply(s + 15 * MS, 1, Millis), [0, 3, 0, -1, 25]);
}
