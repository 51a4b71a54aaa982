//! CronJob schedules as upstream checks them: `cron.ParseStandard` of robfig/cron v3 (five
//! fields, names for months and weekdays, `@hourly`-style descriptors, `@every <duration>`),
//! answering with that library's error text, which the API server shows as is.

/// The range of one field, and its names.
struct Bounds {
    min: u32,
    max: u32,
    names: &'static [(&'static str, u32)],
}

const MINUTES: Bounds = Bounds {
    min: 0,
    max: 59,
    names: &[],
};
const HOURS: Bounds = Bounds {
    min: 0,
    max: 23,
    names: &[],
};
const DOM: Bounds = Bounds {
    min: 1,
    max: 31,
    names: &[],
};
const MONTHS: Bounds = Bounds {
    min: 1,
    max: 12,
    names: &[
        ("jan", 1),
        ("feb", 2),
        ("mar", 3),
        ("apr", 4),
        ("may", 5),
        ("jun", 6),
        ("jul", 7),
        ("aug", 8),
        ("sep", 9),
        ("oct", 10),
        ("nov", 11),
        ("dec", 12),
    ],
};
const DOW: Bounds = Bounds {
    min: 0,
    max: 6,
    names: &[
        ("sun", 0),
        ("mon", 1),
        ("tue", 2),
        ("wed", 3),
        ("thu", 4),
        ("fri", 5),
        ("sat", 6),
    ],
};

/// Checks a schedule as `cron.ParseStandard`; `Err` holds the library's message.
pub(crate) fn parse_standard(spec: &str) -> Result<(), String> {
    if spec.is_empty() {
        return Err("empty spec string".into());
    }
    let mut spec = spec;
    if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
        // The location itself is looked up in the time zone database, which is not carried
        // here: any name is taken (the API server refuses TZ in schedules anyway).
        let Some(space) = spec.find(' ') else {
            return Err(format!("provided bad location {spec}"));
        };
        spec = spec[space..].trim();
    }
    if spec.starts_with('@') {
        return descriptor(spec);
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(format!(
            "expected exactly 5 fields, found {}: [{}]",
            fields.len(),
            fields.join(" ")
        ));
    }
    for (f, b) in fields.iter().zip([&MINUTES, &HOURS, &DOM, &MONTHS, &DOW]) {
        field(f, b)?;
    }
    Ok(())
}

/// A comma-separated list of ranges.
fn field(field: &str, b: &Bounds) -> Result<(), String> {
    for expr in field.split(',').filter(|e| !e.is_empty()) {
        range(expr, b)?;
    }
    Ok(())
}

/// `number | number "-" number [ "/" number ]`, or `*` / `?` with an optional step.
fn range(expr: &str, b: &Bounds) -> Result<(), String> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_and_high: Vec<&str> = range_and_step[0].split('-').collect();
    let single = low_and_high.len() == 1;
    let (start, mut end) = if low_and_high[0] == "*" || low_and_high[0] == "?" {
        (b.min, b.max)
    } else {
        let start = int_or_name(low_and_high[0], b)?;
        match low_and_high.len() {
            1 => (start, start),
            2 => (start, int_or_name(low_and_high[1], b)?),
            _ => return Err(format!("too many hyphens: {expr}")),
        }
    };
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            let step = parse_int(range_and_step[1])?;
            if single {
                end = b.max;
            }
            step
        }
        _ => return Err(format!("too many slashes: {expr}")),
    };
    if start < b.min {
        return Err(format!(
            "beginning of range ({start}) below minimum ({}): {expr}",
            b.min
        ));
    }
    if end > b.max {
        return Err(format!(
            "end of range ({end}) above maximum ({}): {expr}",
            b.max
        ));
    }
    if start > end {
        return Err(format!(
            "beginning of range ({start}) beyond end of range ({end}): {expr}"
        ));
    }
    if step == 0 {
        return Err(format!("step of range should be a positive number: {expr}"));
    }
    Ok(())
}

fn int_or_name(expr: &str, b: &Bounds) -> Result<u32, String> {
    let lower = expr.to_ascii_lowercase();
    if let Some((_, v)) = b.names.iter().find(|(n, _)| *n == lower) {
        return Ok(*v);
    }
    parse_int(expr)
}

/// `mustParseInt`: Go's `strconv.Atoi`, then a sign check.
fn parse_int(expr: &str) -> Result<u32, String> {
    let digits = expr.strip_prefix(['+', '-']).unwrap_or(expr);
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return Err(format!(
            "failed to parse int from {expr}: strconv.Atoi: parsing {expr:?}: invalid syntax"
        ));
    }
    let Ok(n) = expr.parse::<i64>() else {
        return Err(format!(
            "failed to parse int from {expr}: strconv.Atoi: parsing {expr:?}: value out of range"
        ));
    };
    if n < 0 {
        return Err(format!("negative number ({n}) not allowed: {expr}"));
    }
    Ok(u32::try_from(n).unwrap_or(u32::MAX))
}

fn descriptor(spec: &str) -> Result<(), String> {
    match spec {
        "@yearly" | "@annually" | "@monthly" | "@weekly" | "@daily" | "@midnight" | "@hourly" => {
            Ok(())
        }
        _ => match spec.strip_prefix("@every ") {
            Some(d) => duration(d).map_err(|e| format!("failed to parse duration {spec}: {e}")),
            None => Err(format!("unrecognized descriptor: {spec}")),
        },
    }
}

/// Go's `time.ParseDuration`, for its errors only.
pub(crate) fn duration(orig: &str) -> Result<(), String> {
    let invalid = || format!("time: invalid duration {orig:?}");
    let mut s = orig.strip_prefix(['+', '-']).unwrap_or(orig);
    if s == "0" {
        return Ok(());
    }
    if s.is_empty() {
        return Err(invalid());
    }
    while !s.is_empty() {
        let num_len = s
            .bytes()
            .take_while(|c| c.is_ascii_digit() || *c == b'.')
            .count();
        let num = &s[..num_len];
        if num.is_empty() || num == "." || num.matches('.').count() > 1 {
            return Err(invalid());
        }
        s = &s[num_len..];
        let unit_len = s
            .char_indices()
            .find(|(_, c)| c.is_ascii_digit() || *c == '.')
            .map_or(s.len(), |(i, _)| i);
        let unit = &s[..unit_len];
        if unit.is_empty() {
            return Err(format!("time: missing unit in duration {orig:?}"));
        }
        if !matches!(unit, "ns" | "us" | "µs" | "μs" | "ms" | "s" | "m" | "h") {
            return Err(format!("time: unknown unit {unit:?} in duration {orig:?}"));
        }
        s = &s[unit_len..];
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_standard;

    #[test]
    fn accepts_what_robfig_cron_accepts() {
        for ok in [
            "* * * * *",
            "*/5 * * * *",
            "0 3 * * mon-fri",
            "0 0 1 jan,jul *",
            "@hourly",
            "@every 1h30m",
            "0-30/10 1,2 * * ?",
        ] {
            assert_eq!(parse_standard(ok), Ok(()), "{ok}");
        }
    }

    #[test]
    fn words_errors_as_robfig_cron() {
        let err = |s| parse_standard(s).unwrap_err();
        assert_eq!(err("bad"), "expected exactly 5 fields, found 1: [bad]");
        assert_eq!(
            err("61 * * * *"),
            "end of range (61) above maximum (59): 61"
        );
        assert_eq!(
            err("* * 0 * *"),
            "beginning of range (0) below minimum (1): 0"
        );
        assert_eq!(
            err("x * * * *"),
            "failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax"
        );
        assert_eq!(
            err("5-1 * * * *"),
            "beginning of range (5) beyond end of range (1): 5-1"
        );
        assert_eq!(err("@often"), "unrecognized descriptor: @often");
        assert_eq!(
            err("@every 5x"),
            "failed to parse duration @every 5x: time: unknown unit \"x\" in duration \"5x\""
        );
    }
}
