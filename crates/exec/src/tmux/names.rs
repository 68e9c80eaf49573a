//! Names and secrets for the managed tmux layer: the owner prefix,
//! canonical session and pane names, the server selector, random hex.
//!
//! Pure functions (apart from reading the OS's randomness); they decide what
//! vigil calls its sessions and never look at a tmux server.

use super::script::sanitize;

/// The reserved name of the default pane in every managed session.
pub const SHARED: &str = "shared";

/// 16 random bytes as hex (from the OS; a hashed fallback otherwise).
pub fn random_hex() -> String {
    use std::io::Read;
    let mut b = [0u8; 16];
    let ok = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .is_ok();
    if !ok {
        use std::hash::{BuildHasher, Hasher};
        for chunk in b.chunks_mut(8) {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u128(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos())
                    .unwrap_or(0),
            );
            chunk.copy_from_slice(&h.finish().to_le_bytes()[..chunk.len()]);
        }
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// `vigil-<agent>`.
pub fn owner_prefix(agent: &str) -> String {
    let a = sanitize(agent);
    if a.is_empty() {
        "vigil".into()
    } else {
        format!("vigil-{a}")
    }
}

/// Session names always carry the owner prefix.
pub fn canonical_session(prefix: &str, name: &str) -> String {
    let n = sanitize(name.trim());
    if n == prefix || n.starts_with(&format!("{prefix}-")) {
        n
    } else {
        format!("{prefix}-{n}")
    }
}

/// Pane names: `shared` is reserved; others carry `vigil-`.
pub fn canonical_pane(name: &str) -> String {
    let n = sanitize(name.trim());
    if n == SHARED || n.starts_with("vigil-") {
        n
    } else {
        format!("vigil-{n}")
    }
}

/// `-L name`, or `-S path` when the socket contains a `/`.
pub fn server_args(socket: &str) -> Vec<String> {
    if socket.contains('/') {
        vec!["-S".into(), socket.into()]
    } else {
        vec!["-L".into(), socket.into()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_canonicalised_to_the_owner_prefix() {
        let p = owner_prefix("ops bot");
        assert_eq!(p, "vigil-ops-bot");
        assert_eq!(canonical_session(&p, "build"), "vigil-ops-bot-build");
        assert_eq!(
            canonical_session(&p, "vigil-ops-bot-build"),
            "vigil-ops-bot-build"
        );
        assert_eq!(canonical_session(&p, "vigil-ops-bot"), "vigil-ops-bot");
        assert_eq!(canonical_pane("shared"), "shared");
        assert_eq!(canonical_pane("worker 1"), "vigil-worker-1");
        assert_eq!(canonical_pane("vigil-worker-1"), "vigil-worker-1");
        assert_eq!(server_args("x"), vec!["-L", "x"]);
        assert_eq!(server_args("/tmp/s"), vec!["-S", "/tmp/s"]);
    }

    #[test]
    fn secrets_are_random() {
        let a = random_hex();
        assert_eq!(a.len(), 32);
        assert_ne!(a, random_hex());
    }
}
