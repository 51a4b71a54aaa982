//! Assignment by consistent hashing: rendezvous (highest random weight) hashing.
//!
//! Every object goes to the member whose hash of `(member, object)` scores highest. The
//! choice is balanced (each member wins about `1/n` of the objects), needs no shared state
//! (any replica computes the same answer from the same member list) and moves few objects: when
//! a member leaves, only its objects move, spread over the others; when one joins, it takes
//! about `1/(n+1)` of the objects, from every other member alike, and nothing else moves.
//!
//! The hash is fixed (FNV-1a, then a 64-bit finaliser), not seeded per process: replicas of
//! different builds and runs agree.

use crate::ObjectKey;

/// FNV-1a over `bytes`, continuing from `hash`.
fn fnv1a(mut hash: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// splitmix64's finaliser: spreads FNV's low-entropy high bits over the whole word.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// The hash of an object's key: namespace and name, separated so that `a/bc` and `ab/c`
/// differ.
fn key_hash(key: &ObjectKey) -> u64 {
    let h = fnv1a(
        FNV_OFFSET,
        key.namespace.as_deref().unwrap_or("").as_bytes(),
    );
    fnv1a(fnv1a(h, b"/"), key.name.as_bytes())
}

/// The member of `members` that `key` is assigned to (rendezvous hashing), or `None` when
/// there is none. The order of `members` does not matter; ties (equal scores) go to the
/// smaller name.
///
/// ```
/// use controller_runtime::ObjectKey;
/// use controller_runtime::sharding::assign;
///
/// let members = ["replica-a", "replica-b", "replica-c"];
/// let key = ObjectKey::new("default", "my-object");
/// let owner = assign(&key, &members).unwrap();
/// // Without another member, the object stays where it is.
/// let others: Vec<&str> = members.iter().copied().filter(|m| *m == owner || *m == "replica-a").collect();
/// assert_eq!(assign(&key, &others), Some(owner));
/// assert_eq!(assign(&key, &[] as &[&str]), None);
/// ```
pub fn assign<'m, S: AsRef<str>>(key: &ObjectKey, members: &'m [S]) -> Option<&'m str> {
    let object = key_hash(key);
    members.iter().map(AsRef::as_ref).max_by(|a, b| {
        let (sa, sb) = (score(object, a), score(object, b));
        sa.cmp(&sb).then_with(|| b.cmp(a))
    })
}

/// The weight of `member` for an object hashed to `object`.
fn score(object: u64, member: &str) -> u64 {
    mix(fnv1a(FNV_OFFSET, member.as_bytes()) ^ mix(object))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(n: usize) -> Vec<ObjectKey> {
        (0..n)
            .map(|i| ObjectKey::new("ns", format!("object-{i}")))
            .collect()
    }

    #[test]
    fn balanced_across_members() {
        let members = ["a", "b", "c"];
        let mut counts = [0usize; 3];
        for key in keys(30_000) {
            let m = assign(&key, &members).unwrap();
            counts[members.iter().position(|x| *x == m).unwrap()] += 1;
        }
        for c in counts {
            assert!((9_000..=11_000).contains(&c), "unbalanced: {counts:?}");
        }
    }

    #[test]
    fn a_leaving_member_moves_only_its_objects() {
        let all = ["a", "b", "c"];
        let without_c = ["a", "b"];
        for key in keys(5_000) {
            let before = assign(&key, &all).unwrap();
            let after = assign(&key, &without_c).unwrap();
            if before != "c" {
                assert_eq!(before, after, "{key} moved though its member stayed");
            }
        }
    }

    #[test]
    fn a_joining_member_takes_its_share_and_nothing_else_moves() {
        let before = ["a", "b", "c"];
        let after = ["a", "b", "c", "d"];
        let mut moved = 0;
        for key in keys(8_000) {
            let (x, y) = (
                assign(&key, &before).unwrap(),
                assign(&key, &after).unwrap(),
            );
            if x != y {
                assert_eq!(y, "d", "{key} moved between old members");
                moved += 1;
            }
        }
        assert!((1_600..=2_400).contains(&moved), "d took {moved} of 8000");
    }

    #[test]
    fn order_of_members_does_not_matter() {
        for key in keys(500) {
            assert_eq!(
                assign(&key, &["x", "y", "z"]),
                assign(&key, &["z", "x", "y"])
            );
        }
    }
}
