//! [`BindAddress`]: where one of the manager's HTTP servers listens, or that it is off.

use std::fmt;
use std::net::{Ipv4Addr, SocketAddr};
use std::str::FromStr;

/// Where one of the manager's HTTP servers (metrics, health probes) listens, or
/// [`Disabled`](BindAddress::Disabled): controller-runtime's bind address strings, typed and
/// checked when they are made rather than when the manager starts.
///
/// It parses from the strings controller-runtime's flags take: `"0"` (or an empty string)
/// disables the server, `":8080"` listens on every interface, `"127.0.0.1:8080"` or
/// `"[::1]:8080"` on one. Port 0 picks a free port (see
/// [`Manager::metrics_addr`](super::Manager::metrics_addr)). Host names are refused: a server
/// binds an IP address.
///
/// ```
/// use std::net::SocketAddr;
/// use controller_runtime::manager::BindAddress;
///
/// assert_eq!("0".parse::<BindAddress>().unwrap(), BindAddress::Disabled);
/// let every = ":8080".parse::<BindAddress>().unwrap();
/// assert_eq!(every, BindAddress::Addr(SocketAddr::from(([0, 0, 0, 0], 8080))));
/// let local: BindAddress = "127.0.0.1:0".parse().unwrap();
/// assert_eq!(local.addr(), Some(SocketAddr::from(([127, 0, 0, 1], 0))));
/// assert!("localhost:8080".parse::<BindAddress>().is_err());
/// assert!("127.0.0.1".parse::<BindAddress>().is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BindAddress {
    /// The server does not run (controller-runtime's `"0"`).
    Disabled,
    /// The server listens on this address.
    Addr(SocketAddr),
}

impl BindAddress {
    /// The address to listen on, unless disabled.
    pub fn addr(&self) -> Option<SocketAddr> {
        match self {
            BindAddress::Disabled => None,
            BindAddress::Addr(addr) => Some(*addr),
        }
    }
}

impl From<SocketAddr> for BindAddress {
    fn from(addr: SocketAddr) -> Self {
        BindAddress::Addr(addr)
    }
}

impl fmt::Display for BindAddress {
    /// `0` when disabled, else the address (`0.0.0.0:8080` for `:8080`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BindAddress::Disabled => f.write_str("0"),
            BindAddress::Addr(addr) => addr.fmt(f),
        }
    }
}

/// A string that is not a [`BindAddress`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid bind address {0:?}: expected \"0\" (disabled), \":PORT\" or \"IP:PORT\" (e.g. \"127.0.0.1:8080\")"
)]
pub struct InvalidBindAddress(pub String);

impl FromStr for BindAddress {
    type Err = InvalidBindAddress;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let trimmed = s.trim();
        if trimmed.is_empty() || trimmed == "0" {
            return Ok(BindAddress::Disabled);
        }
        let parsed = match trimmed.strip_prefix(':') {
            // Go's `:PORT`: every interface.
            Some(port) => port
                .parse::<u16>()
                .map(|port| SocketAddr::from((Ipv4Addr::UNSPECIFIED, port)))
                .ok(),
            None => trimmed.parse::<SocketAddr>().ok(),
        };
        parsed
            .map(BindAddress::Addr)
            .ok_or_else(|| InvalidBindAddress(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_controller_runtime_forms() {
        let cases = [
            ("", Some(BindAddress::Disabled)),
            ("0", Some(BindAddress::Disabled)),
            (":8081", Some(SocketAddr::from(([0, 0, 0, 0], 8081)).into())),
            (
                "127.0.0.1:0",
                Some(SocketAddr::from(([127, 0, 0, 1], 0)).into()),
            ),
            (
                "[::1]:9090",
                Some("[::1]:9090".parse::<SocketAddr>().unwrap().into()),
            ),
            (":", None),
            (":http", None),
            (":70000", None),
            ("localhost:8080", None),
            ("8080", None),
        ];
        for (input, want) in cases {
            assert_eq!(input.parse::<BindAddress>().ok(), want, "{input:?}");
        }
        let err = "nope".parse::<BindAddress>().unwrap_err();
        assert!(err.to_string().contains("\"nope\""), "{err}");
    }

    #[test]
    fn displays_as_it_parses() {
        for s in ["0", "0.0.0.0:8080", "127.0.0.1:0", "[::1]:9090"] {
            assert_eq!(s.parse::<BindAddress>().unwrap().to_string(), s);
        }
    }
}
