//! This machine's own addresses: every address of every network interface
//! (loopback, private and public ones alike), read with `getifaddrs(3)` at
//! the moment of asking, so an address added after start-up counts too. The
//! web tools refuse to connect to any of them ([`super::ssrf`]): a request
//! for the model must never reach a service of the machine vigil runs on
//! through its public address.
//!
//! It only reads the interface list; it never opens a socket.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Which addresses count as this machine's.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum OwnAddresses {
    /// The interfaces' addresses, read at every check.
    #[default]
    Interfaces,
    /// A fixed list (tests).
    Fixed(Vec<IpAddr>),
}

impl OwnAddresses {
    /// Whether `ip` is one of this machine's addresses (the unspecified
    /// address, which connects to this machine, included). IPv4-mapped IPv6
    /// forms count as their IPv4 address.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        if ip.is_unspecified() {
            return true;
        }
        match self {
            OwnAddresses::Interfaces => interface_addresses().contains(&ip),
            OwnAddresses::Fixed(list) => list.iter().any(|a| a.to_canonical() == ip),
        }
    }
}

/// Every address of every interface of this machine (empty if the list
/// cannot be read).
pub fn interface_addresses() -> Vec<IpAddr> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `head` with a list it allocates; it is freed
    // below with freeifaddrs and not used after.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return Vec::new();
    }
    let mut found = Vec::new();
    let mut cur = head;
    while !cur.is_null() {
        // SAFETY: `cur` is a node of the list getifaddrs returned, alive
        // until freeifaddrs.
        let entry = unsafe { &*cur };
        // SAFETY: `ifa_addr` is null or points to a sockaddr of the family
        // it names, inside the same list.
        if let Some(ip) = unsafe { sockaddr_ip(entry.ifa_addr) } {
            found.push(ip);
        }
        cur = entry.ifa_next;
    }
    // SAFETY: `head` came from getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(head) };
    found
}

/// The address in a `sockaddr`, for IPv4 and IPv6.
///
/// # Safety
/// `sa` is null or points to a valid `sockaddr` whose family says its size.
unsafe fn sockaddr_ip(sa: *const libc::sockaddr) -> Option<IpAddr> {
    if sa.is_null() {
        return None;
    }
    // SAFETY: the caller's contract; the family field is read first and
    // decides which larger struct the pointer may be read as.
    unsafe {
        match i32::from((*sa).sa_family) {
            libc::AF_INET => {
                let v4 = &*(sa as *const libc::sockaddr_in);
                Some(IpAddr::V4(Ipv4Addr::from(u32::from_be(v4.sin_addr.s_addr))))
            }
            libc::AF_INET6 => {
                let v6 = &*(sa as *const libc::sockaddr_in6);
                Some(IpAddr::V6(Ipv6Addr::from(v6.sin6_addr.s6_addr)))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_and_unspecified_are_this_machine() {
        let own = OwnAddresses::Interfaces;
        assert!(interface_addresses().contains(&IpAddr::from([127, 0, 0, 1])));
        assert!(own.contains("127.0.0.1".parse().unwrap()));
        assert!(own.contains("0.0.0.0".parse().unwrap()));
        assert!(own.contains("::".parse().unwrap()));
        assert!(!own.contains("93.184.216.34".parse().unwrap()));
        let fixed = OwnAddresses::Fixed(vec!["93.184.216.34".parse().unwrap()]);
        assert!(fixed.contains("::ffff:93.184.216.34".parse().unwrap()));
    }
}
