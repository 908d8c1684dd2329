//! Deterministic input: a tiny PRNG ([`Rng`]) and a byte pattern ([`pattern`]) in which a lost,
//! repeated or reordered chunk shows. The same on every run, with no dependency.

/// A tiny deterministic PRNG, so "random" inputs are the same on every run and the tests need no
/// dependency. Two classic generators, chosen by the constructor; each gives the same sequence
/// for the same seed on every run (and the seed must not be 0).
#[derive(Debug, Clone)]
pub struct Rng {
    state: u64,
    star: bool,
}

impl Rng {
    /// Marsaglia's xorshift64 (shifts 13, 7, 17): the output is the state.
    pub fn xorshift64(seed: u64) -> Rng {
        Rng {
            state: seed,
            star: false,
        }
    }

    /// xorshift64* (shifts 12, 25, 27): the output is the state times `0x2545_f491_4f6c_dd1d`.
    pub fn xorshift64_star(seed: u64) -> Rng {
        Rng {
            state: seed,
            star: true,
        }
    }

    /// The next number of the sequence.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.state;
        if self.star {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            self.state = x;
            x.wrapping_mul(0x2545_f491_4f6c_dd1d)
        } else {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            self.state = x;
            x
        }
    }

    /// The next number of the sequence, reduced to `0..n` (`next_u64() % n`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// Byte `i` of the test pattern: 0, 1, ..., 250, 0, 1, ... (251 is prime, so the pattern does
/// not line up with any power-of-two buffer or chunk size).
pub fn pattern_byte(i: usize) -> u8 {
    (i % 251) as u8
}

/// The first `len` bytes of the test pattern ([`pattern_byte`]).
pub fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(pattern_byte).collect()
}
