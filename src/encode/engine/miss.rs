//! The slow path of one piece: the short cache's full walk, the long cache, the
//! vocabulary (a whole piece that is a token), or the byte-pair merge, whose result
//! is cached.

use super::workspace::Workspace;
use crate::encode::cache::{long_hash, SHORT_IDS};
use crate::encode::vocab::{merge_piece, Bpe};
use crate::ids::NONE;

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
                (true, 0) => bpe.id_of(piece),
                (true, _) => bpe.id_of_short(key, hash),
            };
            match whole {
                Some(id) => out.push(id),
                None => {
                    if let Err(e) = merge_piece(bpe, piece, NONE, &mut ws.scratch, out) {
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
