//! The Kubernetes CEL libraries beyond the cel crate's standard library and extensions, as
//! `k8s.io/apiserver/pkg/cel/library` defines them for CRD rules and admission policies:
//!
//! - quantity: `quantity(s)`, `isQuantity(s)`, and on a quantity `sign()`, `isInteger()`,
//!   `asInteger()`, `asApproximateFloat()`, `add(q|int)`, `sub(q|int)`, `isLessThan(q)`,
//!   `isGreaterThan(q)`, `compareTo(q)`; `==` compares values (`1` equals `1000m`).
//! - url: `url(s)`, `isURL(s)`, and `getScheme()`, `getHost()`, `getHostname()`, `getPort()`,
//!   `getEscapedPath()`, `getQuery()`.
//! - ip: `ip(s)`, `isIP(s)`, `ip.isCanonical(s)`, and `family()`, `isUnspecified()`,
//!   `isLoopback()`, `isLinkLocalMulticast()`, `isLinkLocalUnicast()`, `isGlobalUnicast()`.
//! - cidr: `cidr(s)`, `isCIDR(s)`, and `containsIP(ip|s)`, `containsCIDR(cidr|s)`, `ip()`,
//!   `masked()`, `prefixLength()`.
//! - format: `format.named(name)` (an optional) and `format.dns1123Label()` and its kin;
//!   `<format>.validate(s)` is `optional.none()` when `s` is valid, else an optional of the
//!   list of error messages.
//! - regex: `s.find(re)`, `s.findAll(re[, limit])`.
//!
//! and, apart ([`add_k8s_lists`], the one library admission policies get too), the list
//! library: `isSorted()`, `sum()`, `min()`, `max()` (its `indexOf`/`lastIndexOf` are
//! declared in the parse environment).
//!
//! Values are the cel crate's opaque values; a string that does not parse is an evaluation
//! error worded as upstream's (the rule then fails with `... evaluating rule: ...`).

use std::cmp::Ordering;
use std::net::IpAddr;
use std::sync::Arc;

use cel::extractors::This;
use cel::objects::{Key, Map as CelMap, Opaque, OptionalValue};
use cel::{Context, ExecutionError, FunctionContext, Value as Cel};

/// Adds every library of this module to `ctx`, and the `format` variable.
pub(crate) fn register(ctx: &mut Context<'_, '_>) {
    for (name, f) in FUNCTIONS {
        let f = *f;
        let _ = ctx.add_function(
            name,
            move |ftx: &FunctionContext| -> Result<Cel, ExecutionError> {
                let this = match &ftx.this {
                    Some(t) => Some(Cel::try_from(t.as_ref())?),
                    None => None,
                };
                let args = ftx
                    .args
                    .iter()
                    .map(|a| Cel::try_from(a.as_ref()))
                    .collect::<Result<Vec<_>, _>>()?;
                f(this, args)
            },
        );
    }
    ctx.add_variable_from_value("format", Cel::Opaque(Arc::new(FormatLib)));
}

/// The least (`Less`) or greatest (`Greater`) element of a list; an error when empty.
fn extreme(l: &[Cel], keep: std::cmp::Ordering) -> Result<Cel, ExecutionError> {
    let mut best = l
        .first()
        .ok_or_else(|| ExecutionError::function_error("min/max", "list is empty"))?;
    for x in &l[1..] {
        match x.partial_cmp(best) {
            Some(o) if o == keep => best = x,
            Some(_) => {}
            None => {
                return Err(ExecutionError::ValuesNotComparable(x.clone(), best.clone()));
            }
        }
    }
    Ok(best.clone())
}

/// Kubernetes' list library: `isSorted`, `sum`, `min`, `max` on lists.
pub(crate) fn add_k8s_lists(ctx: &mut Context<'_, '_>) {
    let _ = ctx.add_function("min", |This(l): This<Arc<Vec<Cel>>>| {
        extreme(&l, std::cmp::Ordering::Less)
    });
    let _ = ctx.add_function("max", |This(l): This<Arc<Vec<Cel>>>| {
        extreme(&l, std::cmp::Ordering::Greater)
    });
    let _ = ctx.add_function("isSorted", |This(l): This<Arc<Vec<Cel>>>| {
        l.windows(2)
            .all(|w| w[0].partial_cmp(&w[1]) != Some(std::cmp::Ordering::Greater))
    });
    let _ = ctx.add_function("sum", |This(l): This<Arc<Vec<Cel>>>| -> Cel {
        let mut int = 0i64;
        let mut float = 0f64;
        let mut any_float = false;
        for x in l.iter() {
            match x {
                Cel::Int(i) => int = int.wrapping_add(*i),
                Cel::UInt(u) => int = int.wrapping_add(*u as i64),
                Cel::Float(f) => {
                    any_float = true;
                    float += f
                }
                _ => {}
            }
        }
        if any_float {
            Cel::Float(float + int as f64)
        } else {
            Cel::Int(int)
        }
    });
}

/// A library function: the receiver (for `x.f(...)`) and the arguments.
type LibFn = fn(Option<Cel>, Vec<Cel>) -> Result<Cel, ExecutionError>;

const FUNCTIONS: &[(&str, LibFn)] = &[
    ("quantity", |_, a| {
        one_str(&a, "quantity").and_then(parse_quantity).map(q)
    }),
    ("isQuantity", |_, a| {
        Ok(Cel::Bool(
            one_str(&a, "isQuantity").and_then(parse_quantity).is_ok(),
        ))
    }),
    ("sign", |t, _| Ok(Cel::Int(as_quantity(&t, "sign")?.sign()))),
    ("isInteger", |t, _| {
        Ok(Cel::Bool(as_quantity(&t, "isInteger")?.as_i64().is_some()))
    }),
    ("asInteger", |t, _| {
        as_quantity(&t, "asInteger")?
            .as_i64()
            .map(Cel::Int)
            .ok_or_else(|| {
                ExecutionError::function_error("asInteger", "cannot convert value to integer")
            })
    }),
    ("asApproximateFloat", |t, _| {
        Ok(Cel::Float(as_quantity(&t, "asApproximateFloat")?.to_f64()))
    }),
    ("add", |t, a| arith(&t, &a, "add", false)),
    ("sub", |t, a| arith(&t, &a, "sub", true)),
    ("isLessThan", |t, a| {
        Ok(Cel::Bool(compare(&t, &a, "isLessThan")? == Ordering::Less))
    }),
    ("isGreaterThan", |t, a| {
        Ok(Cel::Bool(
            compare(&t, &a, "isGreaterThan")? == Ordering::Greater,
        ))
    }),
    ("compareTo", |t, a| {
        Ok(Cel::Int(compare(&t, &a, "compareTo")? as i64))
    }),
    ("url", |_, a| {
        one_str(&a, "url")
            .and_then(parse_url)
            .map(|u| Cel::Opaque(Arc::new(u)))
    }),
    ("isURL", |_, a| {
        Ok(Cel::Bool(one_str(&a, "isURL").and_then(parse_url).is_ok()))
    }),
    ("getScheme", |t, _| Ok(s(&as_url(&t, "getScheme")?.scheme))),
    ("getHost", |t, _| Ok(s(&as_url(&t, "getHost")?.host))),
    ("getHostname", |t, _| {
        Ok(s(as_url(&t, "getHostname")?.hostname()))
    }),
    ("getPort", |t, _| Ok(s(as_url(&t, "getPort")?.port()))),
    ("getEscapedPath", |t, _| {
        Ok(s(&as_url(&t, "getEscapedPath")?.path))
    }),
    ("getQuery", |t, _| Ok(as_url(&t, "getQuery")?.query_map())),
    ("ip", |t, a| match &t {
        Some(Cel::Opaque(o)) => match o.downcast_ref::<Cidr>() {
            Some(c) => Ok(ip(c.addr)),
            None => Err(ExecutionError::function_error("ip", "not a cidr")),
        },
        _ => one_str(&a, "ip").and_then(parse_ip).map(ip),
    }),
    ("isIP", |_, a| {
        Ok(Cel::Bool(one_str(&a, "isIP").and_then(parse_ip).is_ok()))
    }),
    ("ip.isCanonical", |_, a| {
        let text = a
            .last()
            .and_then(as_str)
            .ok_or_else(|| bad_args("isCanonical"))?;
        let addr = parse_ip(text)?;
        Ok(Cel::Bool(addr.to_string() == text))
    }),
    ("family", |t, _| {
        Ok(Cel::Int(if as_ip(&t, "family")?.is_ipv4() { 4 } else { 6 }))
    }),
    ("isUnspecified", |t, _| {
        Ok(Cel::Bool(as_ip(&t, "isUnspecified")?.is_unspecified()))
    }),
    ("isLoopback", |t, _| {
        Ok(Cel::Bool(as_ip(&t, "isLoopback")?.is_loopback()))
    }),
    ("isLinkLocalMulticast", |t, _| {
        Ok(Cel::Bool(link_local_multicast(as_ip(
            &t,
            "isLinkLocalMulticast",
        )?)))
    }),
    ("isLinkLocalUnicast", |t, _| {
        Ok(Cel::Bool(link_local_unicast(as_ip(
            &t,
            "isLinkLocalUnicast",
        )?)))
    }),
    ("isGlobalUnicast", |t, _| {
        Ok(Cel::Bool(global_unicast(as_ip(&t, "isGlobalUnicast")?)))
    }),
    ("cidr", |_, a| {
        one_str(&a, "cidr")
            .and_then(parse_cidr)
            .map(|c| Cel::Opaque(Arc::new(c)))
    }),
    ("isCIDR", |_, a| {
        Ok(Cel::Bool(
            one_str(&a, "isCIDR").and_then(parse_cidr).is_ok(),
        ))
    }),
    ("containsIP", |t, a| {
        let c = as_cidr(&t, "containsIP")?;
        let other = match a.first() {
            Some(Cel::String(text)) => parse_ip(text)?,
            Some(v) => as_ip(&Some(v.clone()), "containsIP")?,
            None => return Err(bad_args("containsIP")),
        };
        Ok(Cel::Bool(c.contains(other)))
    }),
    ("containsCIDR", |t, a| {
        let c = as_cidr(&t, "containsCIDR")?;
        let other = match a.first() {
            Some(Cel::String(text)) => parse_cidr(text)?,
            Some(v) => *as_cidr(&Some(v.clone()), "containsCIDR")?,
            None => return Err(bad_args("containsCIDR")),
        };
        Ok(Cel::Bool(other.bits >= c.bits && c.contains(other.addr)))
    }),
    ("masked", |t, _| {
        Ok(Cel::Opaque(Arc::new(as_cidr(&t, "masked")?.masked())))
    }),
    ("prefixLength", |t, _| {
        Ok(Cel::Int(i64::from(as_cidr(&t, "prefixLength")?.bits)))
    }),
    ("named", |t, a| {
        as_format_lib(&t)?;
        let name = a
            .first()
            .and_then(as_str)
            .ok_or_else(|| bad_args("named"))?;
        Ok(Cel::Opaque(Arc::new(match Format::from_name(name) {
            Some(f) => OptionalValue::of(Cel::Opaque(Arc::new(f))),
            None => OptionalValue::none(),
        })))
    }),
    ("dns1123Label", |t, _| format_of(&t, Format::Dns1123Label)),
    ("dns1123Subdomain", |t, _| {
        format_of(&t, Format::Dns1123Subdomain)
    }),
    ("dns1035Label", |t, _| format_of(&t, Format::Dns1035Label)),
    ("qualifiedName", |t, _| format_of(&t, Format::QualifiedName)),
    ("dns1123LabelPrefix", |t, _| {
        format_of(&t, Format::Dns1123LabelPrefix)
    }),
    ("dns1123SubdomainPrefix", |t, _| {
        format_of(&t, Format::Dns1123SubdomainPrefix)
    }),
    ("dns1035LabelPrefix", |t, _| {
        format_of(&t, Format::Dns1035LabelPrefix)
    }),
    ("labelValue", |t, _| format_of(&t, Format::LabelValue)),
    ("uri", |t, _| format_of(&t, Format::Uri)),
    ("uuid", |t, _| format_of(&t, Format::Uuid)),
    ("byte", |t, _| format_of(&t, Format::Byte)),
    ("date", |t, _| format_of(&t, Format::Date)),
    ("datetime", |t, _| format_of(&t, Format::DateTime)),
    ("validate", |t, a| {
        let f = match &t {
            Some(Cel::Opaque(o)) => o.downcast_ref::<Format>().copied(),
            _ => None,
        }
        .ok_or_else(|| bad_args("validate"))?;
        let text = a
            .first()
            .and_then(as_str)
            .ok_or_else(|| bad_args("validate"))?;
        let errs = f.validate(text);
        Ok(Cel::Opaque(Arc::new(if errs.is_empty() {
            OptionalValue::none()
        } else {
            OptionalValue::of(Cel::List(Arc::new(
                errs.into_iter().map(|e| s(&e)).collect(),
            )))
        })))
    }),
    ("find", |t, a| {
        let text = t
            .as_ref()
            .and_then(as_str)
            .ok_or_else(|| bad_args("find"))?;
        let re = regex(a.first())?;
        Ok(s(re.find(text).map_or("", |m| m.as_str())))
    }),
    ("findAll", |t, a| {
        let text = t
            .as_ref()
            .and_then(as_str)
            .ok_or_else(|| bad_args("findAll"))?;
        let re = regex(a.first())?;
        let limit = match a.get(1) {
            Some(Cel::Int(n)) if *n >= 0 => Some(*n as usize),
            _ => None,
        };
        let found = re.find_iter(text).map(|m| s(m.as_str()));
        let found: Vec<Cel> = match limit {
            Some(n) => found.take(n).collect(),
            None => found.collect(),
        };
        Ok(Cel::List(Arc::new(found)))
    }),
];

fn s(text: &str) -> Cel {
    Cel::String(Arc::new(text.to_string()))
}

fn as_str(v: &Cel) -> Option<&str> {
    match v {
        Cel::String(s) => Some(s.as_str()),
        _ => None,
    }
}

fn bad_args(f: &str) -> ExecutionError {
    ExecutionError::function_error(f, "no such overload")
}

fn one_str<'a>(args: &'a [Cel], f: &str) -> Result<&'a str, ExecutionError> {
    match args {
        [Cel::String(s)] => Ok(s.as_str()),
        _ => Err(bad_args(f)),
    }
}

fn regex(v: Option<&Cel>) -> Result<regex::Regex, ExecutionError> {
    let pattern = v.and_then(as_str).ok_or_else(|| bad_args("find"))?;
    regex::Regex::new(pattern)
        .map_err(|e| ExecutionError::function_error("find", format!("invalid regex: {e}")))
}

fn opaque<'a, T: 'static>(t: &'a Option<Cel>, f: &str) -> Result<&'a T, ExecutionError> {
    match t {
        Some(Cel::Opaque(o)) => o.downcast_ref::<T>().ok_or_else(|| bad_args(f)),
        _ => Err(bad_args(f)),
    }
}

// ---- quantity ----

/// A quantity, exactly, in nano-units: [`crate::validation::Quantity`]'s parser (the one
/// the pod validation compares requests and limits with), with CEL's arithmetic on top.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Quantity {
    nanos: i128,
}

const NANO: i128 = 1_000_000_000;

impl Quantity {
    fn sign(&self) -> i64 {
        self.nanos.signum() as i64
    }

    fn to_f64(self) -> f64 {
        self.nanos as f64 / NANO as f64
    }

    /// The value as an integer, when it is one and fits in an `int`.
    fn as_i64(&self) -> Option<i64> {
        if self.nanos % NANO != 0 {
            return None;
        }
        i64::try_from(self.nanos / NANO).ok()
    }
}

impl Opaque for Quantity {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.Quantity"
    }
}

fn q(v: Quantity) -> Cel {
    Cel::Opaque(Arc::new(v))
}

fn as_quantity(t: &Option<Cel>, f: &str) -> Result<Quantity, ExecutionError> {
    opaque::<Quantity>(t, f).copied()
}

const QUANTITY_ERROR: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

/// Parses a quantity as `resource.ParseQuantity` does.
pub(crate) fn parse_quantity(text: &str) -> Result<Quantity, ExecutionError> {
    crate::validation::Quantity::parse(text)
        .map(|v| Quantity { nanos: v.nanos() })
        .ok_or_else(|| ExecutionError::function_error("quantity", QUANTITY_ERROR))
}

fn arith(t: &Option<Cel>, a: &[Cel], f: &str, sub: bool) -> Result<Cel, ExecutionError> {
    let x = as_quantity(t, f)?;
    let y = match a.first() {
        Some(Cel::Int(i)) => Quantity {
            nanos: i128::from(*i) * NANO,
        },
        Some(v) => as_quantity(&Some(v.clone()), f)?,
        None => return Err(bad_args(f)),
    };
    let nanos = if sub {
        x.nanos.checked_sub(y.nanos)
    } else {
        x.nanos.checked_add(y.nanos)
    }
    .ok_or_else(|| ExecutionError::function_error(f, "quantity overflow"))?;
    Ok(q(Quantity { nanos }))
}

fn compare(t: &Option<Cel>, a: &[Cel], f: &str) -> Result<Ordering, ExecutionError> {
    let x = as_quantity(t, f)?;
    let y = as_quantity(&a.first().cloned(), f)?;
    Ok(x.nanos.cmp(&y.nanos))
}

// ---- url ----

/// A URL as Go's `url.Parse` splits it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Url {
    scheme: String,
    /// `host[:port]`, IPv6 hosts in brackets.
    host: String,
    path: String,
    query: String,
}

impl Opaque for Url {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.URL"
    }
}

impl Url {
    fn hostname(&self) -> &str {
        if let Some(rest) = self.host.strip_prefix('[') {
            return rest.split(']').next().unwrap_or("");
        }
        self.host.split(':').next().unwrap_or("")
    }

    fn port(&self) -> &str {
        let after = match self.host.rfind(']') {
            Some(i) => &self.host[i + 1..],
            None => &self.host,
        };
        after.split_once(':').map_or("", |(_, p)| p)
    }

    fn query_map(&self) -> Cel {
        let mut map: std::collections::BTreeMap<String, Vec<Cel>> = Default::default();
        for pair in self.query.split(['&', ';']).filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            map.entry(unescape(k)).or_default().push(s(&unescape(v)));
        }
        let map = map
            .into_iter()
            .map(|(k, v)| (Key::String(Arc::new(k)), Cel::List(Arc::new(v))))
            .collect();
        Cel::Map(CelMap { map: Arc::new(map) })
    }
}

fn unescape(text: &str) -> String {
    let bytes = text.as_bytes();
    let hex = |b: u8| (b as char).to_digit(16);
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push((h * 16 + l) as u8);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parses what `url()` accepts: an absolute URI (`scheme:...`) or an absolute path.
pub(crate) fn parse_url(text: &str) -> Result<Url, ExecutionError> {
    let err = |why: &str| {
        ExecutionError::function_error(
            "url",
            format!("URL parse error during conversion from string: parse {text:?}: {why}"),
        )
    };
    if text.chars().any(|c| c.is_control() || c == ' ') {
        return Err(err("invalid character in URL"));
    }
    let without_fragment = text.split('#').next().unwrap_or("");
    let (rest, query) = without_fragment
        .split_once('?')
        .unwrap_or((without_fragment, ""));
    let (scheme, rest) = match rest.find(':') {
        Some(i)
            if i > 0
                && rest[..i].starts_with(|c: char| c.is_ascii_alphabetic())
                && rest[..i]
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) =>
        {
            (&rest[..i], &rest[i + 1..])
        }
        Some(0) => return Err(err("missing protocol scheme")),
        _ => ("", rest),
    };
    if scheme.is_empty() && !rest.starts_with('/') {
        return Err(err("invalid URI for request"));
    }
    let (host, path) = match rest.strip_prefix("//") {
        Some(authority) => {
            let end = authority.find('/').unwrap_or(authority.len());
            let host = &authority[..end];
            let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
            if let Some(port) = host
                .rsplit_once(']')
                .map_or(host, |(_, after)| after)
                .split_once(':')
                .map(|(_, p)| p)
                && !port.chars().all(|c| c.is_ascii_digit())
            {
                return Err(err(&format!(
                    "invalid port {:?} after host",
                    format!(":{port}")
                )));
            }
            (host.to_string(), authority[end..].to_string())
        }
        None => (String::new(), rest.to_string()),
    };
    Ok(Url {
        scheme: scheme.to_string(),
        host,
        path,
        query: query.to_string(),
    })
}

// ---- ip and cidr ----

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Ip(IpAddr);

impl Opaque for Ip {
    fn runtime_type_name(&self) -> &str {
        "net.IP"
    }
}

fn ip(addr: IpAddr) -> Cel {
    Cel::Opaque(Arc::new(Ip(addr)))
}

fn as_url<'a>(t: &'a Option<Cel>, f: &str) -> Result<&'a Url, ExecutionError> {
    opaque::<Url>(t, f)
}

fn as_ip(t: &Option<Cel>, f: &str) -> Result<IpAddr, ExecutionError> {
    opaque::<Ip>(t, f).map(|i| i.0)
}

/// Parses an address as `ip()` does: IPv4 or IPv6, no zone, no IPv4-mapped IPv6 form.
pub(crate) fn parse_ip(text: &str) -> Result<IpAddr, ExecutionError> {
    let err = |why: String| ExecutionError::function_error("ip", why);
    if text.contains('%') {
        return Err(err(format!(
            "IP address with zone value is not allowed: {text}"
        )));
    }
    let addr: IpAddr = text
        .parse()
        .map_err(|_| err(format!("IP Address {text:?} parse error during conversion from string: ParseAddr({text:?}): unable to parse IP")))?;
    if let IpAddr::V6(v6) = addr
        && v6.to_ipv4_mapped().is_some()
    {
        return Err(err(format!(
            "IPv4-mapped IPv6 address {text:?} is not allowed"
        )));
    }
    Ok(addr)
}

fn link_local_multicast(a: IpAddr) -> bool {
    match a {
        IpAddr::V4(v4) => v4.octets()[..3] == [224, 0, 0],
        IpAddr::V6(v6) => v6.segments()[0] & 0xff0f == 0xff02,
    }
}

fn link_local_unicast(a: IpAddr) -> bool {
    match a {
        IpAddr::V4(v4) => v4.is_link_local(),
        IpAddr::V6(v6) => v6.segments()[0] & 0xffc0 == 0xfe80,
    }
}

fn global_unicast(a: IpAddr) -> bool {
    match a {
        IpAddr::V4(v4) => {
            !(v4.is_unspecified()
                || v4.is_loopback()
                || v4.is_multicast()
                || v4.is_link_local()
                || v4.is_broadcast())
        }
        IpAddr::V6(v6) => {
            !(v6.is_unspecified()
                || v6.is_loopback()
                || v6.is_multicast()
                || link_local_unicast(IpAddr::V6(v6)))
        }
    }
}

/// An address and a prefix length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Cidr {
    addr: IpAddr,
    bits: u8,
}

impl Opaque for Cidr {
    fn runtime_type_name(&self) -> &str {
        "net.IPNet"
    }
}

impl Cidr {
    fn width(&self) -> u8 {
        if self.addr.is_ipv4() { 32 } else { 128 }
    }

    fn as_u128(a: IpAddr) -> u128 {
        match a {
            IpAddr::V4(v4) => u128::from(u32::from(v4)),
            IpAddr::V6(v6) => u128::from(v6),
        }
    }

    fn mask(&self) -> u128 {
        let width = u32::from(self.width());
        let host_bits = width - u32::from(self.bits);
        let all = if width == 128 {
            u128::MAX
        } else {
            (1u128 << width) - 1
        };
        all & !(u128::MAX.checked_shr(128 - host_bits).unwrap_or(0))
    }

    fn contains(&self, other: IpAddr) -> bool {
        other.is_ipv4() == self.addr.is_ipv4()
            && Cidr::as_u128(other) & self.mask() == Cidr::as_u128(self.addr) & self.mask()
    }

    fn masked(&self) -> Cidr {
        let bits = Cidr::as_u128(self.addr) & self.mask();
        let addr = match self.addr {
            IpAddr::V4(_) => IpAddr::V4((bits as u32).into()),
            IpAddr::V6(_) => IpAddr::V6(bits.into()),
        };
        Cidr {
            addr,
            bits: self.bits,
        }
    }
}

fn as_cidr<'a>(t: &'a Option<Cel>, f: &str) -> Result<&'a Cidr, ExecutionError> {
    opaque::<Cidr>(t, f)
}

/// Parses a prefix as `cidr()` does (`netip.ParsePrefix`): an address, `/`, a length.
fn parse_cidr(text: &str) -> Result<Cidr, ExecutionError> {
    let err = || {
        ExecutionError::function_error(
            "cidr",
            format!(
                "network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix({text:?}): no '/'"
            ),
        )
    };
    let (addr, bits) = text.split_once('/').ok_or_else(err)?;
    let addr = parse_ip(addr)?;
    let bits: u8 = bits.parse().map_err(|_| err())?;
    let c = Cidr { addr, bits };
    if bits > c.width()
        || text
            .split_once('/')
            .is_some_and(|(_, b)| b.starts_with('0') && b.len() > 1)
    {
        return Err(err());
    }
    Ok(c)
}

// ---- format ----

/// The `format` variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FormatLib;

impl Opaque for FormatLib {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.NamedFormat"
    }
}

fn as_format_lib(t: &Option<Cel>) -> Result<(), ExecutionError> {
    opaque::<FormatLib>(t, "format").map(|_| ())
}

fn format_of(t: &Option<Cel>, f: Format) -> Result<Cel, ExecutionError> {
    as_format_lib(t)?;
    Ok(Cel::Opaque(Arc::new(f)))
}

/// A named format of `format.<name>()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Dns1123Label,
    Dns1123Subdomain,
    Dns1035Label,
    QualifiedName,
    Dns1123LabelPrefix,
    Dns1123SubdomainPrefix,
    Dns1035LabelPrefix,
    LabelValue,
    Uri,
    Uuid,
    Byte,
    Date,
    DateTime,
}

impl Opaque for Format {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.NamedFormat"
    }
}

impl Format {
    fn from_name(name: &str) -> Option<Format> {
        Some(match name {
            "dns1123Label" => Format::Dns1123Label,
            "dns1123Subdomain" => Format::Dns1123Subdomain,
            "dns1035Label" => Format::Dns1035Label,
            "qualifiedName" => Format::QualifiedName,
            "dns1123LabelPrefix" => Format::Dns1123LabelPrefix,
            "dns1123SubdomainPrefix" => Format::Dns1123SubdomainPrefix,
            "dns1035LabelPrefix" => Format::Dns1035LabelPrefix,
            "labelValue" => Format::LabelValue,
            "uri" => Format::Uri,
            "uuid" => Format::Uuid,
            "byte" => Format::Byte,
            "date" => Format::Date,
            "datetime" => Format::DateTime,
            _ => return None,
        })
    }

    /// The errors of `s` in this format (empty when valid), worded as upstream's.
    fn validate(self, s: &str) -> Vec<String> {
        use crt_labels::validation as v;
        let prefix = |s: &str| s.strip_suffix('-').unwrap_or(s).to_string();
        match self {
            Format::Dns1123Label => v::is_dns1123_label(s),
            Format::Dns1123Subdomain => v::is_dns1123_subdomain(s),
            Format::Dns1035Label => dns1035_label(s),
            Format::QualifiedName => v::is_qualified_name(s),
            Format::Dns1123LabelPrefix => v::is_dns1123_label(&prefix(s)),
            Format::Dns1123SubdomainPrefix => v::is_dns1123_subdomain(&prefix(s)),
            Format::Dns1035LabelPrefix => dns1035_label(&prefix(s)),
            Format::LabelValue => v::is_valid_label_value(s),
            Format::Uri => match parse_url(s) {
                Ok(_) => vec![],
                Err(_) => vec!["invalid URI".into()],
            },
            Format::Uuid => {
                let ok = s.len() == 36
                    && s.char_indices().all(|(i, c)| match i {
                        8 | 13 | 18 | 23 => c == '-',
                        _ => c.is_ascii_hexdigit(),
                    });
                if ok {
                    vec![]
                } else {
                    vec!["does not match the UUID format".into()]
                }
            }
            Format::Byte => {
                use base64::Engine;
                match base64::engine::general_purpose::STANDARD.decode(s) {
                    Ok(_) => vec![],
                    Err(_) => vec!["invalid base64".into()],
                }
            }
            Format::Date => match chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d") {
                Ok(_) => vec![],
                Err(_) => vec!["invalid date".into()],
            },
            Format::DateTime => match chrono::DateTime::parse_from_rfc3339(s) {
                Ok(_) => vec![],
                Err(_) => vec!["invalid datetime".into()],
            },
        }
    }
}

fn dns1035_label(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push("must be no more than 63 characters".to_string());
    }
    let b = s.as_bytes();
    let ok = !b.is_empty()
        && b[0].is_ascii_lowercase()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[b.len() - 1] != b'-';
    if !ok {
        errs.push("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')".to_string());
    }
    errs
}

#[cfg(test)]
mod tests {
    use cel::{Context, Value as Cel};

    use crate::cel::parse::ENV;

    fn eval(expr: &str) -> Result<Cel, String> {
        let mut ctx = Context::with_env(ENV.clone());
        super::register(&mut ctx);
        let program = ENV.compile(expr).map_err(|e| format!("compile: {e}"))?;
        program.execute(&ctx).map_err(|e| e.to_string())
    }

    fn check(exprs: &[&str]) {
        let failed: Vec<String> = exprs
            .iter()
            .filter_map(|e| match eval(e) {
                Ok(Cel::Bool(true)) => None,
                other => Some(format!("{e}: {other:?}")),
            })
            .collect();
        assert!(failed.is_empty(), "not true:\n{}", failed.join("\n"));
    }

    #[test]
    fn quantity_library() {
        check(&[
            r#"quantity("1") == quantity("1000m")"#,
            r#"quantity("500Mi").isLessThan(quantity("1Gi"))"#,
            r#"quantity("1G").isGreaterThan(quantity("1Gi")) == false"#,
            r#"quantity("1.5").isInteger() == false"#,
            r#"quantity("2k").asInteger() == 2000"#,
            r#"quantity("1e3").asInteger() == 1000"#,
            r#"quantity("1Gi").add(1).asInteger() == 1073741825"#,
            r#"quantity("1").sub(quantity("250m")) == quantity("750m")"#,
            r#"quantity("-2").sign() == -1"#,
            r#"quantity("100m").compareTo(quantity("0.1")) == 0"#,
            r#"quantity("0.5").asApproximateFloat() == 0.5"#,
            r#"isQuantity("1Ki") && !isQuantity("abc") && !isQuantity("1.2.3")"#,
        ]);
        let err = eval(r#"quantity("abc")"#).unwrap_err();
        assert!(
            err.contains("quantities must match the regular expression"),
            "{err}"
        );
    }

    #[test]
    fn url_library() {
        check(&[
            r#"url("https://example.com:8080/a%20b?x=1&x=2&y=").getHost() == "example.com:8080""#,
            r#"url("https://example.com:8080/p").getHostname() == "example.com""#,
            r#"url("https://example.com:8080/p").getPort() == "8080""#,
            r#"url("https://example.com/p").getPort() == """#,
            r#"url("https://example.com/a%20b").getEscapedPath() == "/a%20b""#,
            r#"url("https://example.com/?x=1&x=2&y=").getQuery() == {"x": ["1", "2"], "y": [""]}"#,
            r#"url("https://[::1]:80/").getHostname() == "::1""#,
            r#"url("/absolute/path").getScheme() == """#,
            r#"url("https://example.com").getScheme() == "https""#,
            r#"isURL("https://example.com") && !isURL("example.com") && !isURL("a b")"#,
        ]);
    }

    #[test]
    fn ip_and_cidr_libraries() {
        check(&[
            r#"ip("10.0.0.1").family() == 4"#,
            r#"ip("::1").family() == 6 && ip("::1").isLoopback()"#,
            r#"ip("0.0.0.0").isUnspecified()"#,
            r#"ip("169.254.1.1").isLinkLocalUnicast() && ip("fe80::1").isLinkLocalUnicast()"#,
            r#"ip("224.0.0.1").isLinkLocalMulticast() && ip("ff02::1").isLinkLocalMulticast()"#,
            r#"ip("8.8.8.8").isGlobalUnicast() && !ip("127.0.0.1").isGlobalUnicast()"#,
            r#"isIP("1.2.3.4") && !isIP("1.2.3") && !isIP("::ffff:1.2.3.4") && !isIP("fe80::1%eth0")"#,
            r#"ip("10.0.0.1") == ip("10.0.0.1") && ip("10.0.0.1") != ip("10.0.0.2")"#,
            r#"ip.isCanonical("2001:db8::1") && !ip.isCanonical("2001:DB8::1")"#,
            r#"cidr("10.0.0.0/8").containsIP("10.1.2.3")"#,
            r#"!cidr("10.0.0.0/8").containsIP(ip("11.0.0.1"))"#,
            r#"cidr("10.0.0.0/8").containsCIDR("10.1.0.0/16")"#,
            r#"!cidr("10.1.0.0/16").containsCIDR("10.0.0.0/8")"#,
            r#"cidr("10.1.2.3/8").masked() == cidr("10.0.0.0/8")"#,
            r#"cidr("10.0.0.0/8").prefixLength() == 8"#,
            r#"cidr("10.0.0.0/8").ip() == ip("10.0.0.0")"#,
            r#"cidr("2001:db8::/32").containsIP("2001:db8::1")"#,
            r#"isCIDR("10.0.0.0/8") && !isCIDR("10.0.0.0") && !isCIDR("10.0.0.0/33")"#,
        ]);
    }

    #[test]
    fn format_and_regex_libraries() {
        check(&[
            r#"format.dns1123Label().validate("Bad_Name").hasValue()"#,
            r#"!format.dns1123Label().validate("good-name").hasValue()"#,
            r#"format.named("uuid").hasValue() && !format.named("nope").hasValue()"#,
            r#"!format.uuid().validate("123e4567-e89b-12d3-a456-426614174000").hasValue()"#,
            r#"format.dns1035Label().validate("1abc").hasValue()"#,
            r#"!format.labelValue().validate("").hasValue()"#,
            r#""abc 123 456".find("[0-9]+") == "123""#,
            r#""abc".find("[0-9]+") == """#,
            r#""abc 123 456".findAll("[0-9]+") == ["123", "456"]"#,
            r#""abc 123 456".findAll("[0-9]+", 1) == ["123"]"#,
        ]);
    }
}
