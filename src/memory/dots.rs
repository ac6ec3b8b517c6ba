//! The integer sums a vector scan spends its time in, with SIMD where the CPU has AVX2:
//! one-byte codes against a query rounded to 16 bits, and half bytes against one rounded
//! to 8. Each has a plain twin that any CPU runs, and the tests hold them equal.

fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Each row of `codes` (`query.len()` values a row) · `query`, in integers.
pub(super) fn rounded_dots(codes: &[i8], query: &[i16]) -> Vec<i64> {
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: this CPU has AVX2, as just checked.
        return unsafe { rounded_dots_avx2(codes, query) };
    }
    rounded_dots_plain(codes, query)
}

/// The same sums on any CPU.
fn rounded_dots_plain(codes: &[i8], query: &[i16]) -> Vec<i64> {
    let d = query.len().max(1);
    codes
        .chunks_exact(d)
        .map(|row| {
            row.iter()
                .zip(query)
                .map(|(x, y)| *x as i64 * *y as i64)
                .sum()
        })
        .collect()
}

/// Sixteen codes at a time, widened to 16 bits and multiplied with the query's in pairs
/// (`vpmaddwd`): left to itself, the compiler widened both to 32 bits and multiplied
/// eight at a time (`vpmulld`), several times slower.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn rounded_dots_avx2(codes: &[i8], query: &[i16]) -> Vec<i64> {
    use std::arch::x86_64::{
        __m128i, __m256i, _mm256_add_epi32, _mm256_castsi256_si128, _mm256_cvtepi8_epi16,
        _mm256_extracti128_si256, _mm256_loadu_si256, _mm256_madd_epi16, _mm256_setzero_si256,
        _mm256_storeu_si256, _mm_add_epi32, _mm_cvtsi128_si32, _mm_loadu_si128, _mm_shuffle_epi32,
    };
    const LANES: usize = 16;
    let d = query.len();
    let whole = d - d % LANES;
    // A row's whole sum, at most d × 127 × 32,767, fits in an i32 up to 512 dimensions:
    // then its lanes are added in registers (storing them and adding one by one took a
    // third of the scan).
    let sum_fits_i32 = whole <= 512;
    let mut out = Vec::with_capacity(codes.len() / d.max(1));
    for row in codes.chunks_exact(d.max(1)) {
        let mut sums = _mm256_setzero_si256();
        let mut at = 0;
        while at < whole {
            // SAFETY: `at + 16 <= whole <= d`, and `row` and `query` hold `d` values each;
            // the loads need no alignment.
            let (x, y) = unsafe {
                (
                    _mm_loadu_si128(row.as_ptr().add(at).cast::<__m128i>()),
                    _mm256_loadu_si256(query.as_ptr().add(at).cast::<__m256i>()),
                )
            };
            // Each of the 8 lanes of i32 sums at most 4096 / 8 products of 127 × 32,767:
            // below 2³¹ (see `codes::MAX_DIMENSIONS`).
            sums = _mm256_add_epi32(sums, _mm256_madd_epi16(_mm256_cvtepi8_epi16(x), y));
            at += LANES;
        }
        let mut total: i64 = if sum_fits_i32 {
            let four = _mm_add_epi32(
                _mm256_castsi256_si128(sums),
                _mm256_extracti128_si256::<1>(sums),
            );
            let two = _mm_add_epi32(four, _mm_shuffle_epi32::<0b01_00_11_10>(four));
            let one = _mm_add_epi32(two, _mm_shuffle_epi32::<0b10_11_00_01>(two));
            i64::from(_mm_cvtsi128_si32(one))
        } else {
            let mut lanes = [0i32; 8];
            // SAFETY: `lanes` is 32 bytes; the store needs no alignment.
            unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast::<__m256i>(), sums) };
            lanes.iter().map(|s| i64::from(*s)).sum()
        };
        for i in whole..d {
            total += i64::from(row[i]) * i64::from(query[i]);
        }
        out.push(total);
    }
    out
}

/// Each row of `packed` (`even.len()` bytes a row, two half bytes each) · the query: the
/// low half of byte j times `even[j]`, its high half times `odd[j]`.
pub(super) fn coarse_dots(packed: &[u8], even: &[i8], odd: &[i8]) -> Vec<i32> {
    // The SIMD loop reads `even.len()` values of each.
    assert_eq!(even.len(), odd.len(), "the query's halves differ in width");
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: this CPU has AVX2, as just checked.
        return unsafe { coarse_dots_avx2(packed, even, odd) };
    }
    coarse_dots_plain(packed, even, odd)
}

/// The same sums on any CPU.
fn coarse_dots_plain(packed: &[u8], even: &[i8], odd: &[i8]) -> Vec<i32> {
    let w = even.len().max(1);
    packed
        .chunks_exact(w)
        .map(|row| half_bytes_dot(row, even, odd))
        .collect()
}

/// One row's half bytes · the query: the low half of byte j times `even[j]`, its high half
/// times `odd[j]`.
fn half_bytes_dot(row: &[u8], even: &[i8], odd: &[i8]) -> i32 {
    row.iter()
        .zip(even.iter().zip(odd))
        .map(|(b, (e, o))| i32::from(b & 15) * i32::from(*e) + i32::from(b >> 4) * i32::from(*o))
        .sum()
}

/// Thirty-two bytes (sixty-four half bytes) at a time: the halves split with a mask and a
/// shift, multiplied as unsigned bytes with the signed query's and added in pairs
/// (`vpmaddubsw`: at most 2 × 15 × 127 a pair, so never saturating, and both halves'
/// pairs together at most 7,620). Four such steps add in 16 bits (at most 30,480) before
/// a multiply with ones widens them to 32; four rows at a time, whose lanes are then added
/// together (`vphaddd`): the sums per row otherwise cost a third of the scan.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn coarse_dots_avx2(packed: &[u8], even: &[i8], odd: &[i8]) -> Vec<i32> {
    use std::arch::x86_64::{
        __m128i, _mm256_castsi256_si128, _mm256_extracti128_si256, _mm256_hadd_epi32,
        _mm_add_epi32, _mm_cvtsi128_si32, _mm_shuffle_epi32, _mm_storeu_si128,
    };
    if even.is_empty() {
        // Rows of no width, one a byte as the plain sums count them: each sums to 0.
        return vec![0; packed.len()];
    }
    let w = even.len();
    let mut out = Vec::with_capacity(packed.len() / w);
    let mut rows = packed.chunks_exact(4 * w);
    for four in &mut rows {
        let row = |i: usize| &four[i * w..(i + 1) * w];
        // SAFETY: this CPU has AVX2 (the caller's contract); each row holds `w` bytes.
        let (a, b, c, d) = unsafe {
            (
                coarse_lanes_avx2(row(0), even, odd),
                coarse_lanes_avx2(row(1), even, odd),
                coarse_lanes_avx2(row(2), even, odd),
                coarse_lanes_avx2(row(3), even, odd),
            )
        };
        let sums = _mm256_hadd_epi32(_mm256_hadd_epi32(a, b), _mm256_hadd_epi32(c, d));
        let sums = _mm_add_epi32(
            _mm256_castsi256_si128(sums),
            _mm256_extracti128_si256::<1>(sums),
        );
        let mut totals = [0i32; 4];
        // SAFETY: `totals` is 16 bytes; the store needs no alignment.
        unsafe { _mm_storeu_si128(totals.as_mut_ptr().cast::<__m128i>(), sums) };
        for (i, total) in totals.into_iter().enumerate() {
            out.push(total + coarse_tail(&four[i * w..(i + 1) * w], even, odd));
        }
    }
    for row in rows.remainder().chunks_exact(w) {
        // SAFETY: as above.
        let sums = unsafe { coarse_lanes_avx2(row, even, odd) };
        // A row's sum is at most 4096 × 15 × 127: the lanes add in registers.
        let halves = _mm_add_epi32(
            _mm256_castsi256_si128(sums),
            _mm256_extracti128_si256::<1>(sums),
        );
        let two = _mm_add_epi32(halves, _mm_shuffle_epi32::<0b01_00_11_10>(halves));
        let one = _mm_add_epi32(two, _mm_shuffle_epi32::<0b10_11_00_01>(two));
        out.push(_mm_cvtsi128_si32(one) + coarse_tail(row, even, odd));
    }
    out
}

/// Bytes a step of [`coarse_lanes_avx2`] takes.
#[cfg(target_arch = "x86_64")]
const COARSE_STEP: usize = 32;

/// A row's sums over its whole steps of [`COARSE_STEP`] bytes, in eight lanes of i32.
///
/// # Safety
///
/// The CPU must have AVX2, and `even` and `odd` must hold at least `row.len()` values.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn coarse_lanes_avx2(row: &[u8], even: &[i8], odd: &[i8]) -> std::arch::x86_64::__m256i {
    use std::arch::x86_64::{
        __m256i, _mm256_add_epi16, _mm256_add_epi32, _mm256_and_si256, _mm256_loadu_si256,
        _mm256_madd_epi16, _mm256_maddubs_epi16, _mm256_set1_epi16, _mm256_set1_epi8,
        _mm256_setzero_si256, _mm256_srli_epi16,
    };
    // Steps whose 16-bit sums add before widening: 4 × 7,620 stays below 2¹⁵.
    const STEPS_IN_16_BITS: usize = 4;
    debug_assert!(even.len() >= row.len() && odd.len() >= row.len());
    let whole = row.len() - row.len() % COARSE_STEP;
    let low_bits = _mm256_set1_epi8(15);
    let ones = _mm256_set1_epi16(1);
    let mut sums = _mm256_setzero_si256();
    let mut at = 0;
    while at < whole {
        let mut pairs = _mm256_setzero_si256();
        let end = (at + STEPS_IN_16_BITS * COARSE_STEP).min(whole);
        while at < end {
            // SAFETY: `at + 32 <= whole`, and `row`, `even` and `odd` hold at least
            // `whole` bytes each; the loads need no alignment.
            let (x, e, o) = unsafe {
                (
                    _mm256_loadu_si256(row.as_ptr().add(at).cast::<__m256i>()),
                    _mm256_loadu_si256(even.as_ptr().add(at).cast::<__m256i>()),
                    _mm256_loadu_si256(odd.as_ptr().add(at).cast::<__m256i>()),
                )
            };
            let low = _mm256_and_si256(x, low_bits);
            let high = _mm256_and_si256(_mm256_srli_epi16::<4>(x), low_bits);
            pairs = _mm256_add_epi16(
                pairs,
                _mm256_add_epi16(_mm256_maddubs_epi16(low, e), _mm256_maddubs_epi16(high, o)),
            );
            at += COARSE_STEP;
        }
        sums = _mm256_add_epi32(sums, _mm256_madd_epi16(pairs, ones));
    }
    sums
}

/// A row's sum over its bytes past the last whole step of [`COARSE_STEP`].
#[cfg(target_arch = "x86_64")]
fn coarse_tail(row: &[u8], even: &[i8], odd: &[i8]) -> i32 {
    let whole = row.len() - row.len() % COARSE_STEP;
    half_bytes_dot(&row[whole..], &even[whole..], &odd[whole..])
}

#[cfg(test)]
mod tests {
    use super::super::codes::MAX_DIMENSIONS;
    use super::*;

    #[test]
    fn the_plain_sums_equal_the_simd_ones() {
        let d: usize = 37;
        let codes: Vec<i8> = (0..d * 5).map(|i| ((i * 37) % 255) as i8).collect();
        let query: Vec<i16> = (0..d).map(|i| (i as i32 * 997 - 16_000) as i16).collect();
        let plain = rounded_dots_plain(&codes, &query);
        assert_eq!(rounded_dots(&codes, &query), plain);
        assert_eq!(plain.len(), 5);
    }

    /// The widest sums there can be, of either sign, at every width up to the most
    /// dimensions: the SIMD sums never wrap.
    #[test]
    fn the_largest_sums_do_not_overflow() {
        for d in [
            1,
            15,
            16,
            17,
            255,
            256,
            511,
            512,
            513,
            527,
            528,
            4095,
            MAX_DIMENSIONS,
        ] {
            for (code, value) in [(127i8, 32_767i16), (-127, 32_767), (127, -32_767)] {
                let codes = vec![code; d * 3];
                let query = vec![value; d];
                let want = i64::from(code) * i64::from(value) * d as i64;
                assert_eq!(rounded_dots(&codes, &query), vec![want; 3], "d = {d}");
            }
        }
    }

    /// `n` bytes from `seed`, by a linear congruential generator's top bits.
    fn random_bytes(seed: u64, n: usize) -> Vec<u8> {
        let mut state = seed;
        (0..n)
            .map(|_| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1);
                (state >> 56) as u8
            })
            .collect()
    }

    proptest::proptest! {
        /// Any codes and query (any width, any values) give the plain sums.
        #[test]
        fn any_codes_give_the_plain_sums(
            query in proptest::collection::vec(-32_767i16..=32_767, 1..700),
            rows in 0usize..5,
            seed in proptest::prelude::any::<u64>(),
        ) {
            let codes: Vec<i8> = random_bytes(seed, rows * query.len())
                .into_iter()
                .map(|b| (b as i16 - 128).clamp(-127, 127) as i8)
                .collect();
            proptest::prop_assert_eq!(
                rounded_dots(&codes, &query),
                rounded_dots_plain(&codes, &query)
            );
        }
    }

    /// The half-byte sums at their extremes (15 × ±127 at every width) and for any bytes
    /// and query: the SIMD sums equal the plain ones.
    #[test]
    fn the_coarse_sums_equal_the_plain_ones() {
        for w in [1, 31, 32, 33, 128, 192, 2047, 2048] {
            for q in [127i8, -127] {
                // Two groups of four rows and one row after them.
                let packed = vec![0xFFu8; w * 9];
                let query = vec![q; w];
                let want = 2 * 15 * i32::from(q) * w as i32;
                assert_eq!(
                    coarse_dots(&packed, &query, &query),
                    vec![want; 9],
                    "w = {w}"
                );
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn any_half_bytes_give_the_plain_sums(
            even in proptest::collection::vec(-127i8..=127, 1..300),
            rows in 0usize..11,
            seed in proptest::prelude::any::<u64>(),
        ) {
            let odd: Vec<i8> = even.iter().rev().copied().collect();
            let packed = random_bytes(seed, rows * even.len());
            proptest::prop_assert_eq!(
                coarse_dots(&packed, &even, &odd),
                coarse_dots_plain(&packed, &even, &odd)
            );
        }
    }
}
