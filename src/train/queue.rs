//! Max-queue of candidate pairs with lazy invalidation.
//!
//! Entries hold the count a pair had when pushed. Counts of existing pairs only
//! fall during training (only pairs with the new token grow), so a popped entry
//! whose count is stale is re-pushed with the current count and the first fresh
//! entry popped is the true best pair.
//!
//! Order: higher count first; a tie goes to the lexicographically greater pair
//! `(bytes_a, bytes_b)`. Comparing needs the tokens' bytes, so this is a small
//! binary heap with the comparison passed in, rather than `BinaryHeap` with
//! owned byte keys (an allocation per push).

use std::cmp::Ordering;

use crate::ids::{unpack, Pair};

/// A pair in the queue, with its count when it was pushed (stale once that changed).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Candidate {
    pub(crate) count: u64,
    pub(crate) pair: Pair,
}

/// The tokens' bytes, with each token's first eight bytes as a big-endian number
/// (zero-padded) beside them: most tie comparisons are then decided by comparing two
/// integers, without following two pointers to compare bytes (perf: byte compares
/// were ~25% of training time on TinyStories).
#[derive(Default)]
pub(crate) struct Tokens {
    bytes: Vec<Vec<u8>>,
    prefix: Vec<u64>,
}

impl Tokens {
    pub(crate) fn push(&mut self, bytes: Vec<u8>) {
        let mut head = [0u8; 8];
        let n = bytes.len().min(8);
        head[..n].copy_from_slice(&bytes[..n]);
        self.prefix.push(u64::from_be_bytes(head));
        self.bytes.push(bytes);
    }

    pub(crate) fn len(&self) -> usize {
        self.bytes.len()
    }

    pub(crate) fn get(&self, id: u32) -> &[u8] {
        &self.bytes[id as usize]
    }

    pub(crate) fn into_bytes(self) -> Vec<Vec<u8>> {
        self.bytes
    }

    /// Byte order of tokens `a` and `b`. Differing zero-padded prefixes order like
    /// the bytes (a shorter token pads with 0, which sorts first, as a prefix does).
    #[inline]
    fn cmp(&self, a: u32, b: u32) -> Ordering {
        if a == b {
            return Ordering::Equal;
        }
        let (pa, pb) = (self.prefix[a as usize], self.prefix[b as usize]);
        if pa != pb {
            return pa.cmp(&pb);
        }
        self.bytes[a as usize].cmp(&self.bytes[b as usize])
    }
}

/// `Greater` when `x` should be merged before `y`. Two tokens can share bytes
/// (`ab`+`c` and `a`+`bc`); the ids then decide, so the order is total and the
/// result never depends on the order entries were pushed in.
fn priority(x: &Candidate, y: &Candidate, tokens: &Tokens) -> Ordering {
    x.count.cmp(&y.count).then_with(|| {
        let (xa, xb) = unpack(x.pair);
        let (ya, yb) = unpack(y.pair);
        tokens
            .cmp(xa, ya)
            .then_with(|| tokens.cmp(xb, yb))
            .then_with(|| y.pair.cmp(&x.pair))
    })
}

#[derive(Default)]
pub(crate) struct PairQueue {
    heap: Vec<Candidate>,
}

impl PairQueue {
    pub(crate) fn from_candidates(entries: Vec<Candidate>, tokens: &Tokens) -> Self {
        let mut q = Self { heap: entries };
        for i in (0..q.heap.len() / 2).rev() {
            q.sift_down(i, tokens);
        }
        q
    }

    pub(crate) fn push(&mut self, entry: Candidate, tokens: &Tokens) {
        self.heap.push(entry);
        let mut i = self.heap.len() - 1;
        while i > 0 {
            let parent = (i - 1) / 2;
            if priority(&self.heap[i], &self.heap[parent], tokens) != Ordering::Greater {
                break;
            }
            self.heap.swap(i, parent);
            i = parent;
        }
    }

    pub(crate) fn pop(&mut self, tokens: &Tokens) -> Option<Candidate> {
        if self.heap.is_empty() {
            return None;
        }
        let top = self.heap.swap_remove(0);
        if !self.heap.is_empty() {
            self.sift_down(0, tokens);
        }
        Some(top)
    }

    fn sift_down(&mut self, mut i: usize, tokens: &Tokens) {
        let n = self.heap.len();
        loop {
            let l = 2 * i + 1;
            if l >= n {
                return;
            }
            let r = l + 1;
            let child =
                if r < n && priority(&self.heap[r], &self.heap[l], tokens) == Ordering::Greater {
                    r
                } else {
                    l
                };
            if priority(&self.heap[child], &self.heap[i], tokens) != Ordering::Greater {
                return;
            }
            self.heap.swap(i, child);
            i = child;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::pack;

    #[test]
    fn pops_by_count_then_greater_bytes() {
        let mut tokens = Tokens::default();
        for b in 0u8..=255 {
            tokens.push(vec![b]);
        }
        tokens.push(b"ab".to_vec());
        tokens.push(b"abcdefghij".to_vec());
        tokens.push(b"abcdefghi".to_vec());
        let entries = vec![
            Candidate {
                count: 5,
                pair: pack(b'a' as u32, b'z' as u32),
            },
            Candidate {
                count: 5,
                pair: pack(b'b' as u32, b'a' as u32),
            },
            Candidate {
                count: 7,
                pair: pack(b'a' as u32, b'a' as u32),
            },
            Candidate {
                count: 5,
                pair: pack(b'b' as u32, b'c' as u32),
            },
        ];
        let mut q = PairQueue::from_candidates(entries, &tokens);
        let order: Vec<(u32, u32)> = std::iter::from_fn(|| q.pop(&tokens))
            .map(|e| unpack(e.pair))
            .collect();
        let b = |x: u8, y: u8| (x as u32, y as u32);
        assert_eq!(
            order,
            [b(b'a', b'a'), b(b'b', b'c'), b(b'b', b'a'), b(b'a', b'z')]
        );
    }

    #[test]
    fn prefix_compare_orders_like_bytes() {
        let words: [&[u8]; 9] = [
            b"a",
            b"a\x00",
            b"a\x00\x00",
            b"ab",
            b"abcdefgh",
            b"abcdefghi",
            b"abcdefgh\x00",
            b"\xff",
            b"",
        ];
        let mut tokens = Tokens::default();
        for w in words {
            tokens.push(w.to_vec());
        }
        for (i, x) in words.iter().enumerate() {
            for (j, y) in words.iter().enumerate() {
                assert_eq!(tokens.cmp(i as u32, j as u32), x.cmp(y), "{x:?} vs {y:?}");
            }
        }
    }
}
