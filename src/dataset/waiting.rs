//! The ids of a document that may still move to the next shard ([`super::shard`]):
//! held in memory up to [`IN_MEMORY`] ids, the rest in a scratch file.
//!
//! Why a bound: what waits can reach a whole shard's room (2**28 ids by default, 1 GiB
//! as `u32`) when one long document follows short ones in a shard. Why this one:
//! going through the page cache is not cheap either. In the 1 GB OpenWebText-like
//! corpus, 40% of the text is in 26 documents of 4-41 MB; with 2**22 ids in memory,
//! spilling the rest took a 2-thread dataset encode (shards of 2**24) from 1.02x to
//! 0.66x of a single `.npy`'s speed, where holding them (at most 41 MB here) cost 56
//! MiB of heap more than the `.npy`. So memory holds documents up to 64 MiB of ids,
//! and only longer ones, which fit only shards of more than 2**24 ids, are spilled.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// Ids held in memory at most (64 MiB); more go to the scratch file.
const IN_MEMORY: usize = 1 << 24;

#[derive(Default)]
pub(super) struct Waiting {
    /// The newest ids, after those spilled.
    ids: Vec<u32>,
    /// Where the scratch file goes (the shards' folder), and the file once made.
    dir: PathBuf,
    spilled: Option<File>,
    spilled_ids: u64,
    /// Ids held in memory at most ([`IN_MEMORY`]; less in tests).
    limit: usize,
}

impl Waiting {
    pub(super) fn new(dir: &Path) -> Self {
        Self {
            ids: Vec::new(),
            dir: dir.to_owned(),
            spilled: None,
            spilled_ids: 0,
            limit: IN_MEMORY,
        }
    }

    pub(super) fn len(&self) -> u64 {
        self.spilled_ids + self.ids.len() as u64
    }

    pub(super) fn push(&mut self, ids: &[u32]) -> io::Result<()> {
        if self.ids.len() + ids.len() <= self.limit {
            self.ids.extend_from_slice(ids);
            return Ok(());
        }
        // Past the bound: what is held and what comes go to the file, so the vector
        // never grows beyond it.
        let file = match &mut self.spilled {
            Some(f) => f,
            None => self
                .spilled
                .insert(crate::whole_file::scratch_file(&self.dir)?),
        };
        write_ids(file, &self.ids)?;
        write_ids(file, ids)?;
        self.spilled_ids += (self.ids.len() + ids.len()) as u64;
        self.ids.clear();
        Ok(())
    }

    /// Hands every id to `write`, oldest first, a block at a time; empties it.
    pub(super) fn drain(
        &mut self,
        mut write: impl FnMut(&[u32]) -> io::Result<()>,
    ) -> io::Result<()> {
        if let Some(file) = &mut self.spilled {
            file.seek(SeekFrom::Start(0))?;
            let mut block = vec![0u32; 1 << 18];
            let mut left = self.spilled_ids;
            while left > 0 {
                let n = (block.len() as u64).min(left) as usize;
                // SAFETY: `u32` has no padding and any bytes are a valid `u32`.
                let bytes = unsafe {
                    std::slice::from_raw_parts_mut(block.as_mut_ptr().cast::<u8>(), n * 4)
                };
                file.read_exact(bytes)?;
                if cfg!(target_endian = "big") {
                    block[..n].iter_mut().for_each(|id| *id = u32::from_le(*id));
                }
                write(&block[..n])?;
                left -= n as u64;
            }
            file.seek(SeekFrom::Start(0))?;
            file.set_len(0)?;
            self.spilled_ids = 0;
        }
        let result = write(&self.ids);
        self.ids.clear();
        result
    }
}

/// Appends `ids` to `file` as little-endian bytes, in one write where the machine's
/// own order is little-endian (a write per id took seconds for the 420 MB of
/// documents over 4 MB in the 1 GB OpenWebText-like corpus).
fn write_ids(mut file: &File, ids: &[u32]) -> io::Result<()> {
    if cfg!(target_endian = "little") {
        // SAFETY: `u32` has no padding and every byte pattern is a valid `u8`.
        let bytes = unsafe { std::slice::from_raw_parts(ids.as_ptr().cast::<u8>(), ids.len() * 4) };
        return file.write_all(bytes);
    }
    let bytes: Vec<u8> = ids.iter().flat_map(|id| id.to_le_bytes()).collect();
    file.write_all(&bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_come_back_in_order_past_the_memory_bound() {
        let dir = std::env::temp_dir();
        let mut waiting = Waiting::new(&dir);
        waiting.limit = 1000;
        let ids: Vec<u32> = (0..2345).collect();
        for _ in 0..2 {
            for chunk in ids.chunks(70) {
                waiting.push(chunk).unwrap();
            }
            assert_eq!(waiting.len(), ids.len() as u64);
            let mut back = Vec::new();
            waiting
                .drain(|b| {
                    back.extend_from_slice(b);
                    Ok(())
                })
                .unwrap();
            assert_eq!(back, ids);
            assert_eq!(waiting.len(), 0);
        }
    }
}
