//! The relay's logical interfaces, as rtpengine names them (`--interface
//! [NAME/]ADDR[!ADVERTISED]`): a name, the addresses media binds on, each
//! with the address written into SDP for it (1:1 NAT: the socket binds the
//! private address, peers reach the public one), and the ports it takes.
//!
//! A leg of a call is bound on one interface, chosen by its NG request's
//! `direction` (or `from-interface`/`to-interface`) and kept for the life of
//! the call; within the interface, on the address of the family the peer
//! speaks (or that `address family` asks for).

use std::fmt;
use std::net::IpAddr;

/// The name of an interface configured without one.
pub const DEFAULT: &str = "default";

/// Longest interface name (it goes into NG replies and logs).
const MAX_NAME: usize = 32;

/// One media address of an interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Address {
    /// Where its sockets bind.
    pub local: IpAddr,
    /// What SDP and ICE candidates carry (`local` unless behind NAT).
    pub advertised: IpAddr,
}

/// A logical interface: its name, addresses and port range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interface {
    /// Its name (`default` when configured without one).
    pub name: String,
    /// Its addresses, in configuration order: the first of a family serves
    /// that family.
    pub addrs: Vec<Address>,
    /// Its own port range (`None`: the relay's).
    pub ports: Option<(u16, u16)>,
}

/// Where a leg is bound: an interface (by index) and one of its addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Binding {
    /// Index into [`Interfaces`].
    pub interface: usize,
    /// The address.
    pub addr: Address,
}

/// A port pair on an interface: what the host binds, hands to a worker and
/// releases (two interfaces may use the same port number).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Pair {
    /// Index into [`Interfaces`].
    pub interface: usize,
    /// The RTP port (RTCP is the next).
    pub port: u16,
}

/// An interface a request names for one leg: its index, and the family
/// rtpengine's obsolete `internal`/`external` stand for where no interface
/// has that name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Named {
    /// Index into [`Interfaces`].
    pub index: usize,
    /// The family asked for (`internal`: IPv4, `external`: IPv6).
    pub v6: Option<bool>,
}

/// The interfaces a request's `direction` names: for the leg towards the
/// sender of its SDP, for the leg towards its receiver, and a warning for
/// each obsolete name taken as a family.
pub type Requested = (Option<Named>, Option<Named>, Vec<String>);

/// The configured interfaces (at least one; the first is the default).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interfaces(Vec<Interface>);

/// Why an interface specification was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError(String);

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SpecError {}

/// One `--interface` value, parsed: `[NAME/]ADDR[!ADVERTISED]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec {
    /// The name (`default` when none is written).
    pub name: String,
    /// The address.
    pub addr: Address,
}

impl Spec {
    /// Parses `[NAME/]ADDR[!ADVERTISED]`: both addresses literal IPv4 or
    /// IPv6 addresses of one family, neither unspecified nor multicast (they
    /// go into SDP).
    pub fn parse(s: &str) -> Result<Spec, SpecError> {
        let bad = |why: &str| SpecError(format!("interface '{}': {why}", clip(s)));
        let (name, rest) = match s.split_once('/') {
            Some((n, r)) => (n.trim(), r.trim()),
            None => (DEFAULT, s.trim()),
        };
        check_name(name).map_err(|e| bad(&e))?;
        let (local, advertised) = match rest.split_once('!') {
            Some((l, a)) => (l.trim(), Some(a.trim())),
            None => (rest, None),
        };
        let ip = |what: &str, v: &str| -> Result<IpAddr, SpecError> {
            let ip: IpAddr = v.parse().map_err(|_| {
                bad(&format!("{what} '{}' is not an IP address (write NAME/ADDRESS[!ADVERTISED])", clip(v)))
            })?;
            if ip.is_unspecified() || ip.is_multicast() {
                return Err(bad(&format!(
                    "{ip} cannot be a media address (it goes into SDP; give the address peers reach)"
                )));
            }
            Ok(ip)
        };
        let local = ip("address", local)?;
        let advertised = match advertised {
            Some(a) => ip("advertised address", a)?,
            None => local,
        };
        if local.is_ipv6() != advertised.is_ipv6() {
            return Err(bad("the address and the advertised address must be of one family"));
        }
        Ok(Spec { name: name.to_string(), addr: Address { local, advertised } })
    }
}

/// A name that can stand in NG requests and replies: letters, digits and
/// `-_.:`, at most [`MAX_NAME`] bytes.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > MAX_NAME {
        return Err(format!("an interface name has 1 to {MAX_NAME} characters"));
    }
    if !name.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b)) {
        return Err(format!("interface name '{}' may hold letters, digits and - _ . : only", clip(name)));
    }
    Ok(())
}

impl Interfaces {
    /// The interfaces that `specs` name, in the order their names first
    /// appear (so the first spec's interface is the default); addresses of
    /// one name gather under it. `ports` gives an interface its own range.
    /// Refused: no spec, one address twice.
    pub fn new(specs: &[Spec], ports: &[(String, (u16, u16))]) -> Result<Interfaces, SpecError> {
        let mut list: Vec<Interface> = Vec::new();
        for s in specs {
            if list.iter().flat_map(|i| &i.addrs).any(|a| a.local == s.addr.local) {
                return Err(SpecError(format!("interface '{}': address {} is given twice", s.name, s.addr.local)));
            }
            match list.iter_mut().find(|i| i.name == s.name) {
                Some(i) => i.addrs.push(s.addr),
                None => list.push(Interface { name: s.name.clone(), addrs: vec![s.addr], ports: None }),
            }
        }
        if list.is_empty() {
            return Err(SpecError("interface: at least one media address is needed".into()));
        }
        for (name, range) in ports {
            let Some(i) = list.iter_mut().find(|i| &i.name == name) else {
                return Err(SpecError(format!("a port range for interface '{name}', which has no address")));
            };
            if range.0 > range.1 || range.1 - range.0 < 1 {
                return Err(SpecError(format!("interface '{name}': port range {}-{} holds no pair", range.0, range.1)));
            }
            i.ports = Some(*range);
        }
        Ok(Interfaces(list))
    }

    /// One unnamed interface on these addresses (tests, the simulated host).
    pub fn plain(addrs: &[IpAddr]) -> Interfaces {
        let addrs = addrs.iter().map(|&ip| Address { local: ip, advertised: ip }).collect();
        Interfaces(vec![Interface { name: DEFAULT.into(), addrs, ports: None }])
    }

    /// Every interface, the default first.
    pub fn iter(&self) -> impl Iterator<Item = &Interface> {
        self.0.iter()
    }

    /// The interface at `index`.
    pub fn get(&self, index: usize) -> Option<&Interface> {
        self.0.get(index)
    }

    /// The index of the interface called `name`.
    pub fn find(&self, name: &str) -> Option<usize> {
        self.0.iter().position(|i| i.name == name)
    }

    /// The interface a request names (`None` or empty: the default), or
    /// an error naming the ones there are.
    pub fn named(&self, name: Option<&str>) -> Result<usize, String> {
        match name.filter(|n| !n.is_empty()) {
            None => Ok(0),
            Some(n) => self.find(n).ok_or_else(|| {
                let known: Vec<&str> = self.0.iter().map(|i| i.name.as_str()).collect();
                format!("unknown interface '{}' (this relay has: {})", clip(n), known.join(", "))
            }),
        }
    }

    /// What `direction` (`from-interface`, `to-interface`) names: its
    /// first name is the interface of the leg towards the sender of the
    /// message's SDP, the second that of the leg towards its receiver (as
    /// rtpengine reads it); an empty name names none. A name no interface
    /// has is refused with the list of those there are, except rtpengine's
    /// obsolete `internal` and `external`, which stand for the default
    /// interface's IPv4 and IPv6 address (with a warning).
    pub fn requested(&self, direction: Option<&(String, String)>) -> Result<Requested, String> {
        let mut notes = Vec::new();
        let mut one = |name: &str| -> Result<Option<Named>, String> {
            if name.is_empty() {
                return Ok(None);
            }
            if let Some(index) = self.find(name) {
                return Ok(Some(Named { index, v6: None }));
            }
            let v6 = match name {
                "internal" => false,
                "external" => true,
                _ => return self.named(Some(name)).map(|index| Some(Named { index, v6: None })),
            };
            let note = format!(
                "direction '{name}': no interface has that name; the default interface's {} address serves \
                 (rtpengine's obsolete reading; 'address family' says it today)",
                if v6 { "IPv6" } else { "IPv4" }
            );
            if !notes.contains(&note) {
                notes.push(note);
            }
            Ok(Some(Named { index: 0, v6: Some(v6) }))
        };
        let (from, to) = match direction {
            Some((f, t)) => (one(f)?, one(t)?),
            None => (None, None),
        };
        Ok((from, to, notes))
    }

    /// Where a leg on interface `index` binds for a peer of family `v6`:
    /// the interface's first address of that family, else its first.
    pub fn bind(&self, index: usize, v6: bool) -> Binding {
        let i = &self.0[index.min(self.0.len() - 1)];
        let addr = i.addrs.iter().copied().find(|a| a.local.is_ipv6() == v6).unwrap_or(i.addrs[0]);
        Binding { interface: index.min(self.0.len() - 1), addr }
    }

    /// The interface and address that hold the local address `ip` (a leg
    /// kept across a restart).
    pub fn holding(&self, ip: IpAddr) -> Option<Binding> {
        self.0
            .iter()
            .enumerate()
            .find_map(|(k, i)| i.addrs.iter().find(|a| a.local == ip).map(|&addr| Binding { interface: k, addr }))
    }
}

/// A name from a request, cut for an error message.
fn clip(s: &str) -> String {
    s.chars().take(40).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn specs_in_rtpengine_syntax() {
        let s = Spec::parse("priv/10.0.0.5").unwrap();
        assert_eq!((s.name.as_str(), s.addr.local, s.addr.advertised), ("priv", ip("10.0.0.5"), ip("10.0.0.5")));
        let s = Spec::parse("pub/10.0.1.5!203.0.113.5").unwrap();
        assert_eq!((s.name.as_str(), s.addr.local, s.addr.advertised), ("pub", ip("10.0.1.5"), ip("203.0.113.5")));
        let s = Spec::parse("192.0.2.1").unwrap();
        assert_eq!(s.name, DEFAULT);
        let s = Spec::parse("v6/2001:db8::1!2001:db8::99").unwrap();
        assert_eq!(s.addr.advertised, ip("2001:db8::99"));
        for bad in [
            "",
            "priv/",
            "/10.0.0.1",
            "priv/10.0.0.x",
            "priv/0.0.0.0",
            "priv/224.0.0.1",
            "priv/10.0.0.1!::1",
            "pr iv/10.0.0.1",
            "priv/10.0.0.1!",
            "eth0",
        ] {
            assert!(Spec::parse(bad).is_err(), "{bad:?} accepted");
        }
        let long = format!("{}/10.0.0.1", "n".repeat(33));
        assert!(Spec::parse(&long).is_err());
    }

    #[test]
    fn addresses_gather_under_their_name_and_the_first_is_the_default() {
        let specs: Vec<Spec> = ["priv/10.0.0.5", "pub/10.0.1.5!203.0.113.5", "priv/fd00::5", "pub/2001:db8::5"]
            .iter()
            .map(|s| Spec::parse(s).unwrap())
            .collect();
        let all = Interfaces::new(&specs, &[("pub".into(), (40_000, 40_999))]).unwrap();
        let names: Vec<&str> = all.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["priv", "pub"]);
        assert_eq!(all.named(None), Ok(0));
        assert_eq!(all.named(Some("")), Ok(0));
        assert_eq!(all.named(Some("pub")), Ok(1));
        let e = all.named(Some("dmz")).unwrap_err();
        assert!(e.contains("'dmz'") && e.contains("priv, pub"), "{e}");
        assert_eq!(all.get(1).unwrap().ports, Some((40_000, 40_999)));
        assert_eq!(all.get(0).unwrap().ports, None);
        // The family the peer speaks, else the interface's first address.
        assert_eq!(all.bind(1, false).addr.advertised, ip("203.0.113.5"));
        assert_eq!(all.bind(1, true).addr.local, ip("2001:db8::5"));
        let v4_only = Interfaces::new(&[Spec::parse("x/192.0.2.1").unwrap()], &[]).unwrap();
        assert_eq!(v4_only.bind(0, true).addr.local, ip("192.0.2.1"));
        assert_eq!(all.holding(ip("fd00::5")).map(|b| b.interface), Some(0));
        assert_eq!(all.holding(ip("192.0.2.9")), None);
    }

    #[test]
    fn direction_names_the_sender_side_first() {
        let specs: Vec<Spec> =
            ["priv/10.0.0.5", "pub/10.0.1.5!203.0.113.5"].iter().map(|s| Spec::parse(s).unwrap()).collect();
        let all = Interfaces::new(&specs, &[]).unwrap();
        let d = |a: &str, b: &str| Some((a.to_string(), b.to_string()));
        let (from, to, notes) = all.requested(d("priv", "pub").as_ref()).unwrap();
        assert_eq!((from.map(|n| n.index), to.map(|n| n.index), notes.len()), (Some(0), Some(1), 0));
        let (from, to, _) = all.requested(d("", "pub").as_ref()).unwrap();
        assert_eq!((from, to.map(|n| n.index)), (None, Some(1)));
        assert_eq!(all.requested(None).unwrap(), (None, None, Vec::new()));
        let e = all.requested(d("priv", "dmz").as_ref()).unwrap_err();
        assert!(e.contains("unknown interface 'dmz'") && e.contains("priv, pub"), "{e}");
        // The obsolete names, where no interface is called so.
        let (from, to, notes) = all.requested(d("internal", "external").as_ref()).unwrap();
        assert_eq!(from, Some(Named { index: 0, v6: Some(false) }));
        assert_eq!(to, Some(Named { index: 0, v6: Some(true) }));
        assert_eq!(notes.len(), 2);
        let named = Interfaces::new(&[Spec::parse("internal/10.0.0.7").unwrap()], &[]).unwrap();
        assert_eq!(named.requested(d("internal", "").as_ref()).unwrap().0, Some(Named { index: 0, v6: None }));
    }

    #[test]
    fn refused_sets() {
        assert!(Interfaces::new(&[], &[]).is_err());
        let twice = [Spec::parse("a/10.0.0.1").unwrap(), Spec::parse("b/10.0.0.1").unwrap()];
        assert!(Interfaces::new(&twice, &[]).is_err());
        let one = [Spec::parse("a/10.0.0.1").unwrap()];
        assert!(Interfaces::new(&one, &[("b".into(), (1000, 2000))]).is_err());
        assert!(Interfaces::new(&one, &[("a".into(), (2000, 1000))]).is_err());
    }
}
