//! Megatron-LM's index (`.idx`) of a shard's ids (`.bin`, raw little-endian), as
//! `IndexedDatasetBuilder` writes it for `tools/preprocess_data.py` without sentence
//! splitting (`megatron/core/datasets/indexed_dataset.py`, `_IndexWriter`):
//!
//! - `MMIDIDX\0\0`, the version 1 as u64, the ids' dtype code (u8: 8 uint16, 4 int32);
//! - the number of sequences and of document indices (u64 each);
//! - each sequence's length in tokens (i32), then its byte offset in the `.bin` (i64);
//! - the document indices (i64): 0, then after each document the number of sequences
//!   so far.
//!
//! A document is one sequence, and a document continued from the shard before is one
//! in this shard; `preprocess_data.py` adds no sequence for a document without ids
//! (its index repeats the one before), and so neither does this.

/// Megatron's dtype codes (`DType`): uint16, and int32, which `DType.optimal_dtype`
/// picks for a vocabulary of 65,500 ids or more (same bytes as uint32 below 2**31).
const CODE_UINT16: u8 = 8;
const CODE_INT32: u8 = 4;

/// The `.idx` of a shard of `tokens` ids of `width` bytes whose documents (or parts)
/// start at `starts`.
pub(super) fn index(width: usize, starts: &[u64], tokens: u64) -> Vec<u8> {
    let ends = starts.iter().skip(1).chain(std::iter::once(&tokens));
    let lengths: Vec<u64> = starts.iter().zip(ends).map(|(s, e)| e - s).collect();
    let sequences: Vec<(u64, u64)> = starts
        .iter()
        .zip(&lengths)
        .filter(|(_, &len)| len > 0)
        .map(|(&s, &len)| (s, len))
        .collect();
    let mut out = Vec::with_capacity(34 + 20 * sequences.len() + 8 * (starts.len() + 1));
    out.extend_from_slice(b"MMIDIDX\x00\x00");
    out.extend_from_slice(&1u64.to_le_bytes());
    out.push(if width == 2 { CODE_UINT16 } else { CODE_INT32 });
    out.extend_from_slice(&(sequences.len() as u64).to_le_bytes());
    out.extend_from_slice(&(starts.len() as u64 + 1).to_le_bytes());
    for &(_, len) in &sequences {
        // The caller keeps shards below 2**31 ids (`super::run`).
        out.extend_from_slice(&i32::try_from(len).unwrap_or(i32::MAX).to_le_bytes());
    }
    for &(start, _) in &sequences {
        out.extend_from_slice(&((start * width as u64) as i64).to_le_bytes());
    }
    let mut count = 0i64;
    out.extend_from_slice(&count.to_le_bytes());
    for &len in &lengths {
        count += i64::from(len > 0);
        out.extend_from_slice(&count.to_le_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words<const N: usize>(bytes: &[u8]) -> Vec<[u8; N]> {
        bytes.chunks(N).map(|c| c.try_into().unwrap()).collect()
    }

    #[test]
    fn fields_in_megatron_order() {
        // Documents of 3, 0 and 2 ids of 2 bytes.
        let idx = index(2, &[0, 3, 3], 5);
        assert_eq!(&idx[..9], b"MMIDIDX\x00\x00");
        assert_eq!(u64::from_le_bytes(idx[9..17].try_into().unwrap()), 1);
        assert_eq!(idx[17], 8);
        assert_eq!(u64::from_le_bytes(idx[18..26].try_into().unwrap()), 2);
        assert_eq!(u64::from_le_bytes(idx[26..34].try_into().unwrap()), 4);
        let lengths: Vec<i32> = words::<4>(&idx[34..42])
            .into_iter()
            .map(i32::from_le_bytes)
            .collect();
        assert_eq!(lengths, [3, 2]);
        let rest: Vec<i64> = words::<8>(&idx[42..])
            .into_iter()
            .map(i64::from_le_bytes)
            .collect();
        assert_eq!(rest, [0, 6, 0, 1, 1, 2]);
        assert_eq!(index(4, &[0], 7)[17], 4);
    }
}
