//! Token ids and pairs of them: the leaf that counting, training and encoding share.

/// Marks "no token" and "no pair" in id and rank tables.
pub const NONE: u32 = u32::MAX;

/// Bits of an id in the encoder's pair table: ids must be below `2^21 - 1`.
pub(crate) const ID_BITS: u32 = 21;

/// The most ids a vocabulary may have (ids `0 .. MAX_IDS`): what the encoder's pair
/// table can hold, and so the largest vocabulary training may make.
pub const MAX_IDS: usize = (1 << ID_BITS) - 1;

/// A pair of token ids packed as `left << 32 | right`: ordered as `(left, right)`.
pub(crate) type Pair = u64;

#[inline(always)]
pub(crate) fn pack(left: u32, right: u32) -> Pair {
    (u64::from(left) << 32) | u64::from(right)
}

#[inline(always)]
pub(crate) fn unpack(pair: Pair) -> (u32, u32) {
    ((pair >> 32) as u32, pair as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_pack_in_order_and_unpack() {
        assert_eq!(unpack(pack(7, u32::MAX)), (7, u32::MAX));
        assert!(pack(1, 0) > pack(0, u32::MAX));
    }
}
