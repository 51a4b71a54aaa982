//! The queues' hash maps: foldhash, hashbrown's own default hasher.
//!
//! A queue hashes its key on every add and done; with std's SipHash that was about a fifth of
//! an add+get+done cycle for a `Request`. foldhash is several times faster on short keys and
//! still seeded at random per map, so keys chosen by an attacker cannot be made to collide
//! without knowing the seed.

use std::collections::HashMap;

/// A `HashMap` with foldhash's per-map random seed.
pub(crate) type Map<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_keys_find_each_other() {
        let mut m: Map<(Option<String>, String), u32> = Map::default();
        m.insert((Some("default".into()), "name".into()), 1);
        m.insert((Some("default".into()), "other".into()), 2);
        assert_eq!(m.get(&(Some("default".into()), "name".into())), Some(&1));
        assert_eq!(m.len(), 2);
    }
}
