//! Data the tests of this crate and of the crates above it share (built
//! only for tests and with the `test-support` feature).

/// `sh -c script`, not started.
pub fn sh(script: &str) -> tokio::process::Command {
    let mut c = tokio::process::Command::new("sh");
    c.arg("-c").arg(script);
    c
}

/// Bytes that exercise every decoder path: ASCII, 2–4 byte chars,
/// stray continuation bytes, truncated sequences, overlongs.
pub fn mixed(n: usize, seed: u64) -> Vec<u8> {
    let pieces: [&[u8]; 9] = [
        b"line 1\n",
        "é".as_bytes(),
        "日本".as_bytes(),
        "🦀".as_bytes(),
        b"\xff",
        b"\x80\x80",
        b"\xe6\x97",
        b"\xf0\x9f\xa6",
        b"\xc0\xaf",
    ];
    let mut x = seed;
    let mut out = Vec::new();
    while out.len() < n {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        out.extend_from_slice(pieces[(x >> 33) as usize % pieces.len()]);
    }
    out
}
