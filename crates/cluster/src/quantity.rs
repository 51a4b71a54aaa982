//! Resource quantities (`100m`, `1.5`, `128Mi`, `1e3`), read as numbers: CPU in millicores,
//! memory and the rest in units, as the scheduler compares requests with allocatable.

/// The value of a quantity in thousandths of its unit (`100m` -> 100, `2` -> 2000,
/// `1Ki` -> 1_024_000), or `None` when it does not parse.
pub(crate) fn milli(q: &str) -> Option<i128> {
    let q = q.trim();
    let split = q
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(q.len());
    let (number, suffix) = q.split_at(split);
    let value: f64 = number.parse().ok()?;
    let scale: f64 = match suffix {
        "" => 1.0,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024.0,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        s if s.starts_with(['e', 'E']) => 10f64.powi(s[1..].parse().ok()?),
        _ => return None,
    };
    // Rounded up, as a quantity's MilliValue is.
    Some((value * scale * 1000.0).ceil() as i128)
}

#[cfg(test)]
mod tests {
    use super::milli;

    #[test]
    fn quantities_read_as_thousandths() {
        assert_eq!(milli("100m"), Some(100));
        assert_eq!(milli("2"), Some(2000));
        assert_eq!(milli("0.5"), Some(500));
        assert_eq!(milli("1Ki"), Some(1_024_000));
        assert_eq!(milli("128Mi"), Some(128 * 1024 * 1024 * 1000));
        assert_eq!(milli("1G"), Some(1_000_000_000_000));
        assert_eq!(milli("1e3"), Some(1_000_000));
        assert_eq!(milli("x"), None);
        assert_eq!(milli("1Q"), None);
    }
}
