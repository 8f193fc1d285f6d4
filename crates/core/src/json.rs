//! A single-pass JSON scanner: it checks that text is JSON (RFC 8259, as serde_json reads it)
//! and finds where values start and end, building no tree and decoding nothing on the way.
//!
//! - Whitespace is space, `\t`, `\n` and `\r`; numbers are
//!   `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`; literals are `true`, `false`, `null`;
//!   strings hold no raw U+0000–U+001F and only the escapes `\" \\ \/ \b \f \n \r \t \uXXXX`.
//!   Escaped lone surrogates pass, as they do in `JSON.parse` and in serde_json's `RawValue`
//!   (which reads strings without decoding them); [`decode`] is where a string has to be one that
//!   decodes, as serde_json decodes a `String` (a key, a string field).
//! - No nesting limit and no recursion: the open brackets are a stack of bits, the innermost 64
//!   in a register and the rest in a `Vec`.
//! - Optionally, in the same pass, every number is checked to fit a finite double.
//! - Strings, the bulk of most payloads, and runs of digits are read eight bytes at a time (SWAR:
//!   plain `u64` arithmetic, no `unsafe`, no target features); a name packed right after `{` or
//!   `,`, as `JSON.stringify` writes it, is read from the same eight bytes as its punctuation.
//!
//! The input is `&str`, so it is valid UTF-8 already; every place the scanner stops is an ASCII
//! byte, so every span it reports is a `str` boundary.

/// The text is not JSON. Callers word their own error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Invalid;

pub(crate) struct Scanner<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pub(crate) pos: usize,
    /// The brackets open inside the value being scanned beyond the innermost 64, outermost
    /// first: 1 for an object, 0 for an array.
    deeper: Vec<u8>,
    /// The first number, by position, that does not (start and end), if checked.
    pub(crate) non_finite: Option<(usize, usize)>,
}

impl<'a> Scanner<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        Scanner {
            text,
            bytes: text.as_bytes(),
            pos: 0,
            deeper: Vec::new(),
            non_finite: None,
        }
    }

    /// The next byte that is not whitespace, which it moves to; `None` at the end.
    #[inline(always)]
    pub(crate) fn peek(&mut self) -> Option<u8> {
        let (b, at) = peek(self.bytes, self.pos)?;
        self.pos = at;
        Some(b)
    }

    /// Nothing but whitespace is left.
    pub(crate) fn end(&mut self) -> Result<(), Invalid> {
        match self.peek() {
            None => Ok(()),
            Some(_) => Err(Invalid),
        }
    }

    /// Moves past `byte`, the next byte that is not whitespace.
    #[inline(always)]
    pub(crate) fn expect(&mut self, byte: u8) -> Result<(), Invalid> {
        if self.peek() == Some(byte) {
            self.pos += 1;
            Ok(())
        } else {
            Err(Invalid)
        }
    }

    /// Reads one JSON value (after any whitespace) and leaves `pos` just past it. With
    /// `check_numbers`, also notes in [`non_finite`](Self::non_finite) the first of its numbers
    /// a double cannot hold, if none was noted before.
    pub(crate) fn value(&mut self, check_numbers: bool) -> Result<(), Invalid> {
        if check_numbers {
            self.scan::<true>()
        } else {
            self.scan::<false>()
        }
    }

    fn scan<const CHECK_NUMBERS: bool>(&mut self) -> Result<(), Invalid> {
        // The hot loop: position, bytes and the innermost brackets in locals (registers); its
        // hot paths are macros, so that an error returns at once and no result is re-tested.
        let bytes = self.bytes;
        let mut pos = self.pos;
        // The open brackets: the innermost 64 as the bits of `inner`, the innermost lowest, 1 for
        // an object; those around them in `self.deeper`, the outermost first.
        let mut inner = 0u64;
        let mut depth = 0usize;
        self.deeper.clear();

        // From just past a string's opening quote to just past its closing one: the first 16
        // bytes here, eight at a time (most strings end in them), the rest in `long_string`.
        macro_rules! string_end {
            ($from:expr) => {{
                let mut at = $from;
                let long = at + 16;
                loop {
                    if let Some(x) = load8(bytes, at) {
                        let stops = string_stops(x);
                        if stops == 0 {
                            at += 8;
                            if at < long {
                                continue;
                            }
                            at = long_string(bytes, at);
                            if bytes.get(at) == Some(&b'"') {
                                break at + 1;
                            }
                        } else {
                            let bit = stops.trailing_zeros();
                            at += (bit / 8) as usize;
                            if (x >> (bit & 56)) as u8 == b'"' {
                                break at + 1;
                            }
                        }
                    }
                    match string_rest(bytes, at) {
                        Some(end) => break end,
                        None => return Err(Invalid),
                    }
                }
            }};
        }
        // At a member name's opening quote: `pos` moves past the name and its colon.
        macro_rules! member_name {
            ($quote:expr) => {{
                pos = string_end!($quote + 1);
                colon!();
            }};
        }
        macro_rules! colon {
            () => {
                match bytes.get(pos) {
                    Some(b':') => pos += 1,
                    _ => match peek(bytes, pos) {
                        Some((b':', at)) => pos = at + 1,
                        _ => return Err(Invalid),
                    },
                }
            };
        }
        // At `{` or `,` (`$at`) followed at once by a name's opening quote, as in
        // `JSON.stringify`'s output: one load of eight bytes holds both, the name's first six
        // bytes and, if it is short, its closing quote and the colon. Otherwise none of it is
        // taken, and `$otherwise` runs.
        macro_rules! packed_member_name {
            ($at:expr, $otherwise:block) => {{
                match load8(bytes, $at) {
                    Some(x) if (x >> 8) as u8 == b'"' => {
                        // The name's first six bytes; the two zero bytes above them stop the
                        // search as a control character would.
                        let name = x >> 16;
                        let bit = string_stops(name).trailing_zeros();
                        let k = (bit / 8) as usize;
                        let stop = (name >> (bit & 56)) as u8;
                        if k < 5 && stop == b'"' && (name >> (bit & 56) >> 8) as u8 == b':' {
                            pos = $at + k + 4;
                        } else if k < 6 && stop == b'"' {
                            pos = $at + k + 3;
                            colon!();
                        } else {
                            // A longer name, or one with an escape (or a control character):
                            // the rest of it from its first stop.
                            pos = string_end!($at + 2 + k);
                            colon!();
                        }
                    }
                    _ => $otherwise,
                }
            }};
        }

        'value: loop {
            // A value is due here.
            let (b, at) = peek(bytes, pos).ok_or(Invalid)?;
            match b {
                b'"' => pos = string_end!(at + 1),
                b'0'..=b'9' | b'-' => {
                    let (end, exponent) = number(bytes, at, b).ok_or(Invalid)?;
                    // Only an exponent or over 308 characters can take a number out of a
                    // double's range: most numbers need no parse at all.
                    if CHECK_NUMBERS && (exponent || end - at > 308) {
                        self.check_range(at, end);
                    }
                    pos = end;
                }
                b'{' | b'[' => {
                    let object = b == b'{';
                    let (next, inside) = peek(bytes, at + 1).ok_or(Invalid)?;
                    // `}` and `]` are two past `{` and `[`: `{}` or `[]`.
                    if next == b + 2 {
                        pos = inside + 1;
                    } else {
                        if depth >= 64 {
                            self.deeper.push((inner >> 63) as u8);
                        }
                        inner = inner << 1 | u64::from(object);
                        depth += 1;
                        if !object {
                            pos = inside;
                        } else if next == b'"' {
                            packed_member_name!(at, { member_name!(inside) });
                        } else {
                            return Err(Invalid);
                        }
                        continue 'value;
                    }
                }
                b't' => pos = literal(bytes, at, b"true").ok_or(Invalid)?,
                b'f' => pos = literal(bytes, at, b"false").ok_or(Invalid)?,
                b'n' => pos = literal(bytes, at, b"null").ok_or(Invalid)?,
                _ => return Err(Invalid),
            }
            // A value ended: close the brackets it ends, up to where the next value is due.
            while depth > 0 {
                let (b, at) = peek(bytes, pos).ok_or(Invalid)?;
                if inner & 1 == 1 {
                    if b == b',' {
                        packed_member_name!(at, {
                            match peek(bytes, at + 1) {
                                Some((b'"', quote)) => member_name!(quote),
                                _ => return Err(Invalid),
                            }
                        });
                        continue 'value;
                    }
                    if b != b'}' {
                        return Err(Invalid);
                    }
                } else {
                    if b == b',' {
                        pos = at + 1;
                        continue 'value;
                    }
                    if b != b']' {
                        return Err(Invalid);
                    }
                }
                pos = at + 1;
                inner >>= 1;
                depth -= 1;
                if depth >= 64 {
                    inner |= u64::from(self.deeper.pop().unwrap_or(0)) << 63;
                }
            }
            self.pos = pos;
            return Ok(());
        }
    }

    /// Just past a string's opening quote: moves past its closing one. Returns whether the string
    /// has escapes.
    pub(crate) fn string(&mut self) -> Result<bool, Invalid> {
        let start = self.pos;
        self.pos = string_rest(self.bytes, start).ok_or(Invalid)?;
        Ok(self.bytes[start..self.pos].contains(&b'\\'))
    }

    #[cold]
    #[inline(never)]
    fn check_range(&mut self, start: usize, end: usize) {
        let number = &self.text[start..end];
        if self.non_finite.is_none() && !number.parse::<f64>().is_ok_and(f64::is_finite) {
            self.non_finite = Some((start, end));
        }
    }
}

/// The next byte from `pos` that is not whitespace, and where it is.
#[inline(always)]
fn peek(bytes: &[u8], pos: usize) -> Option<(u8, usize)> {
    // Text from `JSON.stringify` has no whitespace at all: one test, mostly.
    match bytes.get(pos) {
        Some(&b) if b > b' ' => Some((b, pos)),
        _ => peek_past_whitespace(bytes, pos),
    }
}

#[inline(never)]
fn peek_past_whitespace(bytes: &[u8], mut pos: usize) -> Option<(u8, usize)> {
    while let Some(&b) = bytes.get(pos) {
        match b {
            b' ' | b'\t' | b'\n' | b'\r' => pos += 1,
            _ => return Some((b, pos)),
        }
    }
    None
}

/// Eight bytes from `pos`, the first lowest, if there are eight.
#[inline(always)]
fn load8(bytes: &[u8], pos: usize) -> Option<u64> {
    let chunk = bytes.get(pos..pos.wrapping_add(8))?;
    Some(u64::from_le_bytes(chunk.try_into().ok()?))
}

/// From `pos` within a string: the first `"`, `\` or control character (or the end), sixteen
/// bytes at a time. Out of line, so that its constants stay in registers for a long string, and
/// marked cold, so that the scan's short-string path is laid out as if it were not there (a long
/// string pays one jump for it).
#[cold]
#[inline(never)]
fn long_string(bytes: &[u8], mut pos: usize) -> usize {
    while let Some(chunk) = bytes.get(pos..pos.wrapping_add(16)) {
        let (Some(low), Some(high)) = (chunk.first_chunk(), chunk.last_chunk()) else {
            break;
        };
        let low = string_stops(u64::from_le_bytes(*low));
        let high = string_stops(u64::from_le_bytes(*high));
        if low | high != 0 {
            let first = if low != 0 {
                low.trailing_zeros()
            } else {
                64 + high.trailing_zeros()
            };
            return pos + (first / 8) as usize;
        }
        pos += 16;
    }
    skip(bytes, pos, string_stops, |b| {
        (b != b'"') & (b != b'\\') & (b >= 0x20)
    })
}

/// A string from `pos`, within it: just past its closing quote. Any string; the scan's own hot
/// path covers the common one (no escapes, not at the very end of the text).
#[inline(never)]
fn string_rest(bytes: &[u8], mut pos: usize) -> Option<usize> {
    loop {
        pos = long_string(bytes, pos);
        match bytes.get(pos)? {
            b'"' => return Some(pos + 1),
            b'\\' => pos = escape(bytes, pos)?,
            // A raw control character.
            _ => return None,
        }
    }
}

/// At a backslash in a string: just past the escape.
fn escape(bytes: &[u8], pos: usize) -> Option<usize> {
    match bytes.get(pos + 1)? {
        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Some(pos + 2),
        b'u' => {
            let hex = bytes.get(pos + 2..pos + 6)?;
            hex.iter().all(u8::is_ascii_hexdigit).then_some(pos + 6)
        }
        _ => None,
    }
}

/// At a number's first byte, `first` (`-` or a digit): just past the number, and whether it has
/// an exponent.
#[inline(always)]
fn number(bytes: &[u8], start: usize, first: u8) -> Option<(usize, bool)> {
    let mut i = start + 1;
    let lead = if first == b'-' {
        i += 1;
        *bytes.get(start + 1)?
    } else {
        first
    };
    match lead {
        // A leading zero stands alone: a digit after it fails where the value ends (the
        // caller's check of what follows a value; `frames::top_level_value`'s own).
        b'0' => {}
        b'1'..=b'9' => i = skip_digits(bytes, i),
        _ => return None,
    }
    match bytes.get(i) {
        Some(b'.' | b'e' | b'E') => fraction_and_exponent(bytes, i),
        _ => Some((i, false)),
    }
}

/// At a number's `.`, `e` or `E`: just past the number, and whether it has an exponent.
#[inline(never)]
fn fraction_and_exponent(bytes: &[u8], mut i: usize) -> Option<(usize, bool)> {
    if bytes.get(i) == Some(&b'.') {
        i = digits(bytes, i + 1)?;
    }
    if !matches!(bytes.get(i), Some(b'e' | b'E')) {
        return Some((i, false));
    }
    i += 1;
    if matches!(bytes.get(i), Some(b'+' | b'-')) {
        i += 1;
    }
    Some((digits(bytes, i)?, true))
}

/// One digit or more from `i`: where they end.
fn digits(bytes: &[u8], i: usize) -> Option<usize> {
    bytes
        .get(i)?
        .is_ascii_digit()
        .then(|| skip_digits(bytes, i + 1))
}

/// Where the digits from `i` end.
#[inline(always)]
fn skip_digits(bytes: &[u8], i: usize) -> usize {
    skip(bytes, i, digit_stops, |b| b.is_ascii_digit())
}

/// At a literal's first byte: just past it, if it is `word`.
#[inline(always)]
fn literal(bytes: &[u8], pos: usize, word: &[u8]) -> Option<usize> {
    (bytes.get(pos..pos + word.len()) == Some(word)).then_some(pos + word.len())
}

const ONES: u64 = u64::MAX / 255;
const HIGH: u64 = ONES << 7;

/// Eight bytes at once (little-endian, first byte lowest): the high bit of each byte that is `"`,
/// `\` or below 0x20. A byte can only gain a false stop from a borrow out of a byte below it,
/// which is a stop itself, so the lowest stop is always exact.
#[inline(always)]
fn string_stops(x: u64) -> u64 {
    let quote = x ^ (ONES * u64::from(b'"'));
    let backslash = x ^ (ONES * u64::from(b'\\'));
    // A byte's high bit after subtracting is set from below 0x20 (or from zero, for the two
    // exact matches), or from 0x80 and up, which `!x` clears.
    (x.wrapping_sub(ONES * 0x20) | quote.wrapping_sub(ONES) | backslash.wrapping_sub(ONES))
        & !x
        & HIGH
}

/// Eight bytes at once: the high bit of each byte that is not an ASCII digit (`+ 0x46` sets it
/// from 0x3A up, `- 0x30` below 0x30 and from 0xB0 up; 0x80 to 0xB9 the first). Carries and
/// borrows only cross out of a byte that is a stop, so again the lowest stop is exact.
#[inline(always)]
fn digit_stops(x: u64) -> u64 {
    (x.wrapping_add(ONES * 0x46) | x.wrapping_sub(ONES * 0x30)) & HIGH
}

/// The first position from `pos` whose byte fails `keep` (or the end): eight bytes at a time
/// (`stops`, the same test as `keep` on eight bytes at once), then byte by byte at the end.
#[inline(always)]
fn skip(
    bytes: &[u8],
    mut pos: usize,
    stops: impl Fn(u64) -> u64,
    keep: impl Fn(u8) -> bool,
) -> usize {
    while let Some(x) = load8(bytes, pos) {
        let found = stops(x);
        if found != 0 {
            return pos + (found.trailing_zeros() / 8) as usize;
        }
        pos += 8;
    }
    while let Some(&b) = bytes.get(pos) {
        if !keep(b) {
            break;
        }
        pos += 1;
    }
    pos
}

/// A string the scanner has read, quotes included, decoded as serde_json decodes a `String`: an
/// escaped surrogate must be a leading one with a trailing one escaped right after it; `None` if
/// not.
pub(crate) fn decode(quoted: &str) -> Option<String> {
    let inner = quoted.get(1..quoted.len().checked_sub(1)?)?;
    let bytes = inner.as_bytes();
    let mut out = String::with_capacity(inner.len());
    let mut from = 0;
    while let Some(at) = bytes[from..].iter().position(|&b| b == b'\\') {
        let escape = from + at;
        out.push_str(&inner[from..escape]);
        from = escape + 2;
        let c = match *bytes.get(escape + 1)? {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let unit = hex4(bytes.get(escape + 2..escape + 6)?)?;
                from = escape + 6;
                match unit {
                    0xD800..=0xDBFF => {
                        if bytes.get(from..from + 2) != Some(b"\\u") {
                            return None;
                        }
                        let low = hex4(bytes.get(from + 2..from + 6)?)?;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return None;
                        }
                        from += 6;
                        char::from_u32(0x1_0000 + ((unit - 0xD800) << 10) + (low - 0xDC00))?
                    }
                    _ => char::from_u32(unit)?,
                }
            }
            _ => return None,
        };
        out.push(c);
    }
    out.push_str(&inner[from..]);
    Some(out)
}

fn hex4(digits: &[u8]) -> Option<u32> {
    digits
        .iter()
        .try_fold(0, |n, &d| Some(n << 4 | char::from(d).to_digit(16)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn xorshift(seed: &mut u64) -> u64 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    }

    /// The lowest stop the eight-byte test finds is the first byte the one-byte test stops at.
    fn lowest_stop_is_exact(x: u64, stops: fn(u64) -> u64, keep: fn(u8) -> bool) {
        let first = x.to_le_bytes().iter().position(|&b| !keep(b));
        let found = stops(x);
        let lowest = (found != 0).then(|| found.trailing_zeros() as usize / 8);
        assert_eq!(lowest, first, "{:016x}", x);
    }

    #[test]
    fn the_eight_byte_tests_find_the_first_stop() {
        let in_string: fn(u8) -> bool = |b| b != b'"' && b != b'\\' && b >= 0x20;
        let digit: fn(u8) -> bool = |b| b.is_ascii_digit();
        // Every byte at every place, after bytes that pass and before any bytes at all.
        for place in 0..8 {
            for b in 0..=255u8 {
                for (before, after) in [(b'a', 0xffu8), (b'7', 0x00), (0xe9, b'"'), (b'5', b'\\')] {
                    let mut word = [before; 8];
                    word[place] = b;
                    word[place + 1..].fill(after);
                    let x = u64::from_le_bytes(word);
                    lowest_stop_is_exact(x, string_stops, in_string);
                    lowest_stop_is_exact(x, digit_stops, digit);
                }
            }
        }
        // Random words, and words of bytes near the edges of both tests.
        let edges = [
            0x00, 0x1f, 0x20, 0x21, 0x22, 0x23, 0x2f, 0x30, 0x39, 0x3a, 0x5b, 0x5c, 0x5d,
        ];
        let edges: Vec<u8> = edges
            .into_iter()
            .chain([0x7f, 0x80, 0xa0, 0xaf, 0xb0, 0xb9, 0xba, 0xff])
            .collect();
        let mut seed = 0x1234_5678_9abc_def1;
        for _ in 0..200_000 {
            let r = xorshift(&mut seed);
            lowest_stop_is_exact(r, string_stops, in_string);
            lowest_stop_is_exact(r, digit_stops, digit);
            let word: [u8; 8] =
                std::array::from_fn(|i| edges[(r >> (i * 5)) as usize % edges.len()]);
            let x = u64::from_le_bytes(word);
            lowest_stop_is_exact(x, string_stops, in_string);
            lowest_stop_is_exact(x, digit_stops, digit);
        }
    }

    #[test]
    fn strings_decode_as_serde_json_decodes_them() {
        let pieces = [
            "a",
            "é",
            "😀",
            "\\\"",
            "\\\\",
            "\\/",
            "\\b",
            "\\f",
            "\\n",
            "\\r",
            "\\t",
            "\\u0000",
            "\\u00e9",
            "\\u00E9",
            "\\uFFFF",
            "\\ud83d\\ude00",
            "\\uD83D\\uDE00",
            "\\udbff\\udfff",
            "\\ud800",
            "\\udc00",
            "\\udfff",
            "\\ud800\\u0041",
            "\\ud800\\ud800",
            "\\ud800\\n",
            "x",
        ];
        let mut seed = 0x0bad_cafe_f00d_d00d;
        for _ in 0..20_000 {
            let mut text = String::from("\"");
            for _ in 0..xorshift(&mut seed) % 5 {
                text.push_str(pieces[xorshift(&mut seed) as usize % pieces.len()]);
            }
            text.push('"');
            let serde = serde_json::from_str::<String>(&text).ok();
            assert_eq!(decode(&text), serde, "{text}");
            let mut s = Scanner::new(&text);
            assert_eq!(s.value(false), Ok(()), "{text}");
        }
    }
}
