//! Faulting in a fresh id buffer ahead of the encoder's writes, a megabyte per
//! system call.
//!
//! Why: a large output buffer comes straight from `mmap`, and the kernel fills it one
//! 4 KiB page fault at a time as the encoder writes. Those faults were 22% of a warm
//! in-memory encode (en-small, gpt2: 392 MB/s into fresh
//! pages, 504 MB/s into reused ones). `MADV_POPULATE_WRITE` (Linux 5.14) faults a
//! whole range in one call, which cut most of that cost (390 -> 430 MB/s). Huge pages
//! would cut more, but in a page cache that fills the memory the kernel compacts to
//! find them, and repeated calls ran up to 2x slower.
//!
//! Only the range the encoder is about to write is faulted, a chunk ahead of it, so
//! the half of the buffer that a text never fills stays untouched.

use crate::hugemem::populate_write;

/// Bytes faulted per call.
const CHUNK: usize = 1 << 20;
/// Buffers smaller than this are left to ordinary faults: they come from the heap,
/// mostly already faulted, and a system call would cost more than it saves.
const MIN_BUFFER: usize = 4 * CHUNK;

/// Where a buffer is faulted in up to; inert (`end == 0`) unless made by [`Prefault::new`].
#[derive(Debug, Default)]
pub struct Prefault {
    /// The buffer's start and the end of its capacity, as addresses.
    base: usize,
    end: usize,
    /// Faulted in below this address.
    done: usize,
}

impl Prefault {
    /// Ready to fault in `out`'s spare capacity as it gets written (inert for small
    /// buffers and where the kernel lacks the call).
    pub fn new(out: &Vec<u32>) -> Self {
        let base = out.as_ptr() as usize;
        let bytes = out.capacity() * std::mem::size_of::<u32>();
        if !cfg!(target_os = "linux") || bytes < MIN_BUFFER {
            return Self::default();
        }
        let start = base + out.len() * std::mem::size_of::<u32>();
        Self {
            base,
            end: base + bytes,
            done: start,
        }
    }

    /// Before up to `words` more ids are written to `out`: faults in the next chunk if
    /// the writes would reach past what is faulted in.
    #[inline(always)]
    pub fn ahead(&mut self, out: &[u32], words: usize) {
        let reach =
            (out.as_ptr() as usize).wrapping_add((out.len() + words) * std::mem::size_of::<u32>());
        if reach > self.done && self.done < self.end {
            self.advance(out.as_ptr() as usize, reach);
        }
    }

    #[cold]
    #[inline(never)]
    fn advance(&mut self, base: usize, reach: usize) {
        // A buffer that moved (it grew) is not the one this was made for.
        if base != self.base {
            *self = Self::default();
            return;
        }
        let page = 4096;
        let from = self.done & !(page - 1);
        let to = (reach + CHUNK).min(self.end) & !(page - 1);
        self.done = to.max(self.done);
        if to > from && !populate_write(from, to - from) {
            *self = Self::default();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_only_inside_the_buffer_and_keeps_contents() {
        let mut out: Vec<u32> = Vec::with_capacity(3 * CHUNK);
        let mut pf = Prefault::new(&out);
        for i in 0..3 * CHUNK as u32 {
            if i % 1000 == 0 {
                pf.ahead(&out, 1000);
                assert!(pf.end == 0 || pf.done <= pf.end);
            }
            out.push(i);
        }
        assert!(out.iter().enumerate().all(|(i, &x)| x == i as u32));
        // A buffer that moved turns it off (one grown in place keeps its old end).
        let (base, end) = (out.as_ptr() as usize, pf.end);
        out.reserve(out.capacity() + 1);
        pf.ahead(&out, 1 << 40);
        match out.as_ptr() as usize == base {
            true => assert!(pf.end == end && pf.done <= end),
            false => assert_eq!(pf.end, 0),
        }
        // Small buffers are left alone.
        assert_eq!(Prefault::new(&Vec::with_capacity(1000)).end, 0);
    }
}
