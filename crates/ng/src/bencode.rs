//! Bencode: a dynamic [`Value`], a bounded decoder and an encoder.
//!
//! Written here rather than taken from a crate. The candidates (`bendy`,
//! `serde_bencode`, `bt_bencode`) each miss something the NG protocol needs:
//! rtpengine peers send dictionaries with **unsorted** keys (which a strict
//! decoder such as `bendy`'s refuses), duplicate keys must be **refused**
//! rather than silently merged into a map (as `serde_bencode`'s and
//! `bt_bencode`'s map-backed values do), nesting must be bounded without
//! relying on a library's recursion, and the result must be our own `Value`
//! (an adapter would copy every tree). The whole format is four productions,
//! so a small recursive-descent decoder with explicit limits is simpler to
//! audit than any of those adaptations.
//!
//! Limits (untrusted input never panics, never recurses or allocates without
//! bound): input at most [`MAX_INPUT`] bytes, nesting at most [`MAX_DEPTH`]
//! containers, at most [`MAX_ENTRIES`] entries per list or dictionary. Byte
//! string lengths are checked against the remaining input before anything is
//! allocated. Integers are canonical: no leading zeros, no `-0`, no empty
//! digits, and they must fit an `i64`.

use std::collections::HashSet;

use thiserror::Error;
use zeroize::Zeroize;

/// The longest input [`decode`] accepts: one NG datagram.
pub const MAX_INPUT: usize = crate::MAX_DATAGRAM;
/// The deepest nesting of lists and dictionaries [`decode`] accepts (the
/// outermost container is depth 1).
pub const MAX_DEPTH: usize = 32;
/// The most entries one list or dictionary may hold.
pub const MAX_ENTRIES: usize = 8192;
/// Longest accepted integer text (`-9223372036854775808` is 20 characters).
const MAX_INT_DIGITS: usize = 20;

/// A bencode value.
///
/// Byte strings are zeroized when the value is dropped: an offer's or an
/// answer's `sdp` carries SDES keys (`a=crypto ... inline:`), in requests
/// and in replies alike, and the NG control plane is not a hot path.
///
/// Equality (and hashing) of dictionaries ignores the order of entries: keys
/// are unique, so two dictionaries with the same entries are the same
/// bencode value (and encode to the same bytes).
#[derive(Clone, Debug)]
pub enum Value {
    /// `i<decimal>e`.
    Int(i64),
    /// `<length>:<bytes>`.
    Bytes(Vec<u8>),
    /// `l<values>e`.
    List(Vec<Value>),
    /// `d<key value pairs>e`, in the order they were decoded or inserted.
    /// Keys are unique ([`decode`] refuses duplicates, [`Value::insert`]
    /// replaces); [`Value::encode`] writes them sorted, as bencode requires.
    Dict(Vec<(Vec<u8>, Value)>),
}

impl Drop for Value {
    fn drop(&mut self) {
        // Only the byte strings: the containers drop their items, which
        // wipe themselves, and keys are names, not secrets.
        if let Value::Bytes(b) = self {
            b.zeroize();
        }
    }
}

fn sorted_entries(entries: &[(Vec<u8>, Value)]) -> Vec<&(Vec<u8>, Value)> {
    let mut sorted: Vec<&(Vec<u8>, Value)> = entries.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    sorted
}

impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Int(a), Value::Int(b)) => a == b,
            (Value::Bytes(a), Value::Bytes(b)) => a == b,
            (Value::List(a), Value::List(b)) => a == b,
            (Value::Dict(a), Value::Dict(b)) => a.len() == b.len() && sorted_entries(a) == sorted_entries(b),
            _ => false,
        }
    }
}

impl Eq for Value {}

impl std::hash::Hash for Value {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        match self {
            Value::Int(n) => n.hash(state),
            Value::Bytes(b) => b.hash(state),
            Value::List(items) => items.hash(state),
            Value::Dict(entries) => sorted_entries(entries).hash(state),
        }
    }
}

/// Why [`decode`] refused its input. The `at` fields are byte offsets into
/// the input.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum BencodeError {
    /// The input is longer than [`MAX_INPUT`].
    #[error("malformed bencode: input of {0} bytes is over the limit of {MAX_INPUT}")]
    TooLong(usize),
    /// The input ended inside a value.
    #[error("malformed bencode at byte {at}: unexpected end of input")]
    Truncated {
        /// Where the input ended.
        at: usize,
    },
    /// A byte that cannot start a value.
    #[error("malformed bencode at byte {at}: unexpected byte 0x{byte:02x}")]
    UnexpectedByte {
        /// Offset of the byte.
        at: usize,
        /// The byte.
        byte: u8,
    },
    /// A malformed integer: empty, leading zero, `-0`, non-digit, or out of
    /// range for `i64`.
    #[error("malformed bencode at byte {at}: invalid integer ({why})")]
    BadInt {
        /// Offset of the `i`.
        at: usize,
        /// What is wrong.
        why: &'static str,
    },
    /// A malformed byte-string length: empty, leading zero, or larger than
    /// the rest of the input.
    #[error("malformed bencode at byte {at}: invalid string length ({why})")]
    BadLength {
        /// Offset of the length's first digit.
        at: usize,
        /// What is wrong.
        why: &'static str,
    },
    /// Nesting deeper than [`MAX_DEPTH`].
    #[error("malformed bencode at byte {at}: nesting deeper than {MAX_DEPTH}")]
    TooDeep {
        /// Offset of the container that is too deep.
        at: usize,
    },
    /// A list or dictionary with more than [`MAX_ENTRIES`] entries.
    #[error("malformed bencode at byte {at}: more than {MAX_ENTRIES} entries in one container")]
    TooManyEntries {
        /// Offset of the entry over the limit.
        at: usize,
    },
    /// A dictionary key that is not a byte string.
    #[error("malformed bencode at byte {at}: dictionary key is not a string")]
    KeyNotString {
        /// Offset of the key.
        at: usize,
    },
    /// The same key twice in one dictionary.
    #[error("malformed bencode at byte {at}: duplicate dictionary key '{key}'")]
    DuplicateKey {
        /// Offset of the second occurrence.
        at: usize,
        /// The key, lossily as UTF-8, at most 64 characters.
        key: String,
    },
    /// Bytes after the value.
    #[error("malformed bencode at byte {at}: trailing data after the value")]
    TrailingData {
        /// Offset of the first extra byte.
        at: usize,
    },
}

/// Decodes one value that must span the whole `input`.
pub fn decode(input: &[u8]) -> Result<Value, BencodeError> {
    if input.len() > MAX_INPUT {
        return Err(BencodeError::TooLong(input.len()));
    }
    let mut d = Decoder { input, pos: 0 };
    let v = d.value(0)?;
    if d.pos != input.len() {
        return Err(BencodeError::TrailingData { at: d.pos });
    }
    Ok(v)
}

struct Decoder<'a> {
    input: &'a [u8],
    pos: usize,
}

impl Decoder<'_> {
    fn peek(&self) -> Result<u8, BencodeError> {
        self.input.get(self.pos).copied().ok_or(BencodeError::Truncated { at: self.pos })
    }

    /// `depth` is the number of containers enclosing this value.
    fn value(&mut self, depth: usize) -> Result<Value, BencodeError> {
        let start = self.pos;
        match self.peek()? {
            b'i' => self.int().map(Value::Int),
            b'0'..=b'9' => self.bytes().map(Value::Bytes),
            b'l' => {
                if depth >= MAX_DEPTH {
                    return Err(BencodeError::TooDeep { at: start });
                }
                self.pos += 1;
                let mut items = Vec::new();
                loop {
                    if self.peek()? == b'e' {
                        self.pos += 1;
                        return Ok(Value::List(items));
                    }
                    if items.len() >= MAX_ENTRIES {
                        return Err(BencodeError::TooManyEntries { at: self.pos });
                    }
                    items.push(self.value(depth + 1)?);
                }
            }
            b'd' => {
                if depth >= MAX_DEPTH {
                    return Err(BencodeError::TooDeep { at: start });
                }
                self.pos += 1;
                let mut entries: Vec<(Vec<u8>, Value)> = Vec::new();
                let mut seen: HashSet<Vec<u8>> = HashSet::new();
                loop {
                    let key_at = self.pos;
                    match self.peek()? {
                        b'e' => {
                            self.pos += 1;
                            return Ok(Value::Dict(entries));
                        }
                        b'0'..=b'9' => {}
                        _ => return Err(BencodeError::KeyNotString { at: key_at }),
                    }
                    if entries.len() >= MAX_ENTRIES {
                        return Err(BencodeError::TooManyEntries { at: key_at });
                    }
                    let key = self.bytes()?;
                    if !seen.insert(key.clone()) {
                        return Err(BencodeError::DuplicateKey { at: key_at, key: lossy(&key) });
                    }
                    let value = self.value(depth + 1)?;
                    entries.push((key, value));
                }
            }
            byte => Err(BencodeError::UnexpectedByte { at: start, byte }),
        }
    }

    fn int(&mut self) -> Result<i64, BencodeError> {
        let at = self.pos;
        self.pos += 1; // 'i'
        let rest = self.input.get(self.pos..).unwrap_or_default();
        let Some(len) = rest.iter().take(MAX_INT_DIGITS + 1).position(|&b| b == b'e') else {
            return Err(if rest.len() <= MAX_INT_DIGITS {
                BencodeError::Truncated { at: self.input.len() }
            } else {
                BencodeError::BadInt { at, why: "too long" }
            });
        };
        let text = rest.get(..len).unwrap_or_default();
        let (neg, digits) = match text.split_first() {
            Some((b'-', d)) => (true, d),
            _ => (false, text),
        };
        let why = if digits.is_empty() {
            Some("no digits")
        } else if !digits.iter().all(u8::is_ascii_digit) {
            Some("not a decimal")
        } else if digits.len() > 1 && digits.first() == Some(&b'0') {
            Some("leading zero")
        } else if neg && digits == b"0" {
            Some("negative zero")
        } else {
            None
        };
        if let Some(why) = why {
            return Err(BencodeError::BadInt { at, why });
        }
        // Digits only, so UTF-8; parse handles the range check (i64::MIN too).
        let n = std::str::from_utf8(text)
            .ok()
            .and_then(|s| s.parse::<i64>().ok())
            .ok_or(BencodeError::BadInt { at, why: "out of range" })?;
        self.pos += len + 1;
        Ok(n)
    }

    fn bytes(&mut self) -> Result<Vec<u8>, BencodeError> {
        let at = self.pos;
        let rest = self.input.get(self.pos..).unwrap_or_default();
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 {
            return Err(BencodeError::BadLength { at, why: "no digits" });
        }
        if digits > 1 && rest.first() == Some(&b'0') {
            return Err(BencodeError::BadLength { at, why: "leading zero" });
        }
        match rest.get(digits) {
            Some(b':') => {}
            Some(_) => return Err(BencodeError::BadLength { at, why: "no ':' after the length" }),
            None => return Err(BencodeError::Truncated { at: self.input.len() }),
        }
        // Any length over the input is refused before allocating; 20 digits
        // overflow usize, which is the same refusal.
        let len = rest
            .get(..digits)
            .and_then(|d| std::str::from_utf8(d).ok())
            .and_then(|s| s.parse::<usize>().ok())
            .ok_or(BencodeError::BadLength { at, why: "longer than the input" })?;
        let body_start = digits + 1;
        let body = body_start
            .checked_add(len)
            .and_then(|end| rest.get(body_start..end))
            .ok_or(BencodeError::BadLength { at, why: "longer than the input" })?;
        self.pos += body_start + len;
        Ok(body.to_vec())
    }
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).chars().take(64).collect()
}

impl Value {
    /// Appends the encoding of `self` to `out`, dictionary keys sorted.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Value::Int(n) => {
                out.push(b'i');
                out.extend_from_slice(n.to_string().as_bytes());
                out.push(b'e');
            }
            Value::Bytes(b) => encode_bytes(b, out),
            Value::List(items) => {
                out.push(b'l');
                for item in items {
                    item.encode(out);
                }
                out.push(b'e');
            }
            Value::Dict(entries) => {
                out.push(b'd');
                for (k, v) in sorted_entries(entries) {
                    encode_bytes(k, out);
                    v.encode(out);
                }
                out.push(b'e');
            }
        }
    }

    /// The encoding of `self`, in a vector of exactly its length: a vector
    /// that grows leaves the bytes written so far (keys in an SDP) in the
    /// freed block, so it is sized first.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.encoded_len());
        self.encode(&mut out);
        out
    }

    /// The length of the encoding of `self`, for sizing its buffer up front.
    pub fn encoded_len(&self) -> usize {
        fn bytes_len(b: &[u8]) -> usize {
            decimal_len(b.len() as u64) + 1 + b.len()
        }
        match self {
            Value::Int(n) => 2 + usize::from(*n < 0) + decimal_len(n.unsigned_abs()),
            Value::Bytes(b) => bytes_len(b),
            Value::List(items) => 2 + items.iter().map(Value::encoded_len).sum::<usize>(),
            Value::Dict(entries) => 2 + entries.iter().map(|(k, v)| bytes_len(k) + v.encoded_len()).sum::<usize>(),
        }
    }

    /// The value of `key` in a dictionary; `None` for a missing key or a
    /// non-dictionary.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Dict(entries) => entries.iter().find(|(k, _)| k == key.as_bytes()).map(|(_, v)| v),
            _ => None,
        }
    }

    /// A byte string as UTF-8; `None` for other values or invalid UTF-8.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Bytes(b) => std::str::from_utf8(b).ok(),
            _ => None,
        }
    }

    /// The raw bytes of a byte string.
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Value::Bytes(b) => Some(b),
            _ => None,
        }
    }

    /// An integer, or a byte string holding a decimal integer (optionally
    /// signed, surrounding spaces allowed) as rtpengine accepts both.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(n) => Some(*n),
            Value::Bytes(b) => {
                let s = std::str::from_utf8(b).ok()?.trim();
                let digits = s.strip_prefix(['-', '+']).unwrap_or(s);
                if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
                    return None;
                }
                s.parse().ok()
            }
            _ => None,
        }
    }

    /// The items of a list.
    pub fn as_list(&self) -> Option<&[Value]> {
        match self {
            Value::List(items) => Some(items),
            _ => None,
        }
    }

    /// The entries of a dictionary, in stored order.
    pub fn as_dict(&self) -> Option<&[(Vec<u8>, Value)]> {
        match self {
            Value::Dict(entries) => Some(entries),
            _ => None,
        }
    }

    /// An empty dictionary.
    pub fn dict() -> Value {
        Value::Dict(Vec::new())
    }

    /// Builder form of [`Value::insert`].
    #[must_use]
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Value {
        self.insert(key, value);
        self
    }

    /// Inserts `key`, replacing an existing entry in place. A non-dictionary
    /// is first replaced by an empty dictionary.
    pub fn insert(&mut self, key: &str, value: impl Into<Value>) {
        let value = value.into();
        if !matches!(self, Value::Dict(_)) {
            *self = Value::dict();
        }
        if let Value::Dict(entries) = self {
            if let Some(slot) = entries.iter_mut().find(|(k, _)| k == key.as_bytes()) {
                slot.1 = value;
            } else {
                entries.push((key.as_bytes().to_vec(), value));
            }
        }
    }

    /// Removes `key` from a dictionary, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        match self {
            Value::Dict(entries) => {
                let i = entries.iter().position(|(k, _)| k == key.as_bytes())?;
                Some(entries.remove(i).1)
            }
            _ => None,
        }
    }
}

/// Digits of `n` in decimal.
fn decimal_len(mut n: u64) -> usize {
    let mut digits = 1;
    while n >= 10 {
        n /= 10;
        digits += 1;
    }
    digits
}

fn encode_bytes(b: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(b.len().to_string().as_bytes());
    out.push(b':');
    out.extend_from_slice(b);
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::Bytes(s.as_bytes().to_vec())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::Bytes(s.into_bytes())
    }
}

impl From<&[u8]> for Value {
    fn from(b: &[u8]) -> Value {
        Value::Bytes(b.to_vec())
    }
}

impl From<i64> for Value {
    fn from(n: i64) -> Value {
        Value::Int(n)
    }
}

impl From<u64> for Value {
    /// Saturates at `i64::MAX` (bencode integers here are `i64`).
    fn from(n: u64) -> Value {
        Value::Int(i64::try_from(n).unwrap_or(i64::MAX))
    }
}

impl From<u32> for Value {
    fn from(n: u32) -> Value {
        Value::Int(i64::from(n))
    }
}

impl From<usize> for Value {
    /// Saturates at `i64::MAX`.
    fn from(n: usize) -> Value {
        Value::Int(i64::try_from(n).unwrap_or(i64::MAX))
    }
}

impl From<Vec<Value>> for Value {
    fn from(items: Vec<Value>) -> Value {
        Value::List(items)
    }
}

impl From<Vec<&str>> for Value {
    fn from(items: Vec<&str>) -> Value {
        Value::List(items.into_iter().map(Value::from).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn err(input: &[u8]) -> BencodeError {
        decode(input).expect_err("should be refused")
    }

    #[test]
    fn round_trips() {
        let v = Value::dict()
            .with("command", "ping")
            .with("n", -42i64)
            .with("list", vec![Value::from("a"), Value::Int(0), Value::List(vec![]), Value::dict()]);
        let bytes = v.to_bytes();
        assert_eq!(bytes, b"d7:command4:ping4:listl1:ai0eledee1:ni-42ee".to_vec());
        // Decoding keeps the (sorted) wire order; re-encoding is identical.
        let back = decode(&bytes).unwrap();
        assert_eq!(back.to_bytes(), bytes);
        assert_eq!(back.get("n"), Some(&Value::Int(-42)));
        assert_eq!(decode(b"i0e").unwrap(), Value::Int(0));
        assert_eq!(decode(b"i-9223372036854775808e").unwrap(), Value::Int(i64::MIN));
        assert_eq!(Value::Int(i64::MIN).encoded_len(), Value::Int(i64::MIN).to_bytes().len());
        assert_eq!(decode(b"i9223372036854775807e").unwrap(), Value::Int(i64::MAX));
        assert_eq!(decode(b"0:").unwrap(), Value::Bytes(vec![]));
        assert_eq!(decode(b"le").unwrap(), Value::List(vec![]));
        assert_eq!(decode(b"de").unwrap(), Value::dict());
    }

    #[test]
    fn unsorted_keys_are_accepted_and_encoded_sorted() {
        let v = decode(b"d1:bi1e1:ai2ee").unwrap();
        assert_eq!(v.as_dict().unwrap()[0].0, b"b");
        assert_eq!(v, Value::dict().with("a", 2i64).with("b", 1i64));
        assert_ne!(v, Value::dict().with("a", 2i64));
        assert_ne!(v, Value::dict().with("a", 2i64).with("b", 2i64));
        assert_eq!(v.to_bytes(), b"d1:ai2e1:bi1ee");
    }

    #[test]
    fn malformed_inputs_are_errors() {
        assert_eq!(err(b""), BencodeError::Truncated { at: 0 });
        assert!(matches!(err(b"d7:command4:ping"), BencodeError::Truncated { .. }));
        assert!(matches!(err(b"d7:command4:pi"), BencodeError::BadLength { .. }));
        assert!(matches!(err(b"i12"), BencodeError::Truncated { .. }));
        assert!(matches!(err(b"l"), BencodeError::Truncated { .. }));
        assert_eq!(err(b"i03e"), BencodeError::BadInt { at: 0, why: "leading zero" });
        assert_eq!(err(b"i-0e"), BencodeError::BadInt { at: 0, why: "negative zero" });
        assert_eq!(err(b"i-03e"), BencodeError::BadInt { at: 0, why: "leading zero" });
        assert_eq!(err(b"ie"), BencodeError::BadInt { at: 0, why: "no digits" });
        assert_eq!(err(b"i-e"), BencodeError::BadInt { at: 0, why: "no digits" });
        assert_eq!(err(b"i1.5e"), BencodeError::BadInt { at: 0, why: "not a decimal" });
        assert_eq!(err(b"i+5e"), BencodeError::BadInt { at: 0, why: "not a decimal" });
        assert_eq!(err(b"i9223372036854775808e"), BencodeError::BadInt { at: 0, why: "out of range" });
        assert_eq!(err(b"i123456789012345678901234e"), BencodeError::BadInt { at: 0, why: "too long" });
        assert!(matches!(err(b"-1:a"), BencodeError::UnexpectedByte { at: 0, byte: b'-' }));
        assert!(matches!(err(b"l-1:ae"), BencodeError::UnexpectedByte { at: 1, .. }));
        assert_eq!(err(b"01:a"), BencodeError::BadLength { at: 0, why: "leading zero" });
        assert_eq!(err(b"5:abc"), BencodeError::BadLength { at: 0, why: "longer than the input" });
        assert_eq!(
            err(b"99999999999999999999999999:abc"),
            BencodeError::BadLength { at: 0, why: "longer than the input" }
        );
        assert_eq!(err(b"18446744073709551615:x"), BencodeError::BadLength { at: 0, why: "longer than the input" });
        assert_eq!(err(b"3abc"), BencodeError::BadLength { at: 0, why: "no ':' after the length" });
        assert_eq!(err(b"di1ei2ee"), BencodeError::KeyNotString { at: 1 });
        assert_eq!(err(b"d1:ai1e1:ai2ee"), BencodeError::DuplicateKey { at: 7, key: "a".into() });
        assert_eq!(err(b"i1ei2e"), BencodeError::TrailingData { at: 3 });
        assert_eq!(err(b"dex"), BencodeError::TrailingData { at: 2 });
        assert_eq!(err(b"x"), BencodeError::UnexpectedByte { at: 0, byte: b'x' });
        assert_eq!(err(b"e"), BencodeError::UnexpectedByte { at: 0, byte: b'e' });
        assert!(matches!(err(&vec![b'0'; MAX_INPUT + 1]), BencodeError::TooLong(_)));
    }

    #[test]
    fn depth_is_bounded() {
        let nested = |n: usize| {
            let mut v = vec![b'l'; n];
            v.extend(vec![b'e'; n]);
            v
        };
        assert!(decode(&nested(MAX_DEPTH)).is_ok());
        assert_eq!(decode(&nested(MAX_DEPTH + 1)), Err(BencodeError::TooDeep { at: MAX_DEPTH }));
        // Far deeper input is refused at the same point, without recursion.
        assert_eq!(decode(&nested(30_000)), Err(BencodeError::TooDeep { at: MAX_DEPTH }));
        let mut dicts = b"d1:a".repeat(MAX_DEPTH + 1);
        dicts.extend(b"i0e");
        dicts.extend(b"e".repeat(MAX_DEPTH + 1));
        assert!(matches!(decode(&dicts), Err(BencodeError::TooDeep { .. })));
    }

    #[test]
    fn entries_are_bounded() {
        let mut v = b"l".to_vec();
        v.extend(b"i0e".repeat(MAX_ENTRIES));
        v.push(b'e');
        assert!(decode(&v).is_ok());
        let mut v = b"l".to_vec();
        v.extend(b"0:".repeat(MAX_ENTRIES + 1));
        v.push(b'e');
        assert!(matches!(decode(&v), Err(BencodeError::TooManyEntries { .. })));
    }

    #[test]
    fn error_text() {
        assert_eq!(err(b"i03e").to_string(), "malformed bencode at byte 0: invalid integer (leading zero)");
        assert_eq!(err(b"d1:a").to_string(), "malformed bencode at byte 4: unexpected end of input");
    }

    #[test]
    fn accessors() {
        assert_eq!(Value::from("12").as_int(), Some(12));
        assert_eq!(Value::from(" -3 ").as_int(), Some(-3));
        assert_eq!(Value::from("1x").as_int(), None);
        assert_eq!(Value::from("").as_int(), None);
        assert_eq!(Value::Int(7).as_int(), Some(7));
        assert_eq!(Value::Int(7).as_str(), None);
        assert_eq!(Value::Bytes(vec![0xff]).as_str(), None);
        assert_eq!(Value::from(vec![Value::Int(1)]).as_list(), Some(&[Value::Int(1)][..]));
        let mut d = Value::dict().with("a", 1i64).with("b", 2u32);
        d.insert("a", 3usize);
        assert_eq!(d.as_dict().unwrap().len(), 2);
        assert_eq!(d.get("a"), Some(&Value::Int(3)));
        assert_eq!(d.remove("a"), Some(Value::Int(3)));
        assert_eq!(d.get("a"), None);
        assert_eq!(Value::from(u64::MAX), Value::Int(i64::MAX));
        assert_eq!(Value::Int(1).get("a"), None);
    }

    fn arb_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            any::<i64>().prop_map(Value::Int),
            proptest::collection::vec(any::<u8>(), 0..12).prop_map(Value::Bytes),
        ];
        leaf.prop_recursive(6, 64, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::List),
                proptest::collection::btree_map(proptest::collection::vec(any::<u8>(), 0..6), inner, 0..6)
                    .prop_map(|m| Value::Dict(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn decode_encode_round_trip(v in arb_value()) {
            let bytes = v.to_bytes();
            // Sized exactly: the buffer never grew (see `to_bytes`).
            prop_assert_eq!(v.encoded_len(), bytes.len());
            prop_assert_eq!(bytes.capacity(), bytes.len());
            let back = decode(&bytes).unwrap();
            prop_assert_eq!(&back, &v);
            prop_assert_eq!(back.to_bytes(), bytes);
        }

        #[test]
        fn decode_never_panics(data in proptest::collection::vec(any::<u8>(), 0..256)) {
            if let Ok(v) = decode(&data) {
                // Whatever decodes re-encodes to something that decodes the same
                // (modulo key order).
                let again = decode(&v.to_bytes()).unwrap();
                prop_assert_eq!(again.to_bytes(), v.to_bytes());
            }
        }

        #[test]
        fn decode_never_panics_on_bencode_like(data in proptest::collection::vec(
            prop_oneof![Just(b'i'), Just(b'l'), Just(b'd'), Just(b'e'), Just(b':'), Just(b'-'), Just(b'0'), Just(b'1'), Just(b'9'), Just(b'a')],
            0..128,
        )) {
            let _ = decode(&data);
        }
    }
}
