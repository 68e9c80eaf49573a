//! The demo's model (`--demo`): the scripted model server from
//! `vigil-scripted`, started on loopback, only in builds with the `demo`
//! feature (the binary turns it on by default). A build without it has no
//! scripted server in it: asking for the demo there is a start error.
//!
//! It never talks to a real model server and never reads an API key.

use super::StartError;

/// The scripted server `--demo` talks to (stopped when dropped).
#[cfg(feature = "demo")]
pub type DemoServer = vigil_scripted::ScriptedServer;

/// No demo in this build (built without the `demo` feature): never made.
#[cfg(not(feature = "demo"))]
#[derive(Debug)]
pub enum DemoServer {}

/// Start the demo's scripted model server; its base URL.
#[cfg(feature = "demo")]
pub(crate) async fn start() -> Result<(DemoServer, String), StartError> {
    let server = vigil_scripted::ScriptedServer::start(vigil_scripted::Scenario::demo())
        .await
        .map_err(StartError::DemoServer)?;
    let url = server.base_url();
    Ok((server, url))
}

/// This build has no demo model.
#[cfg(not(feature = "demo"))]
pub(crate) async fn start() -> Result<(DemoServer, String), StartError> {
    Err(StartError::DemoServer(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "this vigil was built without the `demo` feature",
    )))
}

#[cfg(test)]
mod tests {
    /// Without the feature the demo is refused, saying why.
    #[cfg(not(feature = "demo"))]
    #[tokio::test]
    async fn a_build_without_the_demo_refuses_it() {
        // The Ok side holds an uninhabited type: only Err can come back.
        let Err(e) = super::start().await;
        assert!(e.to_string().contains("without the `demo` feature"), "{e}");
    }

    /// With it the scripted server answers on loopback.
    #[cfg(feature = "demo")]
    #[tokio::test]
    async fn the_demo_server_starts_on_loopback() {
        let (_server, url) = super::start().await.unwrap();
        assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    }
}
