//! Decimal numbers as Redis writes and reads them: the expiry strings the
//! module replicates, `loadmodule` arguments, and GCRA states written by
//! earlier releases.

/// "00", "01", ..., "99": two digits per division.
const DIGIT_PAIRS: [u8; 200] = {
    let mut pairs = [0u8; 200];
    let mut i = 0;
    while i < 100 {
        pairs[2 * i] = b'0' + (i / 10) as u8;
        pairs[2 * i + 1] = b'0' + (i % 10) as u8;
        i += 1;
    }
    pairs
};

/// Room for the digits of any `u64`.
pub type Digits = [u8; 20];

/// The decimal digits of `v`, written into `out`. The value is cut into three
/// 8-digit chunks written at fixed places, two digits per step (about 100
/// instructions for 19 digits, against 240 for a digit pair per loop turn).
pub fn format_u64(v: u64, out: &mut Digits) -> &[u8] {
    const CHUNK: u64 = 100_000_000;
    let mut digits = [b'0'; 24];
    let (high, low) = digits.split_at_mut(16);
    let (top, middle) = high.split_at_mut(8);
    push_eight(low, (v % CHUNK) as u32);
    push_eight(middle, (v / CHUNK % CHUNK) as u32);
    // At most 1,844: u64::MAX has 20 digits.
    push_eight(top, (v / CHUNK / CHUNK) as u32);
    // No leading zeros, but one digit for 0.
    let first = digits[..23].iter().position(|&d| d != b'0').unwrap_or(23);
    let len = 24 - first;
    out[..len].copy_from_slice(&digits[first..]);
    &out[..len]
}

/// Write `n` (< 10^8) as exactly eight digits, zero-padded.
fn push_eight(out: &mut [u8], n: u32) {
    let (high, low) = (n / 10_000, n % 10_000);
    for (slot, pair) in out
        .chunks_exact_mut(2)
        .zip([high / 100, high % 100, low / 100, low % 100])
    {
        let at = (pair % 100) as usize * 2;
        slot.copy_from_slice(&DIGIT_PAIRS[at..at + 2]);
    }
}

/// [`parse`] of a number written as the module and Redis write one: no
/// leading zero (the value `0` aside).
pub fn parse_canonical(bytes: &[u8]) -> Option<u128> {
    if bytes.len() > 1 && bytes[0] == b'0' {
        return None;
    }
    parse(bytes)
}

/// Parse a non-empty run of ASCII digits that fits in a u128.
pub fn parse(bytes: &[u8]) -> Option<u128> {
    if bytes.is_empty() || bytes.len() > 39 {
        return None;
    }
    // Any 19 digits fit a u64: those are summed in 64 bits, only the rest in
    // 128 bits with overflow checks.
    let (head, tail) = bytes.split_at(bytes.len().min(19));
    let mut small = 0u64;
    for &b in head {
        let digit = b.wrapping_sub(b'0');
        if digit > 9 {
            return None;
        }
        small = small * 10 + u64::from(digit);
    }
    tail.iter().try_fold(u128::from(small), |acc, &b| {
        if !b.is_ascii_digit() {
            return None;
        }
        acc.checked_mul(10)?.checked_add(u128::from(b - b'0'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn u64_round_trip() {
        // Every digit count, and both sides of every power of ten.
        let powers = (0..20).map(|k| 10u128.pow(k));
        let edges = powers.flat_map(|p| [p - 1, p, p + 1, p.saturating_mul(5).saturating_add(3)]);
        for v in (0..2_000u128)
            .chain(edges)
            .filter_map(|v| u64::try_from(v).ok())
            .chain([u64::MAX, u64::MAX - 1, 1_763_700_000_000_000])
        {
            let mut out = Digits::default();
            let text = format_u64(v, &mut out);
            assert_eq!(text, v.to_string().as_bytes(), "{v}");
            assert_eq!(parse(text), Some(u128::from(v)), "{v}");
        }
    }

    #[test]
    fn parsing() {
        assert_eq!(parse(b"340282366920938463463374607431768211455"), Some(u128::MAX));
        assert_eq!(parse(b"340282366920938463463374607431768211456"), None);
        assert_eq!(
            parse(b"1234567890123456789012"),
            Some(1_234_567_890_123_456_789_012)
        );
        for bad in [
            &b""[..],
            b"12a",
            b"1234567890123456789012a",
            b"12/3",
            b"-1",
            b" 1",
        ] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
        assert_eq!(parse_canonical(b"0"), Some(0));
        assert_eq!(parse_canonical(b"05"), None);
        assert_eq!(parse_canonical(b"00"), None);
        assert_eq!(parse_canonical(b"50"), Some(50));
    }
}
