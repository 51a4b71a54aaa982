//! Random identifiers in UUID form: object uids, admission request uids, audit ids. A leaf:
//! any module may use it.

/// A new random (version 4) UUID in its text form (`8-4-4-4-12` lowercase hex digits).
pub(crate) fn new_uid() -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut b: [u8; 16] = rand::random();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let mut out = String::with_capacity(36);
    for (i, x) in b.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out.push('-');
        }
        out.push(HEX[usize::from(x >> 4)] as char);
        out.push(HEX[usize::from(x & 0xf)] as char);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn uids_are_version_4_uuids() {
        let a = super::new_uid();
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
        assert!(matches!(&a[19..20], "8" | "9" | "a" | "b"));
        assert_ne!(a, super::new_uid());
    }
}
