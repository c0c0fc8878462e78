//! Sliding-counter state as a 16-byte string: the tag `C`, the current
//! window start (µs, 7 bytes), the previous and the current window's counts
//! (4 bytes each), little-endian.

use super::{Encoder, Fields, ValueCodec};
use crate::reply::Value;
use crate::store::Bytes;
use rl_core::{SlidingCounter, WindowPair};

pub struct SlidingCounterCodec;

const TAG: u8 = b'C';
const LEN: usize = 16;

impl ValueCodec for SlidingCounterCodec {
    type Value = WindowPair;
    type Limiter = SlidingCounter;
    const TAGS: &'static [u8] = &[TAG];
    const SHARE_NEW: bool = true;

    fn decode(bytes: &[u8]) -> Result<WindowPair, &'static str> {
        let mut f = Fields::tagged(bytes, TAG, LEN).ok_or("expected 16 bytes starting with 'C'")?;
        let start = f.take_u64(7);
        let previous = f.take_u64(4);
        let current = f.take_u64(4);
        WindowPair::new(start, previous, current).ok_or("count out of range")
    }

    fn describe(p: &WindowPair) -> Vec<(&'static str, Value)> {
        vec![
            ("window_start_us", Value::int(p.start())),
            ("previous", Value::int(p.previous())),
            ("current", Value::int(p.current())),
        ]
    }

    fn encode(p: &WindowPair) -> Bytes {
        Encoder::<LEN>::tagged(TAG)
            .put(u128::from(p.start()), 7)
            .put(u128::from(p.previous()), 4)
            .put(u128::from(p.current()), 4)
            .done()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_rejects() {
        let p = WindowPair::new(1_763_700_000_000_000, 7, 1_000_000_000).unwrap();
        let e = SlidingCounterCodec::encode(&p);
        assert_eq!(e.as_slice().len(), 16);
        assert_eq!(SlidingCounterCodec::decode(e.as_slice()), Ok(p));
        assert!(SlidingCounterCodec::decode(&e.as_slice()[..15]).is_err());
        assert!(SlidingCounterCodec::decode(b"1234567890123456").is_err());
    }
}
