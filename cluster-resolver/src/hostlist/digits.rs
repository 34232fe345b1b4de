//! Decimal numbers as hostlists write them: zero padded to a minimum width.
//!
//! Hand-written rather than `format!("{:0w$}")` because expansion writes millions of them and the
//! formatting machinery costs more than the names themselves.

/// Number of decimal digits of `v` (`0` has one).
pub(super) fn digit_count(v: u64) -> usize {
    // `ilog10` is a handful of instructions; `checked_ilog10` is `None` only for 0.
    v.checked_ilog10().map_or(1, |l| l as usize + 1)
}

/// Length of `v` written zero padded to at least `width` digits.
pub(super) fn padded_len(v: u64, width: usize) -> usize {
    digit_count(v).max(width)
}

/// Appends `v` zero padded to at least `width` digits.
pub(super) fn push_padded(out: &mut String, v: u64, width: usize) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    let mut rest = v;
    loop {
        i -= 1;
        // `rest % 10 < 10`, so the cast and the sum stay within ASCII digits.
        buf[i] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    for _ in (buf.len() - i)..width {
        out.push('0');
    }
    for &b in &buf[i..] {
        out.push(char::from(b));
    }
}

/// Sum over `lo..=hi` of `padded_len(v, width)`, without iterating: one term per decimal
/// length band. Used to bound the bytes an expansion would allocate.
pub(super) fn padded_len_sum(lo: u64, hi: u64, width: usize) -> u128 {
    let mut total: u128 = 0;
    let mut band_lo = lo;
    loop {
        let d = digit_count(band_lo);
        // Largest number with `d` digits; `10^20` overflows u64, so the 20-digit band ends at MAX.
        let band_max = 10u64.checked_pow(d as u32).map_or(u64::MAX, |p| p - 1);
        let band_hi = band_max.min(hi);
        total += u128::from(band_hi - band_lo + 1) * padded_len(band_lo, width) as u128;
        if band_hi == hi {
            return total;
        }
        band_lo = band_hi + 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_digits() {
        assert_eq!(digit_count(0), 1);
        assert_eq!(digit_count(9), 1);
        assert_eq!(digit_count(10), 2);
        assert_eq!(digit_count(999), 3);
        assert_eq!(digit_count(1000), 4);
        assert_eq!(digit_count(u64::MAX), 20);
    }

    #[test]
    fn pads_to_width_but_never_truncates() {
        let cases = [
            (0, 0, "0"),
            (0, 3, "000"),
            (7, 1, "7"),
            (9, 3, "009"),
            (1234, 2, "1234"),
            (u64::MAX, 0, "18446744073709551615"),
            (5, 25, "0000000000000000000000005"),
        ];
        for (v, w, want) in cases {
            let mut s = String::from("x");
            push_padded(&mut s, v, w);
            assert_eq!(s, format!("x{want}"), "{v} width {w}");
            assert_eq!(padded_len(v, w), want.len());
        }
    }

    #[test]
    fn padded_len_sum_matches_iteration() {
        for (lo, hi, w) in [
            (0, 0, 0),
            (0, 1234, 0),
            (7, 13, 2),
            (95, 105, 3),
            (1, 1000, 4),
        ] {
            let want: u128 = (lo..=hi).map(|v| padded_len(v, w) as u128).sum();
            assert_eq!(padded_len_sum(lo, hi, w), want, "{lo}-{hi} w{w}");
        }
        let top = padded_len_sum(u64::MAX - 5, u64::MAX, 0);
        assert_eq!(top, 6 * 20);
        let all = padded_len_sum(0, u64::MAX, 0);
        assert!(all > u128::from(u64::MAX));
    }
}
