//! `WordCounts`: how often each pre-token occurs. The output of counting, the input
//! of training; saved, loaded and added so shards can be counted apart.
//!
//! File format (little-endian), documented in docs/wordcounts.md:
//! ```text
//! b"BPEKITWC"  magic            8 bytes
//! u32          version = 1
//! u32 n, n bytes  pattern (UTF-8)
//! u32 k, then k times: u32 n, n bytes  special tokens (UTF-8)
//! u64          number of words
//! per word:    u64 count, u32 n, n bytes of the word
//! ```

use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;

use super::FxMap;
use crate::error::{Error, Result};

const MAGIC: &[u8; 8] = b"BPEKITWC";
const VERSION: u32 = 1;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WordCounts {
    words: FxMap<Box<[u8]>, u64>,
    /// The pre-tokenizer pattern the words were cut with.
    pub pattern: String,
    /// The special tokens the text was split on.
    pub special_tokens: Vec<String>,
}

impl WordCounts {
    pub fn from_map(
        words: FxMap<Box<[u8]>, u64>,
        pattern: String,
        special_tokens: Vec<String>,
    ) -> Self {
        Self {
            words,
            pattern,
            special_tokens,
        }
    }

    pub fn from_pairs<I: IntoIterator<Item = (Vec<u8>, u64)>>(pairs: I, pattern: &str) -> Self {
        let mut words = FxMap::default();
        for (w, c) in pairs {
            if c > 0 {
                *words.entry(w.into_boxed_slice()).or_insert(0) += c;
            }
        }
        Self {
            words,
            pattern: pattern.to_owned(),
            special_tokens: Vec::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.words.len()
    }

    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// Number of pre-token occurrences.
    pub fn total(&self) -> u64 {
        self.words.values().sum()
    }

    pub fn get(&self, word: &[u8]) -> u64 {
        self.words.get(word).copied().unwrap_or(0)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&[u8], u64)> {
        self.words.iter().map(|(k, v)| (&**k, *v))
    }

    /// The `n` most frequent words, ties by bytes, so the order is deterministic.
    pub fn most_common(&self, n: usize) -> Vec<(&[u8], u64)> {
        let mut all: Vec<(&[u8], u64)> = self.iter().collect();
        all.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        all.truncate(n);
        all
    }

    /// Adds `other`'s counts; both must come from the same pattern.
    pub fn add(&mut self, other: &WordCounts) -> Result<()> {
        if !self.words.is_empty() && !other.words.is_empty() && self.pattern != other.pattern {
            return Err(Error::invalid(format!(
                "cannot add counts made with different patterns: {:?} and {:?}",
                self.pattern, other.pattern
            )));
        }
        if self.words.is_empty() {
            self.pattern.clone_from(&other.pattern);
        }
        for t in &other.special_tokens {
            if !self.special_tokens.contains(t) {
                self.special_tokens.push(t.clone());
            }
        }
        for (k, v) in &other.words {
            super::add_owned(&mut self.words, k, *v);
        }
        Ok(())
    }

    pub fn save(&self, path: &Path) -> Result<()> {
        let err = |e| Error::io(path, e);
        let tmp = path.with_extension("tmp-bpekit");
        let file = std::fs::File::create(&tmp).map_err(err)?;
        let mut w = BufWriter::new(file);
        let mut write = || -> std::io::Result<()> {
            w.write_all(MAGIC)?;
            w.write_all(&VERSION.to_le_bytes())?;
            write_blob(&mut w, self.pattern.as_bytes())?;
            w.write_all(&(self.special_tokens.len() as u32).to_le_bytes())?;
            for t in &self.special_tokens {
                write_blob(&mut w, t.as_bytes())?;
            }
            w.write_all(&(self.words.len() as u64).to_le_bytes())?;
            // Sorted so that equal counts give byte-identical files.
            let mut words: Vec<_> = self.words.iter().collect();
            words.sort_unstable();
            for (word, count) in words {
                w.write_all(&count.to_le_bytes())?;
                write_blob(&mut w, word)?;
            }
            w.flush()
        };
        if let Err(e) = write() {
            let _ = std::fs::remove_file(&tmp);
            return Err(err(e));
        }
        drop(w);
        std::fs::rename(&tmp, path).map_err(err)
    }

    pub fn load(path: &Path) -> Result<Self> {
        let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        let mut r = BufReader::new(file);
        let bad = |message: String| Error::Format {
            path: path.to_owned(),
            line: 0,
            message,
        };
        let mut magic = [0u8; 8];
        r.read_exact(&mut magic)
            .map_err(|_| bad("not a bpekit word-counts file (too short)".into()))?;
        if &magic != MAGIC {
            return Err(bad("not a bpekit word-counts file (bad magic)".into()));
        }
        let mut read = || -> std::io::Result<Result<Self>> {
            let version = read_u32(&mut r)?;
            if version != VERSION {
                return Ok(Err(bad(format!(
                    "unsupported word-counts version {version}"
                ))));
            }
            let Ok(pattern) = String::from_utf8(read_blob(&mut r)?) else {
                return Ok(Err(bad("pattern is not UTF-8".into())));
            };
            let k = read_u32(&mut r)?;
            let mut special_tokens = Vec::with_capacity(k.min(1 << 16) as usize);
            for _ in 0..k {
                let Ok(t) = String::from_utf8(read_blob(&mut r)?) else {
                    return Ok(Err(bad("special token is not UTF-8".into())));
                };
                special_tokens.push(t);
            }
            let n = read_u64(&mut r)?;
            let mut words = FxMap::default();
            words.reserve(n.min(1 << 24) as usize);
            for _ in 0..n {
                let count = read_u64(&mut r)?;
                let word = read_blob(&mut r)?;
                *words.entry(word.into_boxed_slice()).or_insert(0) += count;
            }
            Ok(Ok(Self {
                words,
                pattern,
                special_tokens,
            }))
        };
        match read() {
            Ok(result) => result,
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                Err(bad("file is truncated".into()))
            }
            Err(e) => Err(Error::io(path, e)),
        }
    }
}

fn write_blob(w: &mut impl Write, bytes: &[u8]) -> std::io::Result<()> {
    w.write_all(&(bytes.len() as u32).to_le_bytes())?;
    w.write_all(bytes)
}

fn read_u32(r: &mut impl Read) -> std::io::Result<u32> {
    let mut b = [0u8; 4];
    r.read_exact(&mut b)?;
    Ok(u32::from_le_bytes(b))
}

fn read_u64(r: &mut impl Read) -> std::io::Result<u64> {
    let mut b = [0u8; 8];
    r.read_exact(&mut b)?;
    Ok(u64::from_le_bytes(b))
}

fn read_blob(r: &mut impl Read) -> std::io::Result<Vec<u8>> {
    let n = read_u32(r)? as usize;
    let mut v = Vec::new();
    // take() bounds the allocation by what the file really holds, not by a corrupt length.
    r.take(n as u64).read_to_end(&mut v)?;
    if v.len() != n {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn save_load_round_trip_and_add() {
        let mut a = WordCounts::from_pairs([(b" the".to_vec(), 3), (vec![0xff, b'\n'], 1)], "gpt2");
        let dir = std::env::temp_dir().join(format!("bpekit-wc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.bin");
        a.save(&path).unwrap();
        let b = WordCounts::load(&path).unwrap();
        assert_eq!(a, b);
        a.add(&b).unwrap();
        assert_eq!(a.get(b" the"), 6);
        assert_eq!(a.total(), 8);
        std::fs::write(&path, b"BPEKITWC\x01\x00").unwrap();
        assert!(WordCounts::load(&path).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
