//! Tests of `WordCounts`: its file format, adding, and the errors of both.

use super::*;

#[test]
fn save_load_round_trip_and_add() {
    let mut a =
        WordCounts::from_pairs([(b" the".to_vec(), 3), (vec![0xff, b'\n'], 1)], "gpt2").unwrap();
    let dir = std::env::temp_dir().join(format!("bpekit-wc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("c.bin");
    a.save(&path).unwrap();
    let b = WordCounts::load(&path).unwrap();
    assert_eq!(a, b);
    a.add(&b).unwrap();
    assert_eq!(a.get(b" the"), 6);
    assert_eq!(a.total(), 8);
    // Words added after the index was built are found too.
    a.add_word(b"new", 2).unwrap();
    a.push_distinct(b"newer", 1);
    assert_eq!((a.get(b"new"), a.get(b"newer"), a.len()), (2, 1, 4));
    let mut c = WordCounts::from_pairs([(b"x".to_vec(), 1), (b"x".to_vec(), 2)], "gpt2").unwrap();
    assert_eq!((c.len(), c.get(b"x")), (1, 3));
    c.push_distinct(b"y", 5);
    assert_eq!(c.get(b"y"), 5);
    std::fs::write(&path, b"BPEKITWC\x01\x00").unwrap();
    assert!(WordCounts::load(&path).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

fn pairs(p: &[(&str, u64)]) -> Vec<(Vec<u8>, u64)> {
    p.iter().map(|&(w, c)| (w.as_bytes().to_vec(), c)).collect()
}

#[test]
fn adding_never_wraps_and_changes_nothing_when_it_would() {
    const MAX: u64 = u64::MAX;
    let mut a = WordCounts::from_pairs(pairs(&[("x", MAX)]), "gpt2").unwrap();
    let one = WordCounts::from_pairs(pairs(&[("x", 1)]), "gpt2").unwrap();
    let err = a.add(&one).unwrap_err();
    assert!(matches!(err, Error::Overflow(_)), "{err:?}");
    assert_eq!(
        err.to_string(),
        "adding these word counts would make the total count pass 2**64-1: 18446744073709551615 + 1"
    );
    assert_eq!((a.get(b"x"), a.len(), a.total()), (MAX, 1, MAX));
    // Two words whose counts fit but whose total does not.
    let mut a = WordCounts::from_pairs(pairs(&[("x", 1 << 63)]), "gpt2").unwrap();
    let b = WordCounts::from_pairs(pairs(&[("y", 1 << 63)]), "gpt2").unwrap();
    assert!(matches!(a.add(&b), Err(Error::Overflow(_))));
    assert_eq!((a.len(), a.total()), (1, 1 << 63));
    // The sum up to the limit is fine.
    let b = WordCounts::from_pairs(pairs(&[("x", (1 << 63) - 1)]), "gpt2").unwrap();
    a.add(&b).unwrap();
    assert_eq!(a.get(b"x"), MAX);
    // Pairs: a word given twice, and a total.
    for p in [[("x", MAX), ("x", 1)], [("x", MAX), ("y", 1)]] {
        let err = WordCounts::from_pairs(pairs(&p), "gpt2").unwrap_err();
        assert!(matches!(err, Error::Overflow(_)), "{err:?}");
        assert!(err.to_string().contains("at pair #1"), "{err}");
    }
    let err = a.add_word(b"x", 1).unwrap_err();
    assert!(matches!(err, Error::Overflow(_)), "{err:?}");
    assert_eq!(a.get(b"x"), MAX);
}

/// A word-counts file with pattern "p", no special tokens, `n` words (as its
/// header says) and `records` (count, word), then `tail`.
fn crafted(n: u64, records: &[(u64, &str)], tail: &[u8]) -> Vec<u8> {
    let mut f = b"BPEKITWC".to_vec();
    f.extend(1u32.to_le_bytes());
    f.extend(1u32.to_le_bytes());
    f.push(b'p');
    f.extend(0u32.to_le_bytes());
    f.extend(n.to_le_bytes());
    for (count, word) in records {
        f.extend(count.to_le_bytes());
        f.extend((word.len() as u32).to_le_bytes());
        f.extend(word.as_bytes());
    }
    f.extend(tail);
    f
}

#[test]
fn load_rejects_wrapping_counts_and_trailing_bytes_naming_where() {
    let dir = std::env::temp_dir().join(format!("bpekit-wc-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.wc");
    let load = |bytes: Vec<u8>| {
        std::fs::write(&path, bytes).unwrap();
        WordCounts::load(&path).map_err(|e| e.to_string())
    };
    let p = path.display();
    // The header is 29 bytes; a record of a 1-byte word 13.
    let good = load(crafted(2, &[(u64::MAX - 1, "x"), (1, "y")], b"")).unwrap();
    assert_eq!(good.total(), u64::MAX);
    for records in [[(u64::MAX, "x"), (1, "x")], [(u64::MAX, "x"), (1, "y")]] {
        let err = load(crafted(2, &records, b"")).unwrap_err();
        assert_eq!(
            err,
            format!("{p}: word record 1 of 2 (byte offset 42): its count 1 makes the total count pass 2**64-1")
        );
    }
    let err = load(crafted(1, &[(3, "x")], b"\0\0")).unwrap_err();
    assert_eq!(
        err,
        format!(
            "{p}: 2 byte(s) after its 1 word records, from byte offset 42: the file is corrupt"
        )
    );
    let err = load(crafted(1, &[(3, "x"), (4, "y")], b"")).unwrap_err();
    assert!(err.starts_with(&format!("{p}: 13 byte(s) after")), "{err}");
    let mut cut = crafted(2, &[(3, "x"), (4, "yy")], b"");
    cut.pop();
    let err = load(cut).unwrap_err();
    assert_eq!(
        err,
        format!("{p}: file is truncated: it ends at byte offset 55, in word record 1 of 2 (from byte offset 42)")
    );
    let err = load(crafted(0, &[], b"")[..20].to_vec()).unwrap_err();
    assert_eq!(
        err,
        format!("{p}: file is truncated: it ends at byte offset 20, in the header")
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn counts_given_away_add_as_counts_lent() {
    let part = |pairs: &[(&[u8], u64)], specials: &[&str]| {
        let mut c =
            WordCounts::from_pairs(pairs.iter().map(|&(w, n)| (w.to_vec(), n)), "gpt2").unwrap();
        c.special_tokens = specials.iter().map(|s| s.to_string()).collect();
        c
    };
    let a = part(&[(b" the", 3), (b"", 1)], &["<|b|>", "<|a|>"]);
    let b = part(&[(b" the", 2), (b"x", 5)], &["<|a|>", "<|c|>"]);
    // Empty counts keep their own special tokens first and take the other's pattern.
    let empty = || WordCounts::new("cl100k".into(), vec!["<|z|>".into(), "<|c|>".into()]);
    for start in [empty(), a.clone()] {
        let (mut lent, mut given) = (start.clone(), start);
        lent.add(&b).unwrap();
        given.add_owned(b.clone()).unwrap();
        assert_eq!(given, lent);
        assert_eq!(given.special_tokens, lent.special_tokens);
        assert_eq!(given.pattern, lent.pattern);
        assert_eq!(given.get(b"x"), 5);
        assert_eq!(given.pattern, "gpt2");
    }
    let mut given = empty();
    given.add_owned(b).unwrap();
    assert_eq!(given.special_tokens, ["<|z|>", "<|c|>", "<|a|>"]);
}
