//! Resource quantities (`resource.Quantity`): enough of apimachinery's parser to compare a
//! container's requests with its limits, and its canonical printing (`Quantity.String()`,
//! `"1536Mi"`, `"500m"`, `"1k"`) that upstream's messages show.
//!
//! Values are kept exactly, in nano-units; a quantity too large for that (beyond about 10^29)
//! is treated as unparseable, and its checks are skipped rather than answered wrongly.

use std::cmp::Ordering;

/// How a quantity was written, which decides how it prints back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    /// `k`, `M`, `m`, no suffix...
    DecimalSi,
    /// `Ki`, `Mi`...
    BinarySi,
    /// `1e3`.
    DecimalExponent,
}

/// A parsed quantity.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Quantity {
    /// The value times 10^9.
    nanos: i128,
    format: Format,
}

const NANO: i128 = 1_000_000_000;

impl Quantity {
    /// Parses `s` as apimachinery's `ParseQuantity` does; `None` when it is not a quantity.
    pub(crate) fn parse(s: &str) -> Option<Quantity> {
        let b = s.as_bytes();
        let mut i = 0;
        let negative = match b.first() {
            Some(b'-') => {
                i = 1;
                true
            }
            Some(b'+') => {
                i = 1;
                false
            }
            _ => false,
        };
        let mut digits: i128 = 0;
        let mut frac_len: u32 = 0;
        let mut seen_digit = false;
        let mut seen_dot = false;
        while i < b.len() {
            match b[i] {
                c @ b'0'..=b'9' => {
                    digits = digits.checked_mul(10)?.checked_add(i128::from(c - b'0'))?;
                    seen_digit = true;
                    if seen_dot {
                        frac_len += 1;
                    }
                }
                b'.' if !seen_dot => seen_dot = true,
                _ => break,
            }
            i += 1;
        }
        if !seen_digit {
            return None;
        }
        let suffix = &s[i..];
        // (multiplier as a power of ten, or of 1024), format
        let (ten_exp, two_exp, format): (i32, u32, Format) = match suffix {
            "" => (0, 0, Format::DecimalSi),
            "n" => (-9, 0, Format::DecimalSi),
            "u" => (-6, 0, Format::DecimalSi),
            "m" => (-3, 0, Format::DecimalSi),
            "k" => (3, 0, Format::DecimalSi),
            "M" => (6, 0, Format::DecimalSi),
            "G" => (9, 0, Format::DecimalSi),
            "T" => (12, 0, Format::DecimalSi),
            "P" => (15, 0, Format::DecimalSi),
            "E" => (18, 0, Format::DecimalSi),
            "Ki" => (0, 10, Format::BinarySi),
            "Mi" => (0, 20, Format::BinarySi),
            "Gi" => (0, 30, Format::BinarySi),
            "Ti" => (0, 40, Format::BinarySi),
            "Pi" => (0, 50, Format::BinarySi),
            "Ei" => (0, 60, Format::BinarySi),
            e if e.len() > 1 && (e.starts_with('e') || e.starts_with('E')) => {
                let exp: i32 = e[1..].parse().ok()?;
                if !(-30..=30).contains(&exp) {
                    return None;
                }
                (exp, 0, Format::DecimalExponent)
            }
            _ => return None,
        };
        // value = digits * 10^-frac_len * 10^ten_exp * 2^two_exp; in nanos, times 10^9.
        let mut num = digits.checked_mul(1i128 << two_exp)?;
        let exp10 = ten_exp + 9 - frac_len as i32;
        if exp10 >= 0 {
            num = num.checked_mul(10i128.checked_pow(exp10 as u32)?)?;
        } else {
            // Below a nano-unit: upstream rounds up to the nearest nano.
            let div = 10i128.checked_pow((-exp10) as u32)?;
            num = num / div + i128::from(num % div != 0);
        }
        Some(Quantity {
            nanos: if negative { -num } else { num },
            format,
        })
    }

    /// The value in nano-units (the value times 10^9), exactly.
    pub(crate) fn nanos(&self) -> i128 {
        self.nanos
    }

    /// The integer `n` in the decimal format (`resource.NewQuantity(n, DecimalSI)`).
    pub(crate) fn from_int(n: i64) -> Quantity {
        Quantity {
            nanos: i128::from(n) * NANO,
            format: Format::DecimalSi,
        }
    }

    /// `self + other` in `self`'s format, or `other`'s when `self` is zero (`Quantity.Add`).
    pub(crate) fn add(&self, other: &Quantity) -> Quantity {
        Quantity {
            nanos: self.nanos.saturating_add(other.nanos),
            format: if self.nanos == 0 {
                other.format
            } else {
                self.format
            },
        }
    }

    /// `self - other`, formatted as [`Quantity::add`] formats (`Quantity.Sub`).
    pub(crate) fn sub(&self, other: &Quantity) -> Quantity {
        self.add(&Quantity {
            nanos: -other.nanos,
            format: other.format,
        })
    }

    /// The value rounded up to a whole unit (`Quantity.RoundUp(0)`).
    pub(crate) fn round_up(&self) -> Quantity {
        let rem = self.nanos.rem_euclid(NANO);
        Quantity {
            nanos: if rem == 0 {
                self.nanos
            } else {
                self.nanos - rem + NANO
            },
            format: self.format,
        }
    }

    /// Whether the value is zero.
    pub(crate) fn is_zero(&self) -> bool {
        self.nanos == 0
    }

    /// Whether the value is below zero.
    pub(crate) fn is_negative(&self) -> bool {
        self.nanos < 0
    }

    /// Compares the values.
    pub(crate) fn cmp_value(&self, other: &Quantity) -> Ordering {
        self.nanos.cmp(&other.nanos)
    }

    /// The canonical form, as `Quantity.String()` prints it.
    pub(crate) fn canonical(&self) -> String {
        if self.nanos == 0 {
            return "0".into();
        }
        let format = match self.format {
            Format::BinarySi if self.nanos.abs() < 1024 * NANO || self.nanos % NANO != 0 => {
                Format::DecimalSi
            }
            f => f,
        };
        if format == Format::BinarySi {
            let mut whole = self.nanos / NANO;
            let mut k = 0;
            while k < 6 && whole % 1024 == 0 {
                whole /= 1024;
                k += 1;
            }
            let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][k];
            return format!("{whole}{suffix}");
        }
        // The largest multiple-of-3 exponent (from -9 to 18) that leaves an integer mantissa.
        let mut exp = -9i32;
        let mut mantissa = self.nanos;
        while exp < 18 && mantissa % 1000 == 0 {
            mantissa /= 1000;
            exp += 3;
        }
        if format == Format::DecimalExponent {
            if exp == 0 {
                return format!("{mantissa}");
            }
            return format!("{mantissa}e{exp}");
        }
        let suffix = match exp {
            -9 => "n",
            -6 => "u",
            -3 => "m",
            0 => "",
            3 => "k",
            6 => "M",
            9 => "G",
            12 => "T",
            15 => "P",
            _ => "E",
        };
        format!("{mantissa}{suffix}")
    }
}

#[cfg(test)]
mod tests {
    use super::Quantity;

    fn canon(s: &str) -> String {
        Quantity::parse(s).unwrap().canonical()
    }

    #[test]
    fn canonical_forms_match_upstream() {
        assert_eq!(canon("2"), "2");
        assert_eq!(canon("1000m"), "1");
        assert_eq!(canon("0.5"), "500m");
        assert_eq!(canon("1000"), "1k");
        assert_eq!(canon("1500"), "1500");
        assert_eq!(canon("1Gi"), "1Gi");
        assert_eq!(canon("1024Mi"), "1Gi");
        assert_eq!(canon("1.5Gi"), "1536Mi");
        assert_eq!(canon("512"), "512");
        assert_eq!(canon("0.5Ki"), "512");
        assert_eq!(canon("-1"), "-1");
        assert_eq!(canon("1e3"), "1e3");
        assert_eq!(canon("0"), "0");
        assert!(Quantity::parse("abc").is_none());
        assert!(Quantity::parse("1x").is_none());
    }

    #[test]
    fn compares_values_across_formats() {
        let a = Quantity::parse("1Gi").unwrap();
        let b = Quantity::parse("1073741824").unwrap();
        assert!(a.cmp_value(&b).is_eq());
        assert!(
            Quantity::parse("500m")
                .unwrap()
                .cmp_value(&Quantity::parse("1").unwrap())
                .is_lt()
        );
        assert!(Quantity::parse("-1").unwrap().is_negative());
    }

    #[test]
    fn arithmetic_keeps_the_format_of_the_receiver() {
        let q = |s| Quantity::parse(s).unwrap();
        assert_eq!(q("1Gi").add(&q("512Mi")).canonical(), "1536Mi");
        assert_eq!(q("0").add(&q("512Mi")).canonical(), "512Mi");
        assert_eq!(q("500m").add(&q("1Gi")).canonical(), "1073741824500m");
        assert_eq!(q("2").sub(&q("500m")).canonical(), "1500m");
        assert_eq!(Quantity::from_int(3).canonical(), "3");
        assert_eq!(q("1500m").round_up().canonical(), "2");
        assert_eq!(q("2").round_up().canonical(), "2");
        assert!(q("1").sub(&q("1")).is_zero());
    }
}
