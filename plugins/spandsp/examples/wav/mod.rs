//! The examples' input and output files: WAV (16-bit mono PCM with a
//! 44-byte header) and the loss patterns `bench/quality/lab.py` writes.

/// The header and the samples of the WAV file at `p`.
pub fn read(p: &str) -> (Vec<u8>, Vec<i16>) {
    let b = std::fs::read(p).unwrap_or_else(|e| panic!("{p}: {e}"));
    assert!(b.len() >= 44, "{p}: not a 44-byte-header WAV file");
    let x = b[44..].chunks_exact(2).map(|c| i16::from_le_bytes([c[0], c[1]])).collect();
    (b[..44].to_vec(), x)
}

/// Writes `x` to `p` with the header `hdr` (of a file read by [`read`]), its
/// lengths set for `x`.
pub fn write(hdr: &[u8], p: &str, x: &[i16]) {
    let mut h = hdr[..44].to_vec();
    let n = (x.len() * 2) as u32;
    h[40..44].copy_from_slice(&n.to_le_bytes());
    h[4..8].copy_from_slice(&(n + 36).to_le_bytes());
    for s in x {
        h.extend(s.to_le_bytes());
    }
    std::fs::write(p, h).unwrap_or_else(|e| panic!("{p}: {e}"));
}

/// The loss patterns in `p`: one a line, a name, a space and the lost
/// packets' indexes separated by commas.
#[allow(dead_code)] // g722_loss reads no patterns
pub fn patterns(p: &str) -> Vec<(String, Vec<usize>)> {
    std::fs::read_to_string(p)
        .unwrap_or_else(|e| panic!("{p}: {e}"))
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(n, v)| (n.to_string(), v.split(',').filter_map(|x| x.trim().parse().ok()).collect()))
        .collect()
}
