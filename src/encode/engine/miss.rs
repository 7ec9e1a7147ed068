//! The slow path of one piece: the short cache's full walk, the long cache, the
//! vocabulary (a whole piece that is a token), or the byte-pair merge, whose result
//! is cached.

use super::workspace::Workspace;
use crate::encode::cache::{long_hash, SHORT_IDS};
use crate::encode::vocab::{merge_piece, Bpe};
use crate::error::{Error, Result};
use crate::ids::NONE;
use crate::piecekey;

/// Marks the short-cache key of a part of a piece ([`merge_parts`]) apart from the
/// key of a whole piece of the same bytes, whose ids may differ (a whole piece that
/// is a token is that token, with [`Bpe::whole_piece_lookup`]).
const PART_TAG: u128 = 1 << 127;

/// Pieces shorter than this are merged whole: cutting them saves little.
const CUT_FROM: usize = 6;

/// A piece the emit loop's probe did not settle (found past its home line, with
/// spilled ids, long, or new), or any piece outside that loop. `hash` is the short
/// key's `piecekey::hash`, or for a long piece (`key` 0) its `long_hash`.
#[inline(never)]
pub(super) fn encode_slow(
    bpe: &Bpe,
    piece: &[u8],
    key: u128,
    hash: u64,
    ws: &mut Workspace,
    out: &mut Vec<u32>,
) {
    if key != 0 {
        if let Some((words, n)) = ws.short.get_words(key, hash) {
            match n <= SHORT_IDS {
                true => out.extend_from_slice(&words[..n]),
                false => ws.short.extend_spilled(words, n, out),
            }
            return;
        }
    }
    encode_miss(bpe, piece, key, hash, ws, out);
}

/// A piece the short cache does not hold: the long cache, else the vocabulary
/// (a whole piece that is a token) or the byte-pair merge; the result is cached.
#[inline(never)]
fn encode_miss(
    bpe: &Bpe,
    piece: &[u8],
    key: u128,
    hash: u64,
    ws: &mut Workspace,
    out: &mut Vec<u32>,
) {
    // A short piece's place in the long cache is by the hash of its bytes.
    let in_long = match key {
        0 => Some(hash),
        _ if ws.long_holds_short => Some(long_hash(piece)),
        _ => None,
    };
    if in_long.is_some_and(|h| ws.long.extend(piece, h, out)) {
        return;
    }
    let start = out.len();
    match piece {
        // A vocabulary of characters may lack a byte's token: its merge says.
        [b] if bpe.chars().is_none() => out.push(bpe.byte_id(*b)),
        _ => {
            let whole = match (bpe.whole_piece_lookup(), key) {
                (false, _) => None,
                (true, 0) => bpe.id_of_long(piece),
                (true, _) => bpe.id_of_short(key, hash),
            };
            match whole {
                Some(id) => out.push(id),
                None => {
                    if let Err(e) = merge_parts(bpe, piece, ws, out) {
                        // Not cached: the text loop stops at its next batch.
                        out.truncate(start);
                        ws.failure = Some(e);
                        return;
                    }
                }
            }
        }
    }
    let ids = &out[start..];
    if key == 0 || ids.is_empty() || !ws.short.insert(key, hash, ids) {
        ws.long_holds_short |= key != 0;
        let h = in_long.unwrap_or_else(|| long_hash(piece));
        ws.long.insert(piece, h, ids);
    }
}

/// Merges `piece` as the parts it may be cut into ([`Bpe::cuts`]), each looked up in
/// the short cache under its own key first and cached once merged; a piece that is
/// all ASCII, short or uncut is merged whole.
///
/// Why: a cold encode of the multilingual corpus spent most of its miss path merging
/// runs of CJK letters byte by byte (a piece of 30 characters: ~60 merges over ~90
/// bytes), and their parts are mostly single characters and common pairs, which
/// recur from piece to piece.
fn merge_parts(bpe: &Bpe, piece: &[u8], ws: &mut Workspace, out: &mut Vec<u32>) -> Result<()> {
    let cuts = match bpe.cuts() {
        Some(cuts) if piece.len() >= CUT_FROM && !piece.is_ascii() => cuts,
        _ => return merge_piece(bpe, piece, NONE, &mut ws.scratch, out),
    };
    let ends = &mut ws.part_ends;
    ends.clear();
    ends.try_reserve(piece.len() + 1)
        .map_err(|_| Error::out_of_memory::<u32>("the parts of a piece", piece.len() + 1))?;
    cuts.ends(piece, ends);
    if ends.len() == 1 {
        return merge_piece(bpe, piece, NONE, &mut ws.scratch, out);
    }
    // Every part's line is asked for before the first is read: the lines of a 32 MB
    // table are rarely in the CPU's caches, and a lookup waiting for each in turn
    // was a third of this function's samples.
    let mut start = 0;
    for &end in ends.iter() {
        let part = &piece[start..end as usize];
        start = end as usize;
        if let Some((_, hash)) = part_key(part) {
            ws.short.lines().prefetch(hash);
        }
    }
    let mut start = 0;
    for &end in ends.iter() {
        let part = &piece[start..end as usize];
        start = end as usize;
        let Some((key, hash)) = part_key(part) else {
            merge_piece(bpe, part, NONE, &mut ws.scratch, out)?;
            continue;
        };
        if let Some((words, n)) = ws.short.get_words(key, hash) {
            match n <= SHORT_IDS {
                true => out.extend_from_slice(&words[..n]),
                false => ws.short.extend_spilled(words, n, out),
            }
            continue;
        }
        let first = out.len();
        merge_piece(bpe, part, NONE, &mut ws.scratch, out)?;
        if out.len() > first {
            ws.short.insert(key, hash, &out[first..]);
        }
    }
    Ok(())
}

/// The short-cache key of a part of a piece and its hash, or `None` for a part too
/// long to have one.
#[inline]
fn part_key(part: &[u8]) -> Option<(u128, u64)> {
    let key = piecekey::key_of(part);
    (key != 0).then(|| (key | PART_TAG, piecekey::hash(key | PART_TAG)))
}
