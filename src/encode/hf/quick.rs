//! A normal form's quick check (UAX #15) of a text, as `unicode-normalization`'s
//! `is_nf*_quick` answers it, run only on the characters that can change the answer.
//!
//! The check walks the characters keeping one state, the last combining class. A
//! character that is in the form (its property Yes) and of combining class 0, a
//! "starter" here, leaves the answer as it was and the state as at the start of a
//! text: so the answer for a whole text is that of the runs of other characters, each
//! checked apart. ASCII is such a character, skipped eight bytes at a time; so are
//! nearly all letters of other scripts in the composed forms (Cyrillic, CJK, Arabic and
//! Devanagari letters, and in NFC and NFKC precomposed letters and Hangul syllables),
//! found in a bit table rather than by the library's hashed lookup of the combining
//! class and branchy search of the property's ranges. Checking every non-ASCII
//! character with the library took 15% of a warm per-document encode of the
//! multilingual corpus with GPT-NeoX's NFC.
//!
//! The table covers the Basic Multilingual Plane, 256 code points a block, each block
//! filled from the library's own answers on its first use (~5 us), so the tables are
//! the library's and no start pays for blocks it never sees. Characters above the
//! plane are always checked by the library.

use std::str::Chars;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use unicode_normalization_alignments::char::canonical_combining_class;
use unicode_normalization_alignments::{
    is_nfc_quick, is_nfd_quick, is_nfkc_quick, is_nfkd_quick, IsNormalized,
};

use crate::pretokenize::unicode::ascii_run;

/// A Unicode normal form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum NormalForm {
    Nfc,
    Nfd,
    Nfkc,
    Nfkd,
}

impl NormalForm {
    /// The library's quick check of `chars`.
    fn check(self, chars: Chars<'_>) -> IsNormalized {
        match self {
            NormalForm::Nfc => is_nfc_quick(chars),
            NormalForm::Nfd => is_nfd_quick(chars),
            NormalForm::Nfkc => is_nfkc_quick(chars),
            NormalForm::Nfkd => is_nfkd_quick(chars),
        }
    }
}

/// Blocks of 256 code points in the Basic Multilingual Plane.
const BLOCKS: usize = 256;

/// One form's starters: a bit per code point of the plane, a block's bits valid once
/// its `ready` is set.
struct Starters {
    ready: [AtomicBool; BLOCKS],
    bits: [[AtomicU64; 4]; BLOCKS],
}

impl Starters {
    const fn new() -> Self {
        #[allow(clippy::declare_interior_mutable_const)]
        const NO: AtomicBool = AtomicBool::new(false);
        #[allow(clippy::declare_interior_mutable_const)]
        const ZERO: AtomicU64 = AtomicU64::new(0);
        #[allow(clippy::declare_interior_mutable_const)]
        const BLOCK: [AtomicU64; 4] = [ZERO; 4];
        Self {
            ready: [NO; BLOCKS],
            bits: [BLOCK; BLOCKS],
        }
    }

    /// Whether `c` is a starter of `form` (above the plane: false, so checked).
    #[inline]
    fn has(&self, form: NormalForm, c: char) -> bool {
        let c = c as usize;
        let Some(ready) = self.ready.get(c >> 8) else {
            return false;
        };
        let block = &self.bits[c >> 8];
        if !ready.load(Ordering::Acquire) {
            fill(form, c >> 8, block);
            ready.store(true, Ordering::Release);
        }
        block[(c >> 6) & 3].load(Ordering::Relaxed) >> (c & 63) & 1 == 1
    }
}

/// Fills the bits of block `b` from the library. Two threads filling one block at
/// once store the same bits.
#[cold]
fn fill(form: NormalForm, b: usize, block: &[AtomicU64; 4]) {
    for (w, word) in block.iter().enumerate() {
        let mut bits = 0u64;
        for k in 0..64 {
            let code = (b << 8 | w << 6 | k) as u32;
            // Surrogates are no characters: they stay 0 (never met in a `str`).
            if let Some(c) = char::from_u32(code) {
                let mut one = [0u8; 4];
                let yes = form.check(c.encode_utf8(&mut one).chars()) == IsNormalized::Yes;
                if yes && canonical_combining_class(c) == 0 {
                    bits |= 1 << k;
                }
            }
        }
        word.store(bits, Ordering::Relaxed);
    }
}

static STARTERS: [Starters; 4] = [
    Starters::new(),
    Starters::new(),
    Starters::new(),
    Starters::new(),
];

/// The quick check of `text` in `form`: what `is_nf*_quick(text.chars())` answers.
pub(super) fn quick(text: &str, form: NormalForm) -> IsNormalized {
    let table = &STARTERS[form as usize];
    let b = text.as_bytes();
    let mut answer = IsNormalized::Yes;
    // Checks the run of non-starters `text[from..to]`: false where it says No.
    let mut run = |from: usize, to: usize| match form.check(text[from..to].chars()) {
        IsNormalized::No => false,
        IsNormalized::Maybe => {
            answer = IsNormalized::Maybe;
            true
        }
        IsNormalized::Yes => true,
    };
    let mut i = 0;
    loop {
        i = ascii_run::<0, 0x7f, false>(b, i);
        if i == b.len() {
            break;
        }
        // `i` starts a character, and so does every place below up to the next ASCII.
        let mut from = None;
        let mut end = b.len();
        for (k, c) in text[i..].char_indices() {
            if c.is_ascii() {
                end = i + k;
                break;
            }
            match (table.has(form, c), from) {
                (true, Some(f)) => {
                    if !run(f, i + k) {
                        return IsNormalized::No;
                    }
                    from = None;
                }
                (false, None) => from = Some(i + k),
                _ => {}
            }
        }
        if let Some(f) = from {
            if !run(f, end) {
                return IsNormalized::No;
            }
        }
        i = end;
    }
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    const FORMS: [NormalForm; 4] = [
        NormalForm::Nfc,
        NormalForm::Nfd,
        NormalForm::Nfkc,
        NormalForm::Nfkd,
    ];

    #[test]
    fn equals_the_library_on_mixed_texts() {
        // ASCII, precomposed and decomposed letters, marks of several combining
        // classes (in and out of order), a Hangul syllable and its jamo, a compatibility
        // ligature, CJK, Cyrillic with a combining titlo, Devanagari with a nukta and a
        // composition exclusion, an Arabic letter and harakat, a letter above the plane
        // and a mark above it.
        let parts = [
            "a",
            "e",
            " ",
            "\n",
            "\u{e9}",
            "\u{301}",
            "\u{316}",
            "\u{323}",
            "\u{1100}",
            "\u{1161}",
            "\u{ac00}",
            "\u{fb01}",
            "\u{6771}",
            "\u{212b}",
            "\u{3099}",
            "\u{43a}",
            "\u{483}",
            "\u{915}",
            "\u{93c}",
            "\u{958}",
            "\u{628}",
            "\u{64e}",
            "\u{650}",
            "\u{1d400}",
            "\u{1d165}",
            "\u{1d16d}",
            "\u{f900}",
            "\u{374}",
        ];
        let mut seed = 11u64;
        for len in 0..40 {
            for _ in 0..300 {
                let text: String = (0..len)
                    .map(|_| {
                        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                        parts[(seed >> 33) as usize % parts.len()]
                    })
                    .collect();
                for form in FORMS {
                    assert_eq!(
                        quick(&text, form),
                        form.check(text.chars()),
                        "{form:?} {text:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_table_is_the_library_on_every_character_of_the_plane() {
        for form in FORMS {
            for code in 0x80..0x10000u32 {
                let Some(c) = char::from_u32(code) else {
                    continue;
                };
                let text = c.to_string();
                let want = form.check(text.chars()) == IsNormalized::Yes
                    && canonical_combining_class(c) == 0;
                assert_eq!(STARTERS[form as usize].has(form, c), want, "{form:?} {c:?}");
                // Each character before a mark of class 230 and after one.
                for t in [
                    format!("{c}\u{301}"),
                    format!("\u{301}{c}"),
                    format!("{c}\u{316}\u{301}"),
                ] {
                    assert_eq!(quick(&t, form), form.check(t.chars()), "{form:?} {t:?}");
                }
            }
        }
    }
}
