//! The `format` keyword: the formats of the OpenAPI format registry the real server checks
//! (`date`, `date-time`, `uuid`, `byte`, `ipv4`, ...), and range checks for `int32`/`int64`/
//! `float`/`double` numbers. Unknown formats, and formats that do not apply to a value's type,
//! accept everything, as upstream.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use base64::Engine;
use serde_json::Value;

/// Whether `v` satisfies `format`.
pub(crate) fn check_format(format: &str, v: &Value) -> bool {
    match v {
        Value::String(s) => check_string(format, s),
        Value::Number(n) => match format {
            "int32" => n.as_i64().is_some_and(|i| i32::try_from(i).is_ok()),
            "int64" => n.is_i64() || n.as_u64().is_some_and(|u| i64::try_from(u).is_ok()),
            "float" => n.as_f64().is_some_and(|f| f.abs() <= f32::MAX as f64),
            _ => true,
        },
        _ => true,
    }
}

fn check_string(format: &str, s: &str) -> bool {
    match format {
        "date" => is_date(s),
        "date-time" | "datetime" => is_date_time(s),
        "uuid" => is_uuid(s, None),
        "uuid3" => is_uuid(s, Some('3')),
        "uuid4" => is_uuid(s, Some('4')),
        "uuid5" => is_uuid(s, Some('5')),
        "byte" => base64::engine::general_purpose::STANDARD.decode(s).is_ok(),
        "ipv4" => s.parse::<Ipv4Addr>().is_ok(),
        "ipv6" => s.parse::<Ipv6Addr>().is_ok(),
        "cidr" => is_cidr(s),
        "hostname" => is_hostname(s),
        "email" => is_email(s),
        "uri" => is_uri(s),
        "duration" => is_duration(s),
        "mac" => is_mac(s),
        "hexcolor" => is_hexcolor(s),
        _ => true,
    }
}

fn digits(s: &str, n: usize) -> bool {
    s.len() == n && s.bytes().all(|b| b.is_ascii_digit())
}

fn is_date(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    matches!(parts.as_slice(), [y, m, d] if digits(y, 4) && digits(m, 2) && digits(d, 2))
        && chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok()
}

fn is_date_time(s: &str) -> bool {
    chrono::DateTime::parse_from_rfc3339(s).is_ok()
        || chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f").is_ok()
}

/// 32 hex digits, with the usual hyphens optional; `version` checks the version nibble.
fn is_uuid(s: &str, version: Option<char>) -> bool {
    let hex: String = if s.len() == 36 {
        let b = s.as_bytes();
        if [8, 13, 18, 23].iter().any(|&i| b[i] != b'-') {
            return false;
        }
        s.chars().filter(|&c| c != '-').collect()
    } else {
        s.to_string()
    };
    hex.len() == 32
        && hex.chars().all(|c| c.is_ascii_hexdigit())
        && version.is_none_or(|v| hex.chars().nth(12) == Some(v))
}

fn is_cidr(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else {
        return false;
    };
    let Ok(bits) = bits.parse::<u8>() else {
        return false;
    };
    match ip.parse::<IpAddr>() {
        Ok(IpAddr::V4(_)) => bits <= 32,
        Ok(IpAddr::V6(_)) => bits <= 128,
        Err(_) => false,
    }
}

fn is_hostname(s: &str) -> bool {
    let s = s.strip_suffix('.').unwrap_or(s);
    !s.is_empty()
        && s.len() <= 255
        && s.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.chars().all(|c| c.is_alphanumeric() || c == '-')
        })
}

fn is_email(s: &str) -> bool {
    let s = match (s.find('<'), s.strip_suffix('>')) {
        (Some(i), Some(inner)) => &inner[i + 1..],
        _ => s,
    };
    match s.rsplit_once('@') {
        Some((local, domain)) => {
            !local.is_empty() && !local.contains(char::is_whitespace) && is_hostname(domain)
        }
        None => false,
    }
}

fn is_uri(s: &str) -> bool {
    let Some((scheme, _)) = s.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        && !s.contains(char::is_whitespace)
}

/// Go's `time.ParseDuration` syntax: `[-+]?(\d+(\.\d*)?(ns|us|µs|ms|s|m|h))+`, or `0`.
fn is_duration(s: &str) -> bool {
    let s = s.strip_prefix(['-', '+']).unwrap_or(s);
    if s == "0" {
        return true;
    }
    let mut rest = s;
    if rest.is_empty() {
        return false;
    }
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(rest.len());
        let number = &rest[..num_len];
        if number.is_empty() || number == "." || number.matches('.').count() > 1 {
            return false;
        }
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        if !matches!(
            &rest[..unit_len],
            "ns" | "us" | "µs" | "μs" | "ms" | "s" | "m" | "h"
        ) {
            return false;
        }
        rest = &rest[unit_len..];
    }
    true
}

fn is_mac(s: &str) -> bool {
    for sep in [':', '-'] {
        let parts: Vec<&str> = s.split(sep).collect();
        if matches!(parts.len(), 6 | 8 | 20)
            && parts
                .iter()
                .all(|p| p.len() == 2 && p.chars().all(|c| c.is_ascii_hexdigit()))
        {
            return true;
        }
    }
    let parts: Vec<&str> = s.split('.').collect();
    matches!(parts.len(), 3 | 4 | 10)
        && parts
            .iter()
            .all(|p| p.len() == 4 && p.chars().all(|c| c.is_ascii_hexdigit()))
}

fn is_hexcolor(s: &str) -> bool {
    let h = s.strip_prefix('#').unwrap_or(s);
    matches!(h.len(), 3 | 6) && h.chars().all(|c| c.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn string_formats() {
        let cases = [
            ("date", "2024-02-29", true),
            ("date", "2023-02-29", false),
            ("date", "2024-2-1", false),
            ("date-time", "2024-01-02T03:04:05Z", true),
            ("date-time", "2024-01-02T03:04:05.123+02:00", true),
            ("date-time", "yesterday", false),
            ("uuid", "123e4567-e89b-12d3-a456-426614174000", true),
            ("uuid", "123e4567e89b12d3a456426614174000", true),
            ("uuid", "123e4567-e89b-12d3-a456", false),
            ("uuid4", "123e4567-e89b-42d3-a456-426614174000", true),
            ("uuid4", "123e4567-e89b-12d3-a456-426614174000", false),
            ("byte", "aGVsbG8=", true),
            ("byte", "not base64!", false),
            ("ipv4", "10.0.0.1", true),
            ("ipv4", "10.0.0.256", false),
            ("ipv6", "::1", true),
            ("ipv6", "10.0.0.1", false),
            ("cidr", "10.0.0.0/8", true),
            ("cidr", "10.0.0.0/33", false),
            ("hostname", "example.com", true),
            ("hostname", "-bad.com", false),
            ("email", "a@example.com", true),
            ("email", "nope", false),
            ("uri", "https://example.com/x", true),
            ("uri", "example", false),
            ("duration", "1h30m", true),
            ("duration", "1.5s", true),
            ("duration", "10", false),
            ("duration", "5 minutes", false),
            ("mac", "00:1a:2b:3c:4d:5e", true),
            ("mac", "00:1a:2b", false),
            ("hexcolor", "#fff", true),
            ("hexcolor", "#ggg", false),
            ("password", "anything", true),
            ("unknown-format", "anything", true),
        ];
        for (f, s, want) in cases {
            assert_eq!(check_format(f, &json!(s)), want, "{f} {s}");
        }
    }

    #[test]
    fn number_formats() {
        assert!(check_format("int32", &json!(2147483647)));
        assert!(!check_format("int32", &json!(2147483648_i64)));
        assert!(check_format("int64", &json!(-9)));
        assert!(!check_format("int64", &json!(u64::MAX)));
        assert!(check_format("double", &json!(1.5)));
        // A format for strings does not apply to numbers.
        assert!(check_format("date", &json!(3)));
    }
}
