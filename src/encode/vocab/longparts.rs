//! The long tokens (over [`KEY_LEN`] bytes) that begin or end a token, for
//! [`Bpe::from_ranks`](super::table::Bpe::from_ranks), which needs every split of every
//! token into two tokens.
//!
//! Why: looking each long part `token[..k]`, `token[k..]` up by hash hashes `k` bytes
//! for each `k`, quadratic in the token's length: one token of 1 MB took ~23 s. Here
//! the long tokens sit in two radix trees, one over their bytes and one over their
//! bytes reversed; walking a token down them finds all its long prefixes (suffixes)
//! that are tokens in one pass over its bytes, so the splits of all tokens cost time
//! linear in the vocabulary's size. A tree has at most two nodes per token; its
//! edges are ranges of the tokens' own bytes, so it copies none.

use rustc_hash::FxBuildHasher;

use crate::count::FxMap;
use crate::ids::NONE;
use crate::piecekey::KEY_LEN;

/// A radix tree over some tokens' bytes, read forwards or backwards.
#[derive(Debug)]
struct RadixTree {
    reversed: bool,
    /// Per node: a token whose bytes (read in the tree's direction) begin with the
    /// node's string; the length of that string; the id of the token the string is,
    /// or `NONE`. Node 0 is the root, the empty string.
    source: Vec<u32>,
    depth: Vec<u32>,
    id: Vec<u32>,
    /// `(node << 8) | next byte` -> child node.
    children: FxMap<u64, u32>,
}

/// Byte `i` of `t` read forwards, or backwards when `reversed`.
#[inline]
fn at(t: &[u8], i: usize, reversed: bool) -> u8 {
    if reversed {
        t[t.len() - 1 - i]
    } else {
        t[i]
    }
}

#[inline]
fn edge(node: u32, byte: u8) -> u64 {
    (u64::from(node) << 8) | u64::from(byte)
}

impl RadixTree {
    fn new(reversed: bool, n_tokens: usize) -> Self {
        let nodes = 2 * n_tokens + 1;
        let mut tree = Self {
            reversed,
            source: Vec::with_capacity(nodes),
            depth: Vec::with_capacity(nodes),
            id: Vec::with_capacity(nodes),
            children: FxMap::with_capacity_and_hasher(nodes, FxBuildHasher),
        };
        tree.push(0, 0, NONE);
        tree
    }

    fn push(&mut self, source: u32, depth: usize, id: u32) -> u32 {
        let node = self.source.len() as u32;
        self.source.push(source);
        self.depth.push(depth as u32);
        self.id.push(id);
        node
    }

    /// Adds token `id`, whose bytes are `t`, not empty, to the tree (`tokens` holds
    /// the bytes of every token already in it). Time: `t.len()`, plus a few hashes.
    fn insert(&mut self, tokens: &[Option<Box<[u8]>>], t: &[u8], id: u32) {
        let rev = self.reversed;
        let mut node = 0u32;
        loop {
            let d = self.depth[node as usize] as usize;
            if d == t.len() {
                self.id[node as usize] = id;
                return;
            }
            let b = at(t, d, rev);
            let Some(&child) = self.children.get(&edge(node, b)) else {
                let leaf = self.push(id, t.len(), id);
                self.children.insert(edge(node, b), leaf);
                return;
            };
            let c = bytes(tokens, self.source[child as usize]);
            let child_depth = self.depth[child as usize] as usize;
            let end = child_depth.min(t.len());
            let mut m = d + 1;
            while m < end && at(t, m, rev) == at(c, m, rev) {
                m += 1;
            }
            if m == child_depth {
                node = child;
                continue;
            }
            // `t` leaves the edge to `child` after `m` bytes: split the edge there.
            let mid = self.push(self.source[child as usize], m, NONE);
            self.children.insert(edge(node, b), mid);
            self.children.insert(edge(mid, at(c, m, rev)), child);
            if m == t.len() {
                self.id[mid as usize] = id;
            } else {
                let leaf = self.push(id, t.len(), id);
                self.children.insert(edge(mid, at(t, m, rev)), leaf);
            }
            return;
        }
    }

    /// Pushes `(n, id)` for each token of the tree that is the first (last, for a
    /// reversed tree) `n` bytes of `t`, `n < t.len()`, shortest first. Time: at most
    /// `t.len()`, plus a hash per node passed.
    fn parts_of(&self, tokens: &[Option<Box<[u8]>>], t: &[u8], out: &mut Vec<(usize, u32)>) {
        let rev = self.reversed;
        let mut node = 0u32;
        loop {
            let d = self.depth[node as usize] as usize;
            let id = self.id[node as usize];
            if id != NONE {
                out.push((d, id));
            }
            if d + 1 >= t.len() {
                return;
            }
            let Some(&child) = self.children.get(&edge(node, at(t, d, rev))) else {
                return;
            };
            let child_depth = self.depth[child as usize] as usize;
            if child_depth >= t.len() {
                return;
            }
            let c = bytes(tokens, self.source[child as usize]);
            if (d + 1..child_depth).any(|i| at(t, i, rev) != at(c, i, rev)) {
                return;
            }
            node = child;
        }
    }
}

fn bytes(tokens: &[Option<Box<[u8]>>], id: u32) -> &[u8] {
    tokens
        .get(id as usize)
        .and_then(|t| t.as_deref())
        .unwrap_or_default()
}

/// The long tokens of a vocabulary, to find which begin and which end a token.
#[derive(Debug)]
pub(crate) struct LongParts<'a> {
    tokens: &'a [Option<Box<[u8]>>],
    prefixes: RadixTree,
    suffixes: RadixTree,
}

impl<'a> LongParts<'a> {
    /// The trees of the tokens of over [`KEY_LEN`] bytes among `tokens` (by id),
    /// which must be distinct.
    pub(crate) fn new(tokens: &'a [Option<Box<[u8]>>]) -> Self {
        let long = || {
            tokens
                .iter()
                .enumerate()
                .filter_map(|(id, t)| t.as_deref().map(|t| (id as u32, t)))
                .filter(|(_, t)| t.len() > KEY_LEN)
        };
        let n = long().count();
        let mut prefixes = RadixTree::new(false, n);
        let mut suffixes = RadixTree::new(true, n);
        for (id, t) in long() {
            prefixes.insert(tokens, t, id);
            suffixes.insert(tokens, t, id);
        }
        Self {
            tokens,
            prefixes,
            suffixes,
        }
    }

    /// `(n, id)` of each long token that is `t[..n]`, `n < t.len()`, shortest first.
    pub(crate) fn prefixes(&self, t: &[u8], out: &mut Vec<(usize, u32)>) {
        self.prefixes.parts_of(self.tokens, t, out);
    }

    /// `(n, id)` of each long token that is `t[t.len() - n..]`, `n < t.len()`,
    /// shortest first.
    pub(crate) fn suffixes(&self, t: &[u8], out: &mut Vec<(usize, u32)>) {
        self.suffixes.parts_of(self.tokens, t, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocab(tokens: &[&[u8]]) -> Vec<Option<Box<[u8]>>> {
        tokens.iter().map(|t| Some(Box::from(*t))).collect()
    }

    /// The long proper prefixes (`suffix`: suffixes) of `t` that are tokens, by brute
    /// force.
    fn expected(tokens: &[Option<Box<[u8]>>], t: &[u8], suffix: bool) -> Vec<(usize, u32)> {
        let id = |part: &[u8]| {
            tokens
                .iter()
                .position(|x| x.as_deref() == Some(part))
                .map(|i| i as u32)
        };
        let part = |n: usize| if suffix { &t[t.len() - n..] } else { &t[..n] };
        (KEY_LEN + 1..t.len())
            .filter_map(|n| id(part(n)).map(|i| (n, i)))
            .collect()
    }

    #[test]
    fn finds_every_long_prefix_and_suffix() {
        let x = |n: usize| vec![b'x'; n];
        let mixed = |n: usize, tail: u8| {
            let mut t: Vec<u8> = (0..n).map(|i| b'a' + (i % 3) as u8).collect();
            t.push(tail);
            t
        };
        let mut all: Vec<Vec<u8>> = (16..60).map(x).collect();
        all.extend((16..60).step_by(3).map(|n| mixed(n, b'z')));
        all.extend((16..60).step_by(5).map(|n| mixed(n, b'y')));
        all.extend([b"short".to_vec(), x(200), mixed(200, b'z')]);
        let refs: Vec<&[u8]> = all.iter().map(Vec::as_slice).collect();
        let tokens = vocab(&refs);
        let parts = LongParts::new(&tokens);
        let mut probes = all.clone();
        probes.extend([x(300), mixed(300, b'z'), b"xxxxxxxxxxxxxxxxxxxxaz".to_vec()]);
        for t in &probes {
            let (mut pre, mut suf) = (Vec::new(), Vec::new());
            parts.prefixes(t, &mut pre);
            parts.suffixes(t, &mut suf);
            let text = String::from_utf8_lossy(t);
            assert_eq!(pre, expected(&tokens, t, false), "{text}");
            assert_eq!(suf, expected(&tokens, t, true), "{text}");
        }
    }
}
