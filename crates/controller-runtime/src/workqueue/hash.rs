//! The queues' hasher: std's randomly keyed SipHash, fed in one piece.
//!
//! A derived `Hash` of a key such as `Request` makes several small `write` calls (a discriminant,
//! the namespace, a separator, the name, a separator), and SipHash pays its buffering logic on
//! each. [`BufferedState`] collects the bytes of short keys in a stack buffer and hands them to
//! SipHash once in `finish`. SipHash consumes a byte stream, so the hash depends only on the
//! bytes written, as before; keys stay randomly keyed per map (no hash flooding).

use std::collections::HashMap;
use std::hash::{BuildHasher, DefaultHasher, Hasher, RandomState};

/// A `HashMap` with the buffered hasher.
pub(crate) type Map<K, V> = HashMap<K, V, BufferedState>;

/// Builds [`BufferedHasher`]s over a random SipHash key.
#[derive(Clone, Default, Debug)]
pub(crate) struct BufferedState(RandomState);

impl BuildHasher for BufferedState {
    type Hasher = BufferedHasher<DefaultHasher>;

    fn build_hasher(&self) -> Self::Hasher {
        BufferedHasher {
            inner: self.0.build_hasher(),
            buf: [0; BUF],
            len: 0,
        }
    }
}

const BUF: usize = 64;

/// Buffers up to 64 bytes before feeding the inner hasher.
pub(crate) struct BufferedHasher<H> {
    inner: H,
    buf: [u8; BUF],
    len: usize,
}

impl<H: Hasher + Clone> Hasher for BufferedHasher<H> {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let end = self.len + bytes.len();
        if end <= BUF {
            self.buf[self.len..end].copy_from_slice(bytes);
            self.len = end;
        } else {
            self.inner.write(&self.buf[..self.len]);
            self.len = 0;
            self.inner.write(bytes);
        }
    }

    #[inline]
    fn finish(&self) -> u64 {
        // `finish` takes `&self`: the buffered tail goes into a copy of the inner state
        // (a few words).
        let mut h = self.inner.clone();
        h.write(&self.buf[..self.len]);
        h.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::Hash;

    fn hash<T: Hash>(s: &BufferedState, t: &T) -> u64 {
        s.hash_one(t)
    }

    #[test]
    fn equal_keys_hash_equal_and_chunking_does_not_matter() {
        let s = BufferedState::default();
        let a = (Some("default".to_string()), "name".to_string());
        assert_eq!(hash(&s, &a), hash(&s, &a.clone()));
        assert_ne!(
            hash(&s, &a),
            hash(&s, &(Some("default".to_string()), "other".to_string()))
        );
        let long = "x".repeat(200);
        assert_eq!(hash(&s, &long), hash(&s, &long.clone()));
        // the same bytes written in different pieces hash the same
        let mut h1 = s.build_hasher();
        h1.write(b"abc");
        h1.write(&[7u8; 100]);
        let mut h2 = s.build_hasher();
        h2.write(b"ab");
        h2.write(b"c");
        h2.write(&[7u8; 100]);
        assert_eq!(h1.finish(), h2.finish());
    }
}
