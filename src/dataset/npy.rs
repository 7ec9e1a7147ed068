//! The `.npy` (format 1.0) header of a 1-D little-endian integer array.
//!
//! The header has a fixed size ([`HEADER_LEN`]) whatever the length, so a writer
//! can stream the data after a placeholder header and patch the length at the end.

/// Bytes before the data: magic, version, header length, padded dict.
pub const HEADER_LEN: usize = 128;

/// The header of a 1-D array of `len` items of `descr` ("<u2" or "<u4").
pub fn header(descr: &str, len: u64) -> Vec<u8> {
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({len},), }}");
    let mut out = Vec::with_capacity(HEADER_LEN);
    out.extend_from_slice(b"\x93NUMPY\x01\x00");
    let text_len = HEADER_LEN - 10;
    out.extend_from_slice(&(text_len as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.resize(HEADER_LEN - 1, b' ');
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_size_and_aligned() {
        for n in [0u64, 7, u64::MAX] {
            let h = header("<u4", n);
            assert_eq!(h.len(), HEADER_LEN);
            assert_eq!(h.len() % 64, 0);
            assert_eq!(h[HEADER_LEN - 1], b'\n');
            let text = String::from_utf8_lossy(&h[10..]);
            assert!(text.contains(&format!("({n},)")), "{text}");
        }
    }
}
