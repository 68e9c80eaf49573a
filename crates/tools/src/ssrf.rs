//! SSRF protection for the web tools: which URLs, host names and addresses
//! an HTTP request made for the model may reach. This machine's own
//! addresses ([`super::own_addrs`]: every interface's, public ones included,
//! and the unspecified address) are never reached, whatever
//! `allow_private` says; loopback stays refused unless `allow_private`.
//!
//! Checks happen at three points: on the URL as parsed (scheme, userinfo,
//! localhost names, allow/deny domain lists, literal IPs — which never reach
//! DNS), in [`FilteringResolver`] on every address DNS (or a static hosts
//! override) answers, so only checked addresses are ever connected to, and
//! again on the peer address of the response. Redirects are not followed by
//! the HTTP client; callers re-check every hop with [`SsrfPolicy::check_url`].
//! This module must never let an address through that it has not classified.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use super::own_addrs::OwnAddresses;

/// Why an address is refused, if it is.
pub fn ip_refusal(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => v4_refusal(v4),
        IpAddr::V6(v6) => v6_refusal(v6),
    }
}

fn in_v4(ip: Ipv4Addr, net: [u8; 4], bits: u32) -> bool {
    let mask = if bits == 0 {
        0
    } else {
        u32::MAX << (32 - bits)
    };
    (u32::from(ip) & mask) == (u32::from(Ipv4Addr::from(net)) & mask)
}

fn v4_refusal(ip: Ipv4Addr) -> Option<&'static str> {
    const NETS: &[([u8; 4], u32, &str)] = &[
        ([0, 0, 0, 0], 8, "an unspecified/this-network address"),
        ([127, 0, 0, 0], 8, "a loopback address"),
        ([10, 0, 0, 0], 8, "a private address"),
        ([172, 16, 0, 0], 12, "a private address"),
        ([192, 168, 0, 0], 16, "a private address"),
        ([169, 254, 0, 0], 16, "a link-local address"),
        ([100, 64, 0, 0], 10, "a carrier-grade NAT address"),
        ([192, 0, 0, 0], 24, "an IETF protocol address"),
        ([192, 0, 2, 0], 24, "a documentation address"),
        ([198, 51, 100, 0], 24, "a documentation address"),
        ([203, 0, 113, 0], 24, "a documentation address"),
        ([198, 18, 0, 0], 15, "a benchmarking address"),
        ([192, 88, 99, 0], 24, "a 6to4 relay address"),
        ([224, 0, 0, 0], 4, "a multicast address"),
        ([240, 0, 0, 0], 4, "a reserved or broadcast address"),
    ];
    NETS.iter()
        .find(|(net, bits, _)| in_v4(ip, *net, *bits))
        .map(|(_, _, why)| *why)
}

fn v6_refusal(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    if ip.is_unspecified() {
        return Some("an unspecified address");
    }
    if ip.is_loopback() {
        return Some("a loopback address");
    }
    // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (compatible) smuggle IPv4.
    if s[..5] == [0; 5] && (s[5] == 0xffff || s[5] == 0) {
        return Some("an IPv4-mapped or IPv4-compatible IPv6 address");
    }
    let checks: &[(u16, u16, &str)] = &[
        (0xfe00, 0xfc00, "a unique local (fc00::/7) address"),
        (0xffc0, 0xfe80, "a link-local address"),
        (0xffc0, 0xfec0, "a site-local address"),
        (0xff00, 0xff00, "a multicast address"),
    ];
    if let Some((_, _, why)) = checks.iter().find(|(mask, net, _)| s[0] & mask == *net) {
        return Some(why);
    }
    if s[0] == 0x2001 && s[1] == 0x0db8 {
        return Some("a documentation address");
    }
    if s[0] == 0x2001 && s[1] == 0 {
        return Some("a Teredo address");
    }
    if s[0] == 0x0064 && s[1] == 0xff9b {
        return Some("a NAT64 address");
    }
    if s[0] == 0x0100 && s[1..4] == [0, 0, 0] {
        return Some("a discard-only address");
    }
    if s[0] == 0x2002 {
        // 6to4 embeds an IPv4 address in segments 1-2.
        let v4 = Ipv4Addr::new((s[1] >> 8) as u8, s[1] as u8, (s[2] >> 8) as u8, s[2] as u8);
        if v4_refusal(v4).is_some() {
            return Some("a 6to4 address embedding a forbidden IPv4 address");
        }
    }
    None
}

/// Host names that always mean this machine.
pub fn is_localhost_name(host: &str) -> bool {
    let h = host.trim_end_matches('.').to_ascii_lowercase();
    h == "localhost"
        || h.ends_with(".localhost")
        || h == "localhost.localdomain"
        || h == "ip6-localhost"
        || h == "ip6-loopback"
}

/// `host` is `domain` or a subdomain of it (case and trailing dots ignored).
pub fn domain_matches(host: &str, domain: &str) -> bool {
    let h = host.trim_end_matches('.').to_ascii_lowercase();
    let d = domain
        .trim()
        .trim_end_matches('.')
        .trim_start_matches('.')
        .to_ascii_lowercase();
    !d.is_empty() && (h == d || h.ends_with(&format!(".{d}")))
}

/// Where web requests may go.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SsrfPolicy {
    /// Allow private, loopback and other internal addresses (operator opt-in
    /// for internal networks). Localhost names stay refused unless allowed
    /// endpoints say otherwise.
    pub allow_private: bool,
    /// Exact `ip:port` endpoints exempt from the address checks (an explicit
    /// opt-in, e.g. one internal service or a test server).
    pub allow_endpoints: Vec<SocketAddr>,
    /// When non-empty, only these domains (and their subdomains).
    pub allow_domains: Vec<String>,
    /// Never these domains (and their subdomains).
    pub deny_domains: Vec<String>,
    /// Static name → address overrides, used instead of DNS and filtered
    /// like DNS answers (like /etc/hosts).
    pub hosts: Vec<(String, IpAddr)>,
    /// Which addresses are this machine's (refused; loopback aside).
    pub own: OwnAddresses,
}

impl SsrfPolicy {
    /// Check one address about to be connected to.
    pub fn check_addr(&self, addr: SocketAddr) -> Result<(), String> {
        if self.allow_endpoints.contains(&addr) {
            return Ok(());
        }
        self.check_ip(addr.ip())
    }

    /// Check an address on any port: never one of this machine's own
    /// (loopback aside, refused below unless `allow_private`), then the
    /// internal ranges unless `allow_private`.
    pub fn check_ip(&self, ip: IpAddr) -> Result<(), String> {
        if !ip.to_canonical().is_loopback() && self.own.contains(ip) {
            return Err(format!("{ip} is an address of this machine"));
        }
        if self.allow_private {
            return Ok(());
        }
        match ip_refusal(ip) {
            Some(why) => Err(format!("{ip} is {why}")),
            None => Ok(()),
        }
    }

    /// Check a URL before any request: scheme, userinfo, host name rules,
    /// domain lists, and literal addresses (which skip DNS).
    pub fn check_url(&self, url: &Url) -> Result<(), String> {
        match url.scheme() {
            "http" | "https" => {}
            other => {
                return Err(format!(
                    "only http and https URLs are allowed, not {other}:"
                ));
            }
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err("URLs with credentials (user@host) are not allowed".into());
        }
        let port = url.port_or_known_default().unwrap_or(80);
        // The parser has already turned decimal, octal, hex and short IPv4
        // forms into dotted quads, and IPv6 literals are bracketed.
        let Some(host) = url.host_str().filter(|h| !h.is_empty()) else {
            return Err("the URL has no host".into());
        };
        if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            let ip: Ipv6Addr = inner
                .parse()
                .map_err(|_| format!("{host} is not a valid IPv6 address"))?;
            return self.check_literal(IpAddr::V6(ip), port, inner);
        }
        if let Ok(ip) = host.parse::<Ipv4Addr>() {
            return self.check_literal(IpAddr::V4(ip), port, host);
        }
        self.check_domain(host)
    }

    fn check_literal(&self, ip: IpAddr, port: u16, shown: &str) -> Result<(), String> {
        self.check_lists(shown)?;
        self.check_addr(SocketAddr::new(ip, port))
    }

    fn check_domain(&self, host: &str) -> Result<(), String> {
        if is_localhost_name(host) {
            return Err(format!("{host} names this machine"));
        }
        // A domain the URL parser did not turn into an address but that
        // still parses as one (defence in depth).
        if let Ok(ip) = host.trim_end_matches('.').parse::<IpAddr>() {
            self.check_ip(ip)?;
        }
        self.check_lists(host)
    }

    fn check_lists(&self, host: &str) -> Result<(), String> {
        if let Some(d) = self.deny_domains.iter().find(|d| domain_matches(host, d)) {
            return Err(format!("{host} is on the deny list ({d})"));
        }
        if !self.allow_domains.is_empty()
            && !self.allow_domains.iter().any(|d| domain_matches(host, d))
        {
            return Err(format!(
                "{host} is not on the allow list ({})",
                self.allow_domains.join(", ")
            ));
        }
        Ok(())
    }

    /// The DNS resolver enforcing this policy, for `reqwest`.
    pub fn resolver(&self) -> Arc<FilteringResolver> {
        Arc::new(FilteringResolver {
            policy: self.clone(),
            hosts: self
                .hosts
                .iter()
                .map(|(n, ip)| (n.trim_end_matches('.').to_ascii_lowercase(), *ip))
                .fold(HashMap::new(), |mut m, (n, ip)| {
                    m.entry(n).or_insert_with(Vec::new).push(ip);
                    m
                }),
        })
    }
}

/// The resolver's refusal, recognisable in an HTTP error's source chain.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("refused: {0}")]
pub struct Refusal(pub String);

/// Resolves names (static overrides first, then the system resolver) and
/// drops every address the policy refuses; a name left with none fails.
pub struct FilteringResolver {
    policy: SsrfPolicy,
    hosts: HashMap<String, Vec<IpAddr>>,
}

impl FilteringResolver {
    /// Resolve and filter one name (port 0: ports are checked per endpoint
    /// only for literal addresses).
    pub async fn lookup(&self, name: &str) -> Result<Vec<SocketAddr>, String> {
        if is_localhost_name(name) {
            return Err(format!("{name} names this machine"));
        }
        let key = name.trim_end_matches('.').to_ascii_lowercase();
        let found: Vec<SocketAddr> = match self.hosts.get(&key) {
            Some(ips) => ips.iter().map(|ip| SocketAddr::new(*ip, 0)).collect(),
            None => tokio::net::lookup_host((name, 0))
                .await
                .map_err(|e| format!("cannot resolve {name}: {e}"))?
                .collect(),
        };
        let mut refused = Vec::new();
        let allowed: Vec<SocketAddr> = found
            .into_iter()
            .filter(|a| match self.policy.check_ip(a.ip()) {
                Ok(()) => true,
                Err(why) => {
                    refused.push(why);
                    false
                }
            })
            .collect();
        if allowed.is_empty() {
            return Err(if refused.is_empty() {
                format!("{name} did not resolve to any address")
            } else {
                format!(
                    "{name} resolves only to forbidden addresses ({})",
                    refused.join(", ")
                )
            });
        }
        Ok(allowed)
    }
}

impl Resolve for FilteringResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let this = FilteringResolver {
            policy: self.policy.clone(),
            hosts: self.hosts.clone(),
        };
        Box::pin(async move {
            match this.lookup(name.as_str()).await {
                Ok(addrs) => Ok(Box::new(addrs.into_iter()) as Addrs),
                Err(e) => Err(Box::new(Refusal(e)) as Box<dyn std::error::Error + Send + Sync>),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_addresses_pass_internal_ones_do_not() {
        for ok in [
            "93.184.216.34",
            "1.1.1.1",
            "2606:4700::1111",
            "2a00:1450::1",
            "2002:5db8:d822::1",
        ] {
            assert_eq!(ip_refusal(ok.parse().unwrap()), None, "{ok}");
        }
        for bad in [
            "127.0.0.1",
            "10.1.2.3",
            "172.31.255.255",
            "192.168.0.1",
            "169.254.169.254",
            "100.127.0.1",
            "0.1.2.3",
            "224.1.1.1",
            "255.255.255.255",
            "240.0.0.1",
            "192.0.2.7",
            "198.19.0.1",
            "::1",
            "::",
            "::ffff:8.8.8.8",
            "fd00::1",
            "fe80::1",
            "fec0::1",
            "ff05::2",
            "2001:db8::1",
            "2001::1",
            "64:ff9b::1.2.3.4",
            "2002:a00:1::",
        ] {
            assert!(ip_refusal(bad.parse().unwrap()).is_some(), "{bad}");
        }
        // 172.32/12 boundary is public.
        assert_eq!(ip_refusal("172.32.0.1".parse().unwrap()), None);
    }

    #[test]
    fn names_and_lists() {
        for n in ["localhost", "LOCALHOST.", "a.b.localhost", "ip6-loopback"] {
            assert!(is_localhost_name(n), "{n}");
        }
        assert!(!is_localhost_name("localhost.example.com"));
        assert!(domain_matches("Docs.Example.com.", "example.com"));
        assert!(!domain_matches("badexample.com", "example.com"));
        let p = SsrfPolicy {
            allow_endpoints: vec!["127.0.0.1:9".parse().unwrap()],
            ..Default::default()
        };
        assert!(p.check_addr("127.0.0.1:9".parse().unwrap()).is_ok());
        assert!(p.check_addr("127.0.0.1:10".parse().unwrap()).is_err());
    }

    #[test]
    fn this_machines_own_addresses_are_refused_even_when_private_ones_are_allowed() {
        let public: IpAddr = "93.184.216.34".parse().unwrap();
        let p = SsrfPolicy {
            allow_private: true,
            own: OwnAddresses::Fixed(vec![public, "10.0.0.5".parse().unwrap()]),
            ..Default::default()
        };
        for own in [
            "93.184.216.34",
            "::ffff:93.184.216.34",
            "10.0.0.5",
            "0.0.0.0",
            "::",
        ] {
            let e = p.check_ip(own.parse().unwrap()).unwrap_err();
            assert!(e.contains("this machine"), "{own}: {e}");
        }
        // Loopback follows allow_private, another private address passes.
        assert!(p.check_ip("127.0.0.1".parse().unwrap()).is_ok());
        assert!(p.check_ip("10.0.0.6".parse().unwrap()).is_ok());
        let url = |u: &str| Url::parse(u).unwrap();
        assert!(p.check_url(&url("http://93.184.216.34:8080/x")).is_err());
        assert!(p.check_url(&url("http://[::ffff:5db8:d822]/")).is_err());
        // An exact endpoint stays an explicit opt-in.
        let opened = SsrfPolicy {
            allow_endpoints: vec![SocketAddr::new(public, 80)],
            ..p.clone()
        };
        assert!(opened.check_addr(SocketAddr::new(public, 80)).is_ok());
        assert!(opened.check_addr(SocketAddr::new(public, 81)).is_err());
    }

    #[tokio::test]
    async fn the_resolver_drops_this_machines_addresses() {
        let own: IpAddr = "93.184.216.34".parse().unwrap();
        let p = SsrfPolicy {
            own: OwnAddresses::Fixed(vec![own]),
            hosts: vec![
                ("me.test".into(), own),
                ("both.test".into(), own),
                ("both.test".into(), "1.1.1.1".parse().unwrap()),
            ],
            ..Default::default()
        };
        let r = p.resolver();
        let e = r.lookup("me.test").await.unwrap_err();
        assert!(e.contains("this machine"), "{e}");
        let got = r.lookup("both.test").await.unwrap();
        assert_eq!(got, vec![SocketAddr::new("1.1.1.1".parse().unwrap(), 0)]);
    }
}
