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

/// A pair of token ids packed as `a << 32 | b`.
pub type Pair = u64;

pub fn pack(a: u32, b: u32) -> Pair {
    (u64::from(a) << 32) | u64::from(b)
}

pub fn unpack(p: Pair) -> (u32, u32) {
    ((p >> 32) as u32, p as u32)
}

#[derive(Clone, Copy, Debug)]
pub struct Entry {
    pub count: u64,
    pub pair: Pair,
}

/// `Greater` when `x` should be merged before `y`. Two tokens can share bytes
/// (`ab`+`c` and `a`+`bc`); the ids then decide, so the order is total and the
/// result never depends on the order entries were pushed in.
fn priority(x: &Entry, y: &Entry, tokens: &[Vec<u8>]) -> Ordering {
    x.count.cmp(&y.count).then_with(|| {
        let (xa, xb) = unpack(x.pair);
        let (ya, yb) = unpack(y.pair);
        tokens[xa as usize]
            .cmp(&tokens[ya as usize])
            .then_with(|| tokens[xb as usize].cmp(&tokens[yb as usize]))
            .then_with(|| y.pair.cmp(&x.pair))
    })
}

#[derive(Default)]
pub struct PairQueue {
    heap: Vec<Entry>,
}

impl PairQueue {
    pub fn from_entries(entries: Vec<Entry>, tokens: &[Vec<u8>]) -> Self {
        let mut q = Self { heap: entries };
        for i in (0..q.heap.len() / 2).rev() {
            q.sift_down(i, tokens);
        }
        q
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    pub fn push(&mut self, entry: Entry, tokens: &[Vec<u8>]) {
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

    pub fn pop(&mut self, tokens: &[Vec<u8>]) -> Option<Entry> {
        if self.heap.is_empty() {
            return None;
        }
        let top = self.heap.swap_remove(0);
        if !self.heap.is_empty() {
            self.sift_down(0, tokens);
        }
        Some(top)
    }

    fn sift_down(&mut self, mut i: usize, tokens: &[Vec<u8>]) {
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

    #[test]
    fn pops_by_count_then_greater_bytes() {
        let tokens: Vec<Vec<u8>> = (0u8..=255).map(|b| vec![b]).collect();
        let entries = vec![
            Entry {
                count: 5,
                pair: pack(b'a' as u32, b'z' as u32),
            },
            Entry {
                count: 5,
                pair: pack(b'b' as u32, b'a' as u32),
            },
            Entry {
                count: 7,
                pair: pack(b'a' as u32, b'a' as u32),
            },
            Entry {
                count: 5,
                pair: pack(b'b' as u32, b'c' as u32),
            },
        ];
        let mut q = PairQueue::from_entries(entries, &tokens);
        let order: Vec<(u32, u32)> = std::iter::from_fn(|| q.pop(&tokens))
            .map(|e| unpack(e.pair))
            .collect();
        let b = |x: u8, y: u8| (x as u32, y as u32);
        assert_eq!(
            order,
            [b(b'a', b'a'), b(b'b', b'c'), b(b'b', b'a'), b(b'a', b'z')]
        );
    }
}
