//! `networking.k8s.io/v1` ServiceCIDRs: the ranges Service cluster IPs are allocated from
//! (upstream's `pkg/registry/networking/servicecidr` strategy and `ValidateServiceCIDR`).
//!
//! - `spec.cidrs` holds one CIDR, or two of different IP families, each strictly valid and
//!   canonical (no leading zeros, no IPv4-mapped IPv6 address, no bits beyond the prefix
//!   length); the list is immutable once created.
//! - A status write keeps `spec` and the metadata `ResetObjectMetaForStatus` resets.
//! - `kubectl get` prints the CIDRs comma-separated before AGE.

use std::net::IpAddr;

use serde_json::{Value, json};

use crate::kinds::strategy::{DEFAULT, STATUS_META};
use crate::kinds::{StatusStrategy, Strategy};
use crate::table::columns::CellFn;
use crate::validation::FieldError;

/// The ServiceCIDR strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
    validate: Some(validate),
    status: StatusStrategy::SpecAnd(STATUS_META),
    columns,
    ..DEFAULT
};

const INVALID_CIDR: &str = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)";

/// `ValidateServiceCIDR` on create; on update only `spec.cidrs` is checked, for being
/// unchanged (`ValidateServiceCIDRUpdate`).
fn validate(obj: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    let cidrs = cidrs(obj);
    if let Some(old) = old {
        if cidrs != self::cidrs(old) {
            errs.push(FieldError::invalid_go(
                "spec.cidrs",
                &go_strings(obj.pointer("/spec/cidrs").and(Some(&cidrs))),
                "field is immutable",
            ));
        }
        return;
    }
    if cidrs.is_empty() {
        errs.push(FieldError::required(
            "spec.cidrs",
            "at least one CIDR required",
        ));
        return;
    }
    let spec = || {
        format!(
            "networking.ServiceCIDRSpec{{CIDRs:{}}}",
            go_strings(Some(&cidrs))
        )
    };
    if cidrs.len() > 2 {
        errs.push(FieldError::invalid_go(
            "spec.cidrs",
            &spec(),
            "may only hold up to 2 values",
        ));
        return;
    }
    if cidrs.len() == 2 {
        let families: Option<Vec<bool>> = cidrs
            .iter()
            .map(|c| parse_sloppy(c).map(|(ip, _)| is_v4(&ip)))
            .collect();
        if families.is_none_or(|f| f[0] == f[1]) {
            errs.push(FieldError::invalid_go(
                "spec.cidrs",
                &spec(),
                "may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64",
            ));
            return;
        }
    }
    for (i, cidr) in cidrs.iter().enumerate() {
        if let Some(problem) = cidr_problem(cidr) {
            errs.push(FieldError::invalid(
                format!("spec.cidrs[{i}]"),
                &Value::from(cidr.as_str()),
                &problem,
            ));
        }
    }
}

/// `spec.cidrs` (non-strings read as empty; the decoder refused them before).
fn cidrs(obj: &Value) -> Vec<String> {
    obj.pointer("/spec/cidrs")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|c| c.as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// A `[]string` as Go's `%#v` prints it; `[]string(nil)` when absent.
fn go_strings(items: Option<&Vec<String>>) -> String {
    match items {
        None => "[]string(nil)".into(),
        Some(items) => {
            let quoted: Vec<String> = items.iter().map(|s| format!("{s:?}")).collect();
            format!("[]string{{{}}}", quoted.join(", "))
        }
    }
}

/// Whether an address is IPv4 (an IPv4-mapped IPv6 address counts as IPv4, as Go's `To4`
/// sees it).
fn is_v4(ip: &IpAddr) -> bool {
    match ip {
        IpAddr::V4(_) => true,
        IpAddr::V6(v6) => v6.to_ipv4_mapped().is_some(),
    }
}

/// `ParseCIDRSloppy`: the address (IPv4 octets may have leading zeros) and the prefix length
/// (decimal, leading zeros allowed), or `None` when it is no CIDR.
fn parse_sloppy(value: &str) -> Option<(IpAddr, u32)> {
    let (addr, bits) = value.split_once('/')?;
    if bits.is_empty() || bits.len() > 8 || !bits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let bits: u32 = bits.parse().ok()?;
    let ip = match addr.parse::<IpAddr>() {
        Ok(ip) => ip,
        Err(_) if !addr.contains(':') => IpAddr::V4(sloppy_v4(addr)?),
        Err(_) => return None,
    };
    let max = if addr.contains(':') { 128 } else { 32 };
    (bits <= max).then_some((ip, bits))
}

/// Four decimal octets, leading zeros allowed.
fn sloppy_v4(addr: &str) -> Option<std::net::Ipv4Addr> {
    let octets: Vec<u8> = addr
        .split('.')
        .map(|o| {
            if o.is_empty() || o.len() > 8 || !o.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            o.parse::<u32>().ok().and_then(|n| u8::try_from(n).ok())
        })
        .collect::<Option<_>>()?;
    let [a, b, c, d] = octets[..] else {
        return None;
    };
    Some(std::net::Ipv4Addr::new(a, b, c, d))
}

/// The address with the bits beyond `bits` cleared.
fn masked(ip: IpAddr, bits: u32) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => {
            let mask = u32::MAX.checked_shl(32 - bits).unwrap_or(0);
            IpAddr::V4((u32::from(v4) & mask).into())
        }
        IpAddr::V6(v6) => {
            let mask = u128::MAX.checked_shl(128 - bits).unwrap_or(0);
            IpAddr::V6((u128::from(v6) & mask).into())
        }
    }
}

/// What upstream's strict `IsValidCIDR` says of a CIDR, `None` when it is valid.
fn cidr_problem(value: &str) -> Option<String> {
    let Some((ip, bits)) = parse_sloppy(value) else {
        return Some(INVALID_CIDR.into());
    };
    let strict_bits = value
        .split_once('/')
        .is_some_and(|(_, b)| b == "0" || !b.starts_with('0'));
    let strict_addr = value
        .split_once('/')
        .is_some_and(|(a, _)| a.parse::<IpAddr>().is_ok());
    if !strict_bits || !strict_addr {
        return Some("must not have leading 0s in IP or prefix length".into());
    }
    if let IpAddr::V6(v6) = ip
        && v6.to_ipv4_mapped().is_some()
    {
        return Some("must not have an IPv4-mapped IPv6 address".into());
    }
    if masked(ip, bits) != ip {
        return Some("must not have bits set beyond the prefix length".into());
    }
    let canonical = format!("{ip}/{bits}");
    (canonical != value).then(|| format!("must be in canonical form ({canonical:?})"))
}

fn columns() -> Vec<(&'static str, CellFn)> {
    vec![("CIDRs", |o| json!(cidrs(o).join(",")))]
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::error::ApiError;
    use crate::resource::ResourceInfo;
    use crate::storage::Storage;

    fn served() -> (Storage, ResourceInfo) {
        let s = Storage::new(Default::default());
        let res = s
            .resolve("networking.k8s.io", "v1", "servicecidrs")
            .unwrap();
        (s, res)
    }

    fn cidr(name: &str, cidrs: Value) -> Value {
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "ServiceCIDR",
            "metadata": {"name": name}, "spec": {"cidrs": cidrs}})
    }

    fn create(cidrs: Value) -> Result<Value, ApiError> {
        let (s, res) = served();
        s.create(&res, None, cidr("r", cidrs), &Default::default())
    }

    /// The 422's message for `cidrs`.
    fn refused(cidrs: Value) -> String {
        let err = create(cidrs).unwrap_err();
        assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
        err.message
    }

    #[test]
    fn one_cidr_or_one_of_each_family_is_valid() {
        for cidrs in [
            json!(["10.96.0.0/12"]),
            json!(["2001:db8::/64"]),
            json!(["10.0.0.0/24", "fd00::/108"]),
            json!(["0.0.0.0/0"]),
        ] {
            assert!(create(cidrs.clone()).is_ok(), "{cidrs}");
        }
    }

    #[test]
    fn invalid_specs_are_refused_as_upstream_words_them() {
        let pre = r#"ServiceCIDR.networking.k8s.io "r" is invalid: "#;
        let cases = [
            (
                json!([]),
                "spec.cidrs: Required value: at least one CIDR required",
            ),
            (
                json!(["10.0.0.0/24", "10.1.0.0/24", "fd00::/64"]),
                r#"spec.cidrs: Invalid value: networking.ServiceCIDRSpec{CIDRs:[]string{"10.0.0.0/24", "10.1.0.0/24", "fd00::/64"}}: may only hold up to 2 values"#,
            ),
            (
                json!(["10.0.0.0/24", "10.1.0.0/24"]),
                r#"spec.cidrs: Invalid value: networking.ServiceCIDRSpec{CIDRs:[]string{"10.0.0.0/24", "10.1.0.0/24"}}: may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"#,
            ),
            (
                json!(["10.0.0.0/33"]),
                r#"spec.cidrs[0]: Invalid value: "10.0.0.0/33": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"#,
            ),
            (
                json!(["10.0.0.0"]),
                r#"spec.cidrs[0]: Invalid value: "10.0.0.0": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"#,
            ),
            (
                json!(["010.0.0.0/8"]),
                r#"spec.cidrs[0]: Invalid value: "010.0.0.0/8": must not have leading 0s in IP or prefix length"#,
            ),
            (
                json!(["10.0.0.0/08"]),
                r#"spec.cidrs[0]: Invalid value: "10.0.0.0/08": must not have leading 0s in IP or prefix length"#,
            ),
            (
                json!(["::ffff:10.0.0.0/104"]),
                r#"spec.cidrs[0]: Invalid value: "::ffff:10.0.0.0/104": must not have an IPv4-mapped IPv6 address"#,
            ),
            (
                json!(["10.0.0.1/8"]),
                r#"spec.cidrs[0]: Invalid value: "10.0.0.1/8": must not have bits set beyond the prefix length"#,
            ),
            (
                json!(["2001:DB8::/64"]),
                r#"spec.cidrs[0]: Invalid value: "2001:DB8::/64": must be in canonical form ("2001:db8::/64")"#,
            ),
        ];
        for (cidrs, message) in cases {
            assert_eq!(refused(cidrs), format!("{pre}{message}"));
        }
    }

    #[test]
    fn the_cidrs_are_immutable_and_a_status_write_keeps_spec_and_labels() {
        let (s, res) = served();
        let w = Default::default();
        let created = s
            .create(&res, None, cidr("r", json!(["10.0.0.0/24"])), &w)
            .unwrap();
        let mut changed = created.clone();
        changed["spec"]["cidrs"] = json!(["10.1.0.0/24"]);
        let err = s.update(&res, None, "r", None, changed, &w).unwrap_err();
        assert_eq!(
            err.message,
            r#"ServiceCIDR.networking.k8s.io "r" is invalid: spec.cidrs: Invalid value: []string{"10.1.0.0/24"}: field is immutable"#
        );
        let mut status = created.clone();
        status["spec"]["cidrs"] = json!(["10.2.0.0/24"]);
        status["metadata"]["labels"] = json!({"a": "b"});
        status["status"] = json!({"conditions": [{"type": "Ready", "status": "True",
            "lastTransitionTime": "2024-01-01T00:00:00Z", "reason": "", "message": ""}]});
        let written = s
            .update(&res, None, "r", Some("status"), status, &w)
            .unwrap();
        assert_eq!(written["spec"]["cidrs"], json!(["10.0.0.0/24"]));
        assert!(written["metadata"].get("labels").is_none());
        assert_eq!(written["status"]["conditions"][0]["type"], "Ready");
    }

    #[test]
    fn the_table_prints_the_cidrs() {
        let cell = (super::STRATEGY.columns)();
        assert_eq!(cell.len(), 1);
        let (name, cell) = cell[0];
        assert_eq!(name, "CIDRs");
        let obj = cidr("r", json!(["10.0.0.0/24", "fd00::/108"]));
        assert_eq!(cell(&obj), json!("10.0.0.0/24,fd00::/108"));
    }
}
