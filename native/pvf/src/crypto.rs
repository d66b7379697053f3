//! Ciphers, checksums and hashes of both container families (`moddesk.pvf.format.crypto`).

/// Classic block cipher key (spec §1.5).
pub const CLASSIC_KEY: u32 = 0x81A7_9011;
/// NKPI LCG multiplier and the two increments ("magics", spec §4.3).
pub const LCG_MULTIPLIER: u32 = 0x343FD;
pub const MAGIC_MAIN: u32 = 0x269EC3;
pub const MAGIC_POOL: u32 = 0x269EC9;

/// Classic file-name hash: djb2 over the raw name bytes with one extra ×33 (spec §1.3).
pub fn name_hash(name: &[u8]) -> u32 {
    let mut h: u32 = 0x1505;
    for &b in name {
        h = h.wrapping_mul(33).wrapping_add(b as u32);
    }
    h.wrapping_mul(33)
}

/// Standard CRC-32 continued from `seed` (pvfUtility's `CreateBuffKey`; spec §1.4).
pub fn crc32_seeded(data: &[u8], seed: u32) -> u32 {
    let mut hasher = crc32fast::Hasher::new_with_initial(seed);
    hasher.update(data);
    hasher.finalize()
}

/// Decrypt a classic block in place: each u32 `w` becomes `ror32(w ^ KEY ^ checksum, 6)`.
/// A tail of fewer than four bytes is left as is (callers pass 4-aligned blocks).
pub fn classic_decrypt_in_place(data: &mut [u8], checksum: u32) {
    let key = CLASSIC_KEY ^ checksum;
    for word in data.chunks_exact_mut(4) {
        let w = u32::from_le_bytes([word[0], word[1], word[2], word[3]]) ^ key;
        word.copy_from_slice(&w.rotate_right(6).to_le_bytes());
    }
}

/// The decrypted copy of a classic block.
pub fn classic_decrypt(data: &[u8], checksum: u32) -> Vec<u8> {
    let mut out = data.to_vec();
    classic_decrypt_in_place(&mut out, checksum);
    out
}

/// Seed of a standard-NKPI section key (four ASCII characters).
pub fn seed_ascii(key: &[u8; 4]) -> u32 {
    let k: Vec<u32> = key.iter().map(|&c| c as u32).collect();
    0x7682_6701u32.wrapping_mul(k[0]).wrapping_add(
        0x1C1u32.wrapping_mul(
            k[3].wrapping_add(0x1C1u32.wrapping_mul(k[2].wrapping_add(0x1C1 * k[1]))),
        ),
    )
}

/// Seed of a protected-NKPI / Paged110 section key (four UTF-16 units).
pub fn seed_wide(key: &[u8; 4]) -> u32 {
    let u: Vec<u32> = key.iter().map(|&c| c as u32).collect();
    0x339E_9711u32.wrapping_mul(u[0]).wrapping_add(
        0x393u32.wrapping_mul(
            u[3].wrapping_add(0x393u32.wrapping_mul(u[2].wrapping_add(0x393 * u[1]))),
        ),
    )
}

/// XOR `data` in place with the NKPI keystream of (`seed`, `magic`) (spec §4.3).
pub fn lcg_crypt_in_place(data: &mut [u8], seed: u32, magic: u32) {
    let mut x = seed;
    for block in data.chunks_mut(4) {
        x = LCG_MULTIPLIER.wrapping_mul(x).wrapping_add(magic);
        let t1 = x;
        x = LCG_MULTIPLIER.wrapping_mul(x).wrapping_add(magic);
        let word = ((t1 & 0xFFFF_0000) | (x >> 16)).to_le_bytes();
        for (b, k) in block.iter_mut().zip(word) {
            *b ^= k;
        }
    }
}

/// The XOR of `data` with the NKPI keystream.
pub fn lcg_crypt(data: &[u8], seed: u32, magic: u32) -> Vec<u8> {
    let mut out = data.to_vec();
    lcg_crypt_in_place(&mut out, seed, magic);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classic_cipher_round_trips() {
        let plain: Vec<u8> = (0..64u8).collect();
        let mut enc = Vec::new();
        for w in plain.chunks_exact(4) {
            let v = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
            enc.extend_from_slice(&(v.rotate_left(6) ^ CLASSIC_KEY ^ 7).to_le_bytes());
        }
        assert_eq!(classic_decrypt(&enc, 7), plain);
    }

    #[test]
    fn lcg_is_an_involution() {
        let data: Vec<u8> = (0..37u8).collect();
        assert_eq!(
            lcg_crypt(&lcg_crypt(&data, 99, MAGIC_MAIN), 99, MAGIC_MAIN),
            data
        );
    }

    #[test]
    fn crc_matches_zlib_convention() {
        // zlib.crc32(b"123456789", 0) == 0xCBF43926
        assert_eq!(crc32_seeded(b"123456789", 0), 0xCBF4_3926);
    }
}
