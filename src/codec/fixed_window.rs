//! Fixed-window state as a 12-byte string: the tag `F`, the window start (µs,
//! 7 bytes), the units allowed in it (4 bytes), little-endian.

use super::{Encoder, Fields, ValueCodec};
use crate::reply::Value;
use crate::store::Bytes;
use rl_core::{FixedWindow, WindowCount};

pub struct FixedWindowCodec;

const TAG: u8 = b'F';
const LEN: usize = 12;

impl ValueCodec for FixedWindowCodec {
    type Value = WindowCount;
    type Limiter = FixedWindow;
    const TAGS: &'static [u8] = &[TAG];
    const SHARE_NEW: bool = true;

    fn decode(bytes: &[u8]) -> Result<WindowCount, &'static str> {
        let mut f = Fields::tagged(bytes, TAG, LEN).ok_or("expected 12 bytes starting with 'F'")?;
        let start = f.take_u64(7);
        let count = f.take_u64(4);
        WindowCount::new(start, count).ok_or("count out of range")
    }

    fn describe(w: &WindowCount) -> Vec<(&'static str, Value)> {
        vec![
            ("window_start_us", Value::int(w.start())),
            ("count", Value::int(w.count())),
        ]
    }

    fn encode(w: &WindowCount) -> Bytes {
        Encoder::<LEN>::tagged(TAG)
            .put(u128::from(w.start()), 7)
            .put(u128::from(w.count()), 4)
            .done()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_rejects() {
        let w = WindowCount::new(1_763_700_000_000_000, 999_999_999).unwrap();
        let e = FixedWindowCodec::encode(&w);
        assert_eq!(e.as_slice().len(), 12);
        assert_eq!(FixedWindowCodec::decode(e.as_slice()), Ok(w));
        assert!(FixedWindowCodec::decode(b"123456789012").is_err());
        let mut over = e.as_slice().to_vec();
        over[8..12].copy_from_slice(&4_000_000_001u32.to_le_bytes());
        assert_eq!(FixedWindowCodec::decode(&over), Err("count out of range"));
    }
}
