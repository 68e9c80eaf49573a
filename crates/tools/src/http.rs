//! Where every HTTP client of vigil is made (the model dialects, the model
//! list, hooks, telemetry, `fetch_url`, MCP over HTTP): reqwest with rustls,
//! whose crypto provider (ring) is installed for the process here, once,
//! before the first client. A client built any other way would find no
//! provider and panic; this module never sends a request itself.

use std::sync::Once;

/// Install ring as the process's rustls provider (once; a provider someone
/// installed first stays).
pub fn ensure_tls_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // `Err`: a provider is already installed, which is all we need.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// A client builder with the TLS provider in place.
pub fn client_builder() -> reqwest::ClientBuilder {
    ensure_tls_provider();
    reqwest::Client::builder()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_builds_and_the_provider_is_ring() {
        client_builder().build().expect("a client");
        ensure_tls_provider();
        let suites = |p: &rustls::crypto::CryptoProvider| -> Vec<_> {
            p.cipher_suites.iter().map(|s| s.suite()).collect()
        };
        let provider = rustls::crypto::CryptoProvider::get_default().expect("installed");
        let ring = rustls::crypto::ring::default_provider();
        assert_eq!(suites(provider), suites(&ring), "ring's suites");
    }
}
