//! A filter of a vocabulary's long tokens (more than `KEY_LEN` bytes), which answers
//! most whole-piece lookups of long pieces without reading the vocabulary.

use crate::piecekey::KEY_LEN;

/// Which byte strings of more than `KEY_LEN` bytes may be tokens: one bit of a
/// filter per token, at a hash of its length and its first and last eight bytes,
/// and the longest token's length.
///
/// Why: a cold encode looks every new long piece up as a whole before merging it,
/// and nearly all of them are not tokens (most long pieces of the multilingual
/// corpus are runs of CJK letters). The lookup in `ids` hashed all the bytes and then
/// read a bucket and the token's boxed bytes, misses in tables of megabytes, ~175
/// ns a piece (perf: `Bpe::id_of` was 4-5% of a cold per-document encode of that
/// corpus with o200k and OLMo 2). The filter is 16 bits a token (o200k: 16 KB), in
/// L1 or L2, and answers most of them alone.
#[derive(Debug, Default)]
pub(super) struct LongTokens {
    bits: Box<[u64]>,
    /// `64 - log2(bits)`.
    shift: u32,
    /// The longest token's length (0: none, or not filled).
    max_len: usize,
}

impl LongTokens {
    /// The filter of the tokens longer than `KEY_LEN` among `tokens` (by id, `None`
    /// where an id has none).
    pub(super) fn new(tokens: &[Option<Box<[u8]>>]) -> Self {
        let long = || tokens.iter().flatten().filter(|t| t.len() > KEY_LEN);
        let n = long().count();
        let n_bits = (n * 16).next_power_of_two().max(64);
        let mut filter = Self {
            bits: vec![0; n_bits / 64].into_boxed_slice(),
            shift: 64 - n_bits.trailing_zeros(),
            max_len: 0,
        };
        for t in long() {
            let i = filter.index(t);
            filter.bits[i / 64] |= 1 << (i % 64);
            filter.max_len = filter.max_len.max(t.len());
        }
        filter
    }

    /// The filter bit of `bytes` (more than eight bytes long, else bit 0).
    #[inline]
    fn index(&self, bytes: &[u8]) -> usize {
        let (Some(head), Some(tail)) = (bytes.first_chunk::<8>(), bytes.last_chunk::<8>()) else {
            return 0;
        };
        let h = (u64::from_le_bytes(*head) ^ (bytes.len() as u64).rotate_left(32))
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            ^ u64::from_le_bytes(*tail);
        (h.wrapping_mul(0xd6e8_feb8_6659_fd93) >> self.shift) as usize
    }

    /// False where no token has these bytes (always true for `KEY_LEN` bytes or
    /// fewer, which the filter does not hold).
    #[inline]
    pub(super) fn may_hold(&self, bytes: &[u8]) -> bool {
        if bytes.len() <= KEY_LEN {
            return true;
        }
        if bytes.len() > self.max_len {
            return false;
        }
        let i = self.index(bytes);
        self.bits
            .get(i / 64)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }
}
