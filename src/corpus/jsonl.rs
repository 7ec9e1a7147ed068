//! One JSON line -> the string at a field path, borrowed from the line when it holds
//! no escapes (most web text does hold `\n`; those are decoded into a new string).
//!
//! serde_json reads the line; fields off the path are skipped without being built
//! (`IgnoredAny`), and keys are compared without being copied.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::error::{Error, Result};

/// A dotted path to a string field: `"text"`, `"meta.body"`.
#[derive(Clone, Debug)]
pub struct FieldPath {
    parts: Vec<String>,
}

impl FieldPath {
    /// ```text
    /// FieldPath::parse("meta.body") -> ["meta", "body"];  "" and "a..b" are errors
    /// ```
    pub fn parse(dotted: &str) -> Result<Self> {
        let parts: Vec<String> = dotted.split('.').map(str::to_owned).collect();
        if parts.iter().any(String::is_empty) {
            return Err(Error::invalid(format!(
                "text_field {dotted:?} is not a field name or a dotted path such as \"meta.body\""
            )));
        }
        Ok(Self { parts })
    }

    /// The first `depth` parts, dotted, for messages.
    pub(crate) fn prefix(&self, depth: usize) -> String {
        self.parts[..depth.clamp(1, self.parts.len())].join(".")
    }
}

/// What a JSON line holds at a field path.
#[derive(Debug, PartialEq)]
pub(crate) enum Found<'de> {
    Text(Cow<'de, str>),
    /// No field at the first `depth` parts of the path.
    Missing {
        depth: usize,
    },
    /// The value at the first `depth` parts (0: the line itself) is `kind`, where an
    /// object (on the way) or a string (at the end) was wanted.
    Wrong {
        depth: usize,
        kind: &'static str,
    },
}

impl Found<'_> {
    /// The same, owning its text.
    pub(crate) fn into_owned(self) -> Found<'static> {
        match self {
            Found::Text(t) => Found::Text(Cow::Owned(t.into_owned())),
            Found::Missing { depth } => Found::Missing { depth },
            Found::Wrong { depth, kind } => Found::Wrong { depth, kind },
        }
    }

    /// Why a line holds no document, for messages (`None` for a text).
    pub(crate) fn problem(&self, path: &FieldPath) -> Option<String> {
        match *self {
            Found::Text(_) => None,
            Found::Missing { depth } => Some(format!("no field '{}'", path.prefix(depth))),
            Found::Wrong { depth: 0, kind } => Some(format!("not a JSON object but {kind}")),
            Found::Wrong { depth, kind } => {
                let wanted = match depth < path.parts.len() {
                    true => "an object",
                    false => "a string",
                };
                Some(format!(
                    "field '{}' is {kind}, not {wanted}",
                    path.prefix(depth)
                ))
            }
        }
    }
}

/// The value at `path` in the JSON text `line`; `Err((message, byte))` where `line`
/// is not one JSON value (the message is serde_json's, the byte where it stopped).
pub(crate) fn field_of<'de>(
    line: &'de str,
    path: &FieldPath,
) -> std::result::Result<Found<'de>, (String, usize)> {
    let mut de = serde_json::Deserializer::from_str(line);
    let not_json = |e: serde_json::Error| {
        let text = e.to_string();
        // serde_json ends its message with " at line 1 column N"; the caller says where.
        let message = match text.rfind(" at line ") {
            Some(i) => text[..i].to_owned(),
            None => text,
        };
        (message, e.column().saturating_sub(1))
    };
    let found = Step { path, depth: 0 }
        .deserialize(&mut de)
        .map_err(not_json)?;
    de.end().map_err(not_json)?;
    Ok(found)
}

/// The keys of the object that a [`Found::Missing`] at `depth` looked in (the line's,
/// or the one at the first `depth - 1` parts of `path`), for messages: the first
/// [`KEYS_SHOWN`] of them, each quoted and cut to 40 characters, and how many more.
/// `None` where the line no longer reads so (it is only read again for a message).
pub(crate) fn keys_at(line: &str, path: &FieldPath, depth: usize) -> Option<String> {
    let mut de = serde_json::Deserializer::from_str(line);
    let target = depth.saturating_sub(1);
    let keys = Keys {
        path,
        depth: 0,
        target,
    }
    .deserialize(&mut de)
    .ok()??;
    let (shown, more) = (keys.shown, keys.more);
    let mut out = shown
        .iter()
        .map(|k| {
            let cut: String = k.chars().take(40).collect();
            match cut.len() < k.len() {
                true => format!("{cut:?}..."),
                false => format!("{cut:?}"),
            }
        })
        .collect::<Vec<_>>()
        .join(", ");
    if more > 0 {
        out.push_str(&format!(" and {more} more"));
    }
    Some(out)
}

/// Keys listed by [`keys_at`] at most.
const KEYS_SHOWN: usize = 8;

/// Keys of an object, as [`keys_at`] lists them.
struct KeyList {
    shown: Vec<String>,
    more: usize,
}

/// The keys of the object at `path.parts[depth..target]` of the value being read.
struct Keys<'p> {
    path: &'p FieldPath,
    depth: usize,
    target: usize,
}

impl<'de> DeserializeSeed<'de> for Keys<'_> {
    type Value = Option<KeyList>;

    fn deserialize<D: de::Deserializer<'de>>(
        self,
        d: D,
    ) -> std::result::Result<Option<KeyList>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Keys<'_> {
    type Value = Option<KeyList>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(
        self,
        mut map: A,
    ) -> std::result::Result<Option<KeyList>, A::Error> {
        if self.depth == self.target {
            let mut list = KeyList {
                shown: Vec::new(),
                more: 0,
            };
            while let Some(key) = map.next_key::<String>()? {
                map.next_value::<IgnoredAny>()?;
                match list.shown.len() < KEYS_SHOWN {
                    true => list.shown.push(key),
                    false => list.more += 1,
                }
            }
            return Ok(Some(list));
        }
        let want = self.path.parts[self.depth].as_str();
        let mut found = None;
        while let Some(matched) = map.next_key_seed(KeyIs(want))? {
            if matched {
                found = map.next_value_seed(Keys {
                    depth: self.depth + 1,
                    ..self
                })?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }

    fn visit_seq<A: SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> std::result::Result<Option<KeyList>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> std::result::Result<Option<KeyList>, E> {
        Ok(None)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> std::result::Result<Option<KeyList>, E> {
        Ok(None)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> std::result::Result<Option<KeyList>, E> {
        Ok(None)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> std::result::Result<Option<KeyList>, E> {
        Ok(None)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> std::result::Result<Option<KeyList>, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> std::result::Result<Option<KeyList>, E> {
        Ok(None)
    }
}

/// What a line's lone surrogate escapes (`"\ud800"` with no low half after it, or a low
/// half alone) become under a decoding policy: Python's `json` reads them into a `str`
/// that is no valid text; serde_json refuses the line.
pub(crate) enum Surrogates {
    /// The line holds none.
    None,
    /// The first one's byte offset and text, where they are errors.
    At(usize, String),
    /// The line with each one replaced by `\ufffd` (`replace`, as decoding replaces an
    /// invalid sequence) or dropped (`ignore`).
    Fixed(String),
}

/// The lone surrogate escapes of `line` ([`Surrogates`]): `replace` gives U+FFFD for
/// each, `ignore` drops them, `None` (strict) says where the first is. Every `\` that
/// starts an escape is looked at: a `\` can only stand in a string of valid JSON.
pub(crate) fn lone_surrogates(line: &str, replace: Option<bool>) -> Surrogates {
    let b = line.as_bytes();
    let unit = |at: usize| -> Option<u16> {
        let hex = b.get(at..at + 6)?;
        if hex[0] != b'\\' || hex[1] != b'u' {
            return None;
        }
        u16::from_str_radix(std::str::from_utf8(&hex[2..]).ok()?, 16).ok()
    };
    let mut out = String::new();
    let mut copied = 0;
    let mut i = 0;
    while let Some(k) = memchr::memchr(b'\\', &b[i..]) {
        let at = i + k;
        let Some(u) = unit(at) else {
            i = at + 2; // another escape (or the line's end)
            continue;
        };
        let high = (0xD800..0xDC00).contains(&u);
        let paired = high && unit(at + 6).is_some_and(|l| (0xDC00..0xE000).contains(&l));
        if paired {
            i = at + 12;
            continue;
        }
        if !(0xD800..0xE000).contains(&u) {
            i = at + 6;
            continue;
        }
        match replace {
            None => return Surrogates::At(at, line[at..at + 6].to_owned()),
            Some(replace) => {
                out.push_str(&line[copied..at]);
                if replace {
                    out.push_str("\\ufffd");
                }
                copied = at + 6;
            }
        }
        i = at + 6;
    }
    if copied == 0 {
        return Surrogates::None;
    }
    out.push_str(&line[copied..]);
    Surrogates::Fixed(out)
}

/// The value at `path.parts[depth..]` of the value being read.
struct Step<'p> {
    path: &'p FieldPath,
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for Step<'_> {
    type Value = Found<'de>;

    fn deserialize<D: de::Deserializer<'de>>(
        self,
        d: D,
    ) -> std::result::Result<Found<'de>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Step<'_> {
    type Value = Found<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Found<'de>, A::Error> {
        let depth = self.depth;
        if depth == self.path.parts.len() {
            drain_map(map)?;
            return Ok(Found::Wrong {
                depth,
                kind: "an object",
            });
        }
        let want = self.path.parts[depth].as_str();
        let mut found = Found::Missing { depth: depth + 1 };
        // The last of duplicate keys wins, as in Python's `json`.
        while let Some(matched) = map.next_key_seed(KeyIs(want))? {
            if matched {
                found = map.next_value_seed(Step {
                    path: self.path,
                    depth: depth + 1,
                })?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> std::result::Result<Found<'de>, E> {
        Ok(self.string(Cow::Borrowed(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<Found<'de>, E> {
        Ok(self.string(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> std::result::Result<Found<'de>, E> {
        Ok(self.string(Cow::Owned(v)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Found<'de>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(self.wrong("an array"))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> std::result::Result<Found<'de>, E> {
        Ok(self.wrong("a boolean"))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> std::result::Result<Found<'de>, E> {
        Ok(self.wrong("a number"))
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> std::result::Result<Found<'de>, E> {
        Ok(self.wrong("a number"))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> std::result::Result<Found<'de>, E> {
        Ok(self.wrong("a number"))
    }

    fn visit_unit<E: de::Error>(self) -> std::result::Result<Found<'de>, E> {
        Ok(self.wrong("null"))
    }
}

impl Step<'_> {
    fn wrong<'de>(&self, kind: &'static str) -> Found<'de> {
        Found::Wrong {
            depth: self.depth,
            kind,
        }
    }

    fn string<'de>(&self, s: Cow<'de, str>) -> Found<'de> {
        match self.depth == self.path.parts.len() {
            true => Found::Text(s),
            false => self.wrong("a string"),
        }
    }
}

fn drain_map<'de, A: MapAccess<'de>>(mut map: A) -> std::result::Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

/// Whether a key equals the wanted one, compared without copying it (where it holds
/// escapes, serde_json decodes it first).
struct KeyIs<'w>(&'w str);

impl<'de> DeserializeSeed<'de> for KeyIs<'_> {
    type Value = bool;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> std::result::Result<bool, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyIs<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<bool, E> {
        Ok(v == self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(line: &str, path: &str) -> String {
        let path = FieldPath::parse(path).unwrap();
        match field_of(line, &path).unwrap() {
            Found::Text(t) => t.into_owned(),
            other => panic!("{other:?}: {:?}", other.problem(&path)),
        }
    }

    fn problem(line: &str, path: &str) -> String {
        let path = FieldPath::parse(path).unwrap();
        match field_of(line, &path) {
            Ok(found) => found.problem(&path).unwrap(),
            Err((m, at)) => format!("{m} @{at}"),
        }
    }

    #[test]
    fn strings_borrow_without_escapes_and_decode_every_escape() {
        let path = FieldPath::parse("text").unwrap();
        let line = r#"{"id": 1, "text": "plain words", "x": [1, {"text": 2}]}"#;
        assert!(matches!(
            field_of(line, &path).unwrap(),
            Found::Text(Cow::Borrowed("plain words"))
        ));
        assert_eq!(
            text(
                r#"{"text": "a\nb\t\"q\"\\ \/ \b\f\r \u00e9 \ud83d\ude00"}"#,
                "text"
            ),
            "a\nb\t\"q\"\\ / \u{8}\u{c}\r é 😀"
        );
        assert_eq!(
            text(r#"{"meta": {"body": "deep", "n": 2}}"#, "meta.body"),
            "deep"
        );
        // The last of duplicate keys, as Python's json; a key with escapes still matches.
        assert_eq!(text(r#"{"text": "a", "te\u0078t": "b"}"#, "text"), "b");
        assert_eq!(text("  {\"text\": \"\"}\r", "text"), "");
    }

    #[test]
    fn problems_say_what_is_wrong() {
        assert_eq!(problem(r#"{"url": "x"}"#, "text"), "no field 'text'");
        assert_eq!(
            problem(r#"{"text": 5}"#, "text"),
            "field 'text' is a number, not a string"
        );
        assert_eq!(
            problem(r#"{"text": null}"#, "text"),
            "field 'text' is null, not a string"
        );
        assert_eq!(
            problem(r#"{"text": {"a": 1}}"#, "text"),
            "field 'text' is an object, not a string"
        );
        assert_eq!(
            problem(r#"{"meta": "s"}"#, "meta.body"),
            "field 'meta' is a string, not an object"
        );
        assert_eq!(
            problem(r#"{"meta": {}}"#, "meta.body"),
            "no field 'meta.body'"
        );
        assert_eq!(problem("[1, 2]", "text"), "not a JSON object but an array");
        assert_eq!(
            problem(r#"{"text": "a"} x"#, "text"),
            "trailing characters @14"
        );
        assert!(problem(r#"{"text": "a"#, "text").starts_with("EOF while parsing"));
        assert!(FieldPath::parse("a..b").is_err() && FieldPath::parse("").is_err());
    }

    #[test]
    fn a_missing_field_lists_the_keys_where_it_was_looked_for() {
        let path = FieldPath::parse("txt").unwrap();
        let keys = |line: &str, depth| keys_at(line, &path, depth);
        assert_eq!(
            keys(r#"{"text": "a", "id": 1}"#, 1).as_deref(),
            Some(r#""text", "id""#)
        );
        assert_eq!(keys("{}", 1).as_deref(), Some(""));
        let many: Vec<String> = (0..10).map(|i| format!("\"k{i}\": {i}")).collect();
        let line = format!("{{{}}}", many.join(", "));
        assert!(keys(&line, 1).unwrap().ends_with(r#""k7" and 2 more"#));
        let nested = FieldPath::parse("meta.body").unwrap();
        assert_eq!(
            keys_at(r#"{"meta": {"title": "t"}, "x": 1}"#, &nested, 2).as_deref(),
            Some(r#""title""#)
        );
    }

    #[test]
    fn lone_surrogates_are_found_replaced_or_dropped_and_pairs_kept() {
        let fixed = |line: &str, replace| match lone_surrogates(line, Some(replace)) {
            Surrogates::Fixed(s) => s,
            Surrogates::None => "none".to_owned(),
            Surrogates::At(..) => unreachable!(),
        };
        let line = r#"{"text": "a\ud800b\udc00c \ud83d\ude00 \\ud800"}"#;
        assert_eq!(
            fixed(line, true),
            r#"{"text": "a\ufffdb\ufffdc \ud83d\ude00 \\ud800"}"#
        );
        assert_eq!(
            fixed(line, false),
            r#"{"text": "abc \ud83d\ude00 \\ud800"}"#
        );
        assert!(matches!(lone_surrogates(line, None), Surrogates::At(11, s) if s == r"\ud800"));
        assert_eq!(fixed(r#"{"text": "\ud83d\ude00 \n"}"#, true), "none");
        assert_eq!(
            text(&fixed(line, true), "text"),
            "a\u{fffd}b\u{fffd}c 😀 \\ud800"
        );
    }
}
