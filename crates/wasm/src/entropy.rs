//! Entropy for rand (tungstenite's frame masks and handshake key) on wasm32-unknown-unknown, which
//! has no source of its own and imports nothing: the glue seeds the module once from Web Crypto
//! (`ctl_seed_entropy`), and getrandom's custom backend (.cargo/config.toml) draws from
//! xoshiro256** over that seed. rand's own generator is seeded from here in turn.

use std::cell::Cell;

thread_local! {
    /// xoshiro256** state; never all zero.
    static STATE: Cell<[u64; 4]> = const { Cell::new([0x9e37_79b9_7f4a_7c15, 1, 2, 3]) };
}

/// Mixes `seed` (the glue's random bytes) into the state.
pub fn seed(seed: &[u8]) {
    STATE.with(|state| {
        let mut words = state.get();
        for (i, chunk) in seed.chunks(8).enumerate() {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            words[i % 4] ^= u64::from_le_bytes(word);
        }
        if words == [0; 4] {
            words[0] = 1;
        }
        state.set(words);
    })
}

#[cfg(any(target_family = "wasm", test))]
fn next() -> u64 {
    STATE.with(|state| {
        let mut s = state.get();
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        state.set(s);
        result
    })
}

/// Fills `dest` from the generator.
#[cfg(any(target_family = "wasm", test))]
pub fn fill(dest: &mut [u8]) {
    for chunk in dest.chunks_mut(8) {
        let word = next().to_le_bytes();
        chunk.copy_from_slice(&word[..chunk.len()]);
    }
}

/// getrandom's custom backend.
///
/// # Safety
/// getrandom calls it with `dest` valid for writes of `len` bytes.
#[cfg(target_family = "wasm")]
#[no_mangle]
unsafe extern "Rust" fn __getrandom_v03_custom(
    dest: *mut u8,
    len: usize,
) -> Result<(), getrandom::Error> {
    // SAFETY: getrandom hands over a buffer of `len` writable bytes.
    fill(unsafe { std::slice::from_raw_parts_mut(dest, len) });
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_seed_changes_what_is_drawn() {
        let mut before = [0u8; 16];
        super::fill(&mut before);
        super::seed(&[7; 32]);
        let mut after = [0u8; 16];
        super::fill(&mut after);
        assert_ne!(before, after);
        assert_ne!(after, [0; 16]);
    }
}
