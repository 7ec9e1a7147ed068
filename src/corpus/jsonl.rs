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
    fn prefix(&self, depth: usize) -> String {
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
}
