//! Limits described in the words a user thinks in, validated when built,
//! and the options of one call.

use std::fmt;
use std::time::Duration;

use crate::{params, Error};

/// The algorithm of a [`Limit`], with its parameters as the server takes
/// them (durations in milliseconds: every call is sent with `MS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Algorithm {
    /// `max_burst count period_ms`
    Gcra {
        max_burst: u64,
        count: u64,
        period_ms: u64,
    },
    /// `capacity refill_count refill_period_ms`
    TokenBucket { capacity: u64, refill: u64, per_ms: u64 },
    /// `limit window_ms`
    Fixed { limit: u64, window_ms: u64 },
    /// `limit window_ms`
    SlidingLog { limit: u64, window_ms: u64 },
    /// `limit window_ms`
    SlidingCounter { limit: u64, window_ms: u64 },
}

/// A rate limit: an algorithm and its parameters, independent of any key
/// or connection. Build one with [`Limit::gcra`], [`Limit::token_bucket`],
/// [`Limit::fixed_window`], [`Limit::sliding_log`] or
/// [`Limit::sliding_counter`]; bind it to a client with
/// [`RateLimits::limiter`](crate::RateLimits::limiter) (or the async
/// client's) to make calls.
///
/// Every constructor checks each parameter against its range before any
/// call (clients/contract/ranges.json), upper bounds included: a value out
/// of range, or a duration that is not a whole number of milliseconds, is
/// an [`Error::InvalidParameter`] in the words the user wrote. What only
/// the server knows (its `sliding_log_max_limit`, the functions edition's
/// narrower ranges) is found by [`Limiter::check`](crate::Limiter::check).
///
/// ```
/// use redis_ratelimit_client::Limit;
/// use std::time::Duration;
///
/// // 10 per second, at most 20 at once from rest.
/// let api = Limit::gcra_with_burst(10, Duration::from_secs(1), 20).unwrap();
/// assert_eq!(api.limit(), 20);
/// // Out of range: the parameter, its range and the value.
/// let err = Limit::gcra(u64::MAX, Duration::from_secs(1)).unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     "rate must be an integer from 1 to 1000000000, got 18446744073709551615"
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Limit {
    pub(crate) algorithm: Algorithm,
}

fn count(name: &'static str, value: u64) -> Result<u64, Error> {
    params::count(name, value, 1, params::COUNT_MAX)
}

fn window(name: &'static str, d: Duration) -> Result<u64, Error> {
    params::millis(name, d, 1, params::MS_MAX)
}

impl Limit {
    /// GCRA (the Generic Cell Rate Algorithm): `rate` requests `per`
    /// duration, evenly spaced, with a burst of `rate` at once from rest
    /// (`RL.GCRA key rate-1 rate per`).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] naming `rate` or `per`.
    pub fn gcra(rate: u64, per: Duration) -> Result<Limit, Error> {
        Limit::gcra_with_burst(rate, per, rate)
    }

    /// GCRA with an explicit `burst`: the most requests allowed at once
    /// from rest (the reply's `limit`; the command's `max_burst` is
    /// `burst - 1`).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] naming `rate`, `per` or `burst`.
    pub fn gcra_with_burst(rate: u64, per: Duration, burst: u64) -> Result<Limit, Error> {
        let count = count("rate", rate)?;
        let period_ms = window("per", per)?;
        let burst = self::count("burst", burst)?;
        Ok(Limit {
            algorithm: Algorithm::Gcra {
                max_burst: burst - 1,
                count,
                period_ms,
            },
        })
    }

    /// A token bucket of `capacity` tokens, full at first, refilled with
    /// `refill` tokens `per` duration (`RL.TOKEN_BUCKET`).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] naming `capacity`, `refill` or `per`.
    pub fn token_bucket(capacity: u64, refill: u64, per: Duration) -> Result<Limit, Error> {
        Ok(Limit {
            algorithm: Algorithm::TokenBucket {
                capacity: count("capacity", capacity)?,
                refill: count("refill", refill)?,
                per_ms: window("per", per)?,
            },
        })
    }

    /// At most `limit` per `window`, windows aligned to the Unix epoch
    /// (`RL.FIXED`).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] naming `limit` or `window`.
    pub fn fixed_window(limit: u64, window: Duration) -> Result<Limit, Error> {
        Ok(Limit {
            algorithm: Algorithm::Fixed {
                limit: count("limit", limit)?,
                window_ms: self::window("window", window)?,
            },
        })
    }

    /// At most `limit` in any `window`, exactly: a log of instants
    /// (`RL.SLIDING_LOG`). `limit` is at most 1,000,000; the server's own
    /// cap (10,000 unless raised) is checked by
    /// [`Limiter::check`](crate::Limiter::check).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] naming `limit` or `window`.
    pub fn sliding_log(limit: u64, window: Duration) -> Result<Limit, Error> {
        Ok(Limit {
            algorithm: Algorithm::SlidingLog {
                limit: params::count("limit", limit, 1, params::CAP_MAX)?,
                window_ms: self::window("window", window)?,
            },
        })
    }

    /// At most `limit` per `window`, estimated from the current and
    /// previous windows (`RL.SLIDING_COUNTER`).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] naming `limit` or `window`.
    pub fn sliding_counter(limit: u64, window: Duration) -> Result<Limit, Error> {
        Ok(Limit {
            algorithm: Algorithm::SlidingCounter {
                limit: count("limit", limit)?,
                window_ms: self::window("window", window)?,
            },
        })
    }

    /// The most requests allowed at once from rest: the reply's `limit`.
    pub fn limit(&self) -> u64 {
        match self.algorithm {
            Algorithm::Gcra { max_burst, .. } => max_burst + 1,
            Algorithm::TokenBucket { capacity, .. } => capacity,
            Algorithm::Fixed { limit, .. }
            | Algorithm::SlidingLog { limit, .. }
            | Algorithm::SlidingCounter { limit, .. } => limit,
        }
    }

    /// The time an exhausted limiter takes to be fully rested again (a
    /// window, or `limit` emission intervals), rounded up to the
    /// millisecond: the `w` of the `RateLimit-Policy` header.
    pub fn window(&self) -> Duration {
        let ms = match self.algorithm {
            Algorithm::Gcra {
                max_burst,
                count,
                period_ms,
            } => ((max_burst as u128 + 1) * period_ms as u128).div_ceil(count as u128),
            Algorithm::TokenBucket {
                capacity,
                refill,
                per_ms,
            } => (capacity as u128 * per_ms as u128).div_ceil(refill as u128),
            Algorithm::Fixed { window_ms, .. }
            | Algorithm::SlidingLog { window_ms, .. }
            | Algorithm::SlidingCounter { window_ms, .. } => window_ms as u128,
        };
        Duration::from_millis(u64::try_from(ms).unwrap_or(u64::MAX))
    }

    /// A sliding log: the one kind that records a tag.
    #[cfg(feature = "axum")]
    pub(crate) fn is_sliding_log(&self) -> bool {
        matches!(self.algorithm, Algorithm::SlidingLog { .. })
    }

    /// The module's command name (`RL.GCRA`, ...).
    pub(crate) fn command(&self) -> Command {
        match self.algorithm {
            Algorithm::Gcra { .. } => Command::Gcra,
            Algorithm::TokenBucket { .. } => Command::TokenBucket,
            Algorithm::Fixed { .. } => Command::Fixed,
            Algorithm::SlidingLog { .. } => Command::SlidingLog,
            Algorithm::SlidingCounter { .. } => Command::SlidingCounter,
        }
    }

    /// The algorithm's two names: its constructor's (`gcra`,
    /// `token_bucket`, `fixed_window`, `sliding_log`, `sliding_counter`)
    /// and the one `RL.ALL` takes (`GCRA`, `TOKEN_BUCKET`, ...).
    fn names(&self) -> (&'static str, &'static str) {
        match self.algorithm {
            Algorithm::Gcra { .. } => ("gcra", "GCRA"),
            Algorithm::TokenBucket { .. } => ("token_bucket", "TOKEN_BUCKET"),
            Algorithm::Fixed { .. } => ("fixed_window", "FIXED"),
            Algorithm::SlidingLog { .. } => ("sliding_log", "SLIDING_LOG"),
            Algorithm::SlidingCounter { .. } => ("sliding_counter", "SLIDING_COUNTER"),
        }
    }

    /// The algorithm in the words of its constructor: a limiter's name
    /// unless given one.
    pub(crate) fn kind(&self) -> &'static str {
        self.names().0
    }

    /// The name `RL.ALL` takes for this algorithm.
    pub(crate) fn all_name(&self) -> &'static str {
        self.names().1
    }

    /// The parameters after the key, durations in ms.
    pub(crate) fn params(&self, out: &mut Vec<u64>) {
        match self.algorithm {
            Algorithm::Gcra {
                max_burst,
                count,
                period_ms,
            } => out.extend([max_burst, count, period_ms]),
            Algorithm::TokenBucket {
                capacity,
                refill,
                per_ms,
            } => out.extend([capacity, refill, per_ms]),
            Algorithm::Fixed { limit, window_ms }
            | Algorithm::SlidingLog { limit, window_ms }
            | Algorithm::SlidingCounter { limit, window_ms } => out.extend([limit, window_ms]),
        }
    }
}

impl AsRef<Limit> for Limit {
    fn as_ref(&self) -> &Limit {
        self
    }
}

impl fmt::Display for Limit {
    /// The command and its parameters, as sent (`RL.GCRA 19 10 1000 MS`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut params = Vec::with_capacity(3);
        self.params(&mut params);
        write!(f, "{}", self.command().module_name())?;
        for p in params {
            write!(f, " {p}")?;
        }
        write!(f, " MS")
    }
}

/// A limit on work in flight: at most `limit` units held at once, each
/// lease ending when released or after `timeout` (`RL.CONCURRENCY`).
///
/// ```
/// use redis_ratelimit_client::ConcurrencyLimit;
/// use std::time::Duration;
///
/// let exports = ConcurrencyLimit::new(5, Duration::from_secs(60)).unwrap();
/// assert_eq!(exports.limit(), 5);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConcurrencyLimit {
    pub(crate) limit: u64,
    pub(crate) timeout_ms: u64,
}

impl ConcurrencyLimit {
    /// At most `limit` units at once; a lease not released ends after
    /// `timeout`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] naming `limit` or `timeout`.
    pub fn new(limit: u64, timeout: Duration) -> Result<ConcurrencyLimit, Error> {
        Ok(ConcurrencyLimit {
            limit: params::count("limit", limit, 1, params::CAP_MAX)?,
            timeout_ms: window("timeout", timeout)?,
        })
    }

    /// The most units held at once.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// How long a lease lasts unless released or renewed.
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }
}

/// The command a call runs: the module's name, the function's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Command {
    Gcra,
    TokenBucket,
    Fixed,
    SlidingLog,
    SlidingCounter,
    All,
    Concurrency,
    Release,
    Renew,
    Log,
    Inspect,
}

impl Command {
    pub(crate) fn module_name(self) -> &'static str {
        match self {
            Command::Gcra => "RL.GCRA",
            Command::TokenBucket => "RL.TOKEN_BUCKET",
            Command::Fixed => "RL.FIXED",
            Command::SlidingLog => "RL.SLIDING_LOG",
            Command::SlidingCounter => "RL.SLIDING_COUNTER",
            Command::All => "RL.ALL",
            Command::Concurrency => "RL.CONCURRENCY",
            Command::Release => "RL.RELEASE",
            Command::Renew => "RL.RENEW",
            Command::Log => "RL.LOG",
            Command::Inspect => "RL.INSPECT",
        }
    }

    /// The library's function, and the generated script's file stem.
    pub(crate) fn function_name(self) -> &'static str {
        match self {
            Command::Gcra => "rl_gcra",
            Command::TokenBucket => "rl_token_bucket",
            Command::Fixed => "rl_fixed",
            Command::SlidingLog => "rl_sliding_log",
            Command::SlidingCounter => "rl_sliding_counter",
            Command::All => "rl_all",
            Command::Concurrency => "rl_concurrency",
            Command::Release => "rl_release",
            Command::Renew => "rl_renew",
            Command::Log => "rl_log",
            Command::Inspect => "rl_inspect",
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// The mode of a call: at most one of these (the server refuses two).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
enum Mode {
    #[default]
    Take,
    Refund,
    Force,
    Wait(Duration),
    AtMost,
}

/// The options of one call: how many units, and the server's options
/// (`PEEK`, `REFUND`, `FORCE`, `WAIT`, `AT_MOST`, `BLOCK`, `TAG`). `REFUND`,
/// `FORCE`, `WAIT` and `AT_MOST` exclude one another, so setting one
/// replaces another; `BLOCK` goes with `WAIT` and `AT_MOST` (with
/// `REFUND` or `FORCE` the server answers a syntax error naming both).
/// `TAG` (sliding logs and `RL.ALL` only) records who took the units.
///
/// ```
/// use redis_ratelimit_client::Take;
/// use std::time::Duration;
///
/// // Up to 100 units, as many as are left; none left blocks the key for a minute.
/// let batch = Take::n(100).at_most().block(Duration::from_secs(60));
/// # let _ = batch;
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Take {
    n: u64,
    peek: bool,
    mode: Mode,
    block: Option<Duration>,
    tag: Option<Vec<u8>>,
}

impl Default for Take {
    fn default() -> Take {
        Take::n(1)
    }
}

impl Take {
    /// A request of one unit.
    pub fn one() -> Take {
        Take::n(1)
    }

    /// A request of `n` units (0: a query, which changes nothing).
    pub fn n(n: u64) -> Take {
        Take {
            n,
            peek: false,
            mode: Mode::Take,
            block: None,
            tag: None,
        }
    }

    /// A query: the current state, nothing recorded (`quantity` 0).
    pub fn query() -> Take {
        Take::n(0)
    }

    /// Answer what the call would, writing nothing (`PEEK`).
    pub fn peek(mut self) -> Take {
        self.peek = true;
        self
    }

    /// Give the `n` units back instead of taking them (`REFUND`).
    pub fn refund(mut self) -> Take {
        self.mode = Mode::Refund;
        self
    }

    /// Take the units even past the limit, into debt (`FORCE`).
    pub fn force(mut self) -> Take {
        self.mode = Mode::Force;
        self
    }

    /// Reserve the earliest slot within `max_wait` (`WAIT`): allowed with
    /// [`Decision::retry_after`](crate::Decision::retry_after) the time to
    /// wait before doing the work. GCRA, token bucket and sliding log only.
    /// `max_wait` (the contract's `wait`) is a whole number of
    /// milliseconds, 0 allowed.
    pub fn wait(mut self, max_wait: Duration) -> Take {
        self.mode = Mode::Wait(max_wait);
        self
    }

    /// Grant as many of the `n` units as are left, at most `n`
    /// (`AT_MOST`): [`Decision::granted`](crate::Decision::granted) tells
    /// how many.
    pub fn at_most(mut self) -> Take {
        self.mode = Mode::AtMost;
        self
    }

    /// A refusal blocks the key for `duration` (`BLOCK`): every request is
    /// refused until then.
    pub fn block(mut self, duration: Duration) -> Take {
        self.block = Some(duration);
        self
    }

    /// Who takes the units (`TAG`): each entry a sliding log records
    /// carries it, and [`RateLimits::log`](crate::RateLimits::log) reads it
    /// back. 1 to 1,024 bytes, any bytes (the server's cap,
    /// `tag_max_bytes`, is 64 by default); checked when the call is made,
    /// never cut short. Sliding logs and `all_of` only (the server refuses
    /// it elsewhere); not with [`Take::refund`] (the server refuses both).
    pub fn tag(mut self, tag: impl Into<Vec<u8>>) -> Take {
        self.tag = Some(tag.into());
        self
    }

    /// The units asked for.
    pub fn units(&self) -> u64 {
        self.n
    }

    pub(crate) fn is_at_most(&self) -> bool {
        self.mode == Mode::AtMost
    }

    /// A plain take, whose refusal the local memory may keep: units taken
    /// (not a query), nothing asked but the take itself (`BLOCK` aside,
    /// which only lengthens the refusal the server answers; and `TAG`,
    /// which changes nothing in a refusal and is part of what the memory
    /// knows the call by).
    pub(crate) fn is_plain(&self) -> bool {
        self.n > 0 && !self.peek && self.mode == Mode::Take
    }

    /// A call that decides on units (the metrics count it): units asked,
    /// taken (not a peek, a query or a refund).
    pub(crate) fn is_counted(&self) -> bool {
        self.n > 0 && !self.peek && self.mode != Mode::Refund
    }

    /// The quantity and options after a command's parameters, each checked
    /// against its range.
    pub(crate) fn args(&self, out: &mut Vec<Arg>) -> Result<(), Error> {
        out.push(Arg::Int(params::count("n", self.n, 0, params::COUNT_MAX)?));
        out.push(Arg::Word("MS"));
        if self.peek {
            out.push(Arg::Word("PEEK"));
        }
        match self.mode {
            Mode::Take => {}
            Mode::Refund => out.push(Arg::Word("REFUND")),
            Mode::Force => out.push(Arg::Word("FORCE")),
            Mode::AtMost => out.push(Arg::Word("AT_MOST")),
            Mode::Wait(max_wait) => {
                out.push(Arg::Word("WAIT"));
                out.push(Arg::Int(params::millis("wait", max_wait, 0, params::MS_MAX)?));
            }
        }
        if let Some(duration) = self.block {
            out.push(Arg::Word("BLOCK"));
            out.push(Arg::Int(params::millis("block", duration, 1, params::MS_MAX)?));
        }
        if let Some(tag) = &self.tag {
            out.push(Arg::Word("TAG"));
            out.push(Arg::Bytes(params::tag(tag)?.to_vec()));
        }
        Ok(())
    }
}

/// One argument of a call: a number, a fixed word, or bytes (a tag).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Arg {
    Int(u64),
    Word(&'static str),
    Bytes(Vec<u8>),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gcra_in_words() {
        let l = Limit::gcra_with_burst(10, Duration::from_secs(1), 20).unwrap();
        assert_eq!(l.to_string(), "RL.GCRA 19 10 1000 MS");
        assert_eq!(l.limit(), 20);
        assert_eq!(l.window(), Duration::from_secs(2));
        let l = Limit::gcra(3, Duration::from_secs(1)).unwrap();
        assert_eq!(l.to_string(), "RL.GCRA 2 3 1000 MS");
        // 3 intervals of 333.33 ms: 1000 ms, never less.
        assert_eq!(l.window(), Duration::from_millis(1000));
        let l = Limit::gcra(3, Duration::from_millis(1000)).unwrap();
        assert_eq!(
            Limit::gcra_with_burst(3, Duration::from_secs(1), 1)
                .unwrap()
                .window(),
            Duration::from_millis(334)
        );
        assert_eq!(l.limit(), 3);
    }

    #[test]
    fn every_constructor() {
        let s = Duration::from_secs(1);
        assert_eq!(
            Limit::token_bucket(5, 2, s).unwrap().to_string(),
            "RL.TOKEN_BUCKET 5 2 1000 MS"
        );
        assert_eq!(
            Limit::fixed_window(5, s).unwrap().to_string(),
            "RL.FIXED 5 1000 MS"
        );
        assert_eq!(
            Limit::sliding_log(5, s).unwrap().to_string(),
            "RL.SLIDING_LOG 5 1000 MS"
        );
        assert_eq!(
            Limit::sliding_counter(5, s).unwrap().to_string(),
            "RL.SLIDING_COUNTER 5 1000 MS"
        );
        assert_eq!(
            Limit::token_bucket(5, 2, s).unwrap().window(),
            Duration::from_millis(2500)
        );
    }

    #[test]
    fn options_as_sent() {
        let args = |t: Take| {
            let mut out = Vec::new();
            t.args(&mut out).map(|()| out)
        };
        use Arg::{Int, Word};
        assert_eq!(args(Take::one()).unwrap(), [Int(1), Word("MS")]);
        assert_eq!(
            args(
                Take::n(3)
                    .peek()
                    .wait(Duration::from_millis(500))
                    .block(Duration::from_secs(2))
            )
            .unwrap(),
            [
                Int(3),
                Word("MS"),
                Word("PEEK"),
                Word("WAIT"),
                Int(500),
                Word("BLOCK"),
                Int(2000)
            ]
        );
        assert_eq!(
            args(Take::n(2).refund()).unwrap(),
            [Int(2), Word("MS"), Word("REFUND")]
        );
        assert_eq!(
            args(Take::n(2).force()).unwrap(),
            [Int(2), Word("MS"), Word("FORCE")]
        );
        assert_eq!(
            args(Take::n(2).at_most()).unwrap(),
            [Int(2), Word("MS"), Word("AT_MOST")]
        );
        assert_eq!(
            args(Take::one().wait(Duration::ZERO)).unwrap(),
            [Int(1), Word("MS"), Word("WAIT"), Int(0)]
        );
        assert_eq!(
            args(Take::one().block(Duration::from_micros(10)))
                .unwrap_err()
                .to_string(),
            "block must be a whole number of milliseconds, got 0.01 ms"
        );
    }
}
