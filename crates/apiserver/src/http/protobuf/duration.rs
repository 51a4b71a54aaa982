//! Go's `time.Duration` strings (`1h30m0s`, `1.5s`, `300ms`), the JSON form of a
//! `meta.v1.Duration`, whose protobuf form is nanoseconds.

/// Go's `Duration.String()` of `ns` nanoseconds.
pub fn format(ns: i64) -> String {
    if ns == 0 {
        return "0s".into();
    }
    let neg = ns < 0;
    let u = ns.unsigned_abs();
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if u < 1_000_000_000 {
        // Below a second: the largest unit of ns, µs and ms that is at most the value.
        let (unit, scale) = match u {
            0..1_000 => ("ns", 1),
            1_000..1_000_000 => ("µs", 1_000),
            _ => ("ms", 1_000_000),
        };
        out.push_str(&fraction(u, scale));
        out.push_str(unit);
        return out;
    }
    let hours = u / 3_600_000_000_000;
    let rest = u % 3_600_000_000_000;
    let minutes = rest / 60_000_000_000;
    let secs = rest % 60_000_000_000;
    if hours > 0 {
        out.push_str(&format!("{hours}h"));
    }
    if hours > 0 || minutes > 0 {
        out.push_str(&format!("{minutes}m"));
    }
    out.push_str(&fraction(secs, 1_000_000_000));
    out.push('s');
    out
}

/// `v / scale` with the fraction's trailing zeros trimmed.
fn fraction(v: u64, scale: u64) -> String {
    let whole = v / scale;
    let frac = v % scale;
    if frac == 0 {
        return whole.to_string();
    }
    let digits = scale.ilog10() as usize;
    let f = format!("{frac:0digits$}");
    format!("{whole}.{}", f.trim_end_matches('0'))
}

/// Parses a Go duration string into nanoseconds (`None` when it is not one).
pub fn parse(s: &str) -> Option<i64> {
    let (neg, mut rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..num_len].parse().ok()?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        rest = &rest[unit_len..];
        total += number * scale;
    }
    let ns = total.round() as i64;
    Some(if neg { -ns } else { ns })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_and_parses_as_go_does() {
        for (ns, text) in [
            (0, "0s"),
            (1, "1ns"),
            (1_500, "1.5µs"),
            (300_000_000, "300ms"),
            (1_500_000_000, "1.5s"),
            (90_000_000_000, "1m30s"),
            (3_600_000_000_000, "1h0m0s"),
            (5_400_000_000_000, "1h30m0s"),
            (-2_000_000_000, "-2s"),
        ] {
            assert_eq!(format(ns), text);
            assert_eq!(parse(text), Some(ns), "{text}");
        }
        assert_eq!(parse("1h30m"), Some(5_400_000_000_000));
        assert_eq!(parse("2x"), None);
        assert_eq!(parse(""), None);
    }
}
