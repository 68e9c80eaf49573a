//! `fetch_url` against real HTTP servers on loopback, and the SSRF suite:
//! every vector is aimed at a live loopback server holding a secret and must
//! be refused under the default policy.

use super::http_support;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use http_support::{Reply, serve, serve_fixed};
use serde_json::{Value, json};
use vigil::tools::fetch::{FetchConfig, FetchUrl};
use vigil::tools::ssrf::SsrfPolicy;
use vigil::tools::{FailureClass, ToolContext, ToolRegistry, ToolRun};

const SECRET: &str = "SECRET-BODY-7f3a";

fn registry(tool: FetchUrl) -> ToolRegistry {
    let mut r = ToolRegistry::new();
    r.register(tool);
    r
}

/// The defaults without the operator's gate: these tests are about what a
/// fetch reaches (the gate has its own tests below).
fn ungated() -> FetchConfig {
    FetchConfig {
        confirm: false,
        ..Default::default()
    }
}

/// A config under which exactly `endpoints` stand in for public servers.
fn allowing(endpoints: &[SocketAddr]) -> FetchConfig {
    FetchConfig {
        allow_endpoints: endpoints.to_vec(),
        timeout: Duration::from_secs(3),
        ..ungated()
    }
}

async fn fetch(r: &ToolRegistry, url: &str) -> ToolRun {
    r.execute("fetch_url", &json!({"url": url}).to_string())
        .await
}

fn result(run: &ToolRun) -> Value {
    assert!(run.ok(), "{}", run.model_text);
    let v: Value = serde_json::from_str(&run.model_text).unwrap();
    v["result"].clone()
}

#[tokio::test]
async fn fetches_status_content_type_and_body() {
    let addr = serve_fixed(Reply::ok("text/plain; charset=utf-8", "héllo")).await;
    let r = registry(FetchUrl::new(allowing(&[addr])));
    let run = fetch(&r, &format!("http://{addr}/page")).await;
    let v = result(&run);
    assert_eq!(v["status"], 200);
    assert_eq!(v["content_type"], "text/plain; charset=utf-8");
    assert_eq!(v["body"], "héllo");
    assert_eq!(v["url"], format!("http://{addr}/page"));
    let tl = run.timeline();
    assert!(tl.starts_with("GET ") && tl.contains("200"), "{tl}");
    // Error statuses are results, not failures.
    let missing = serve_fixed(Reply {
        status: 404,
        ..Reply::ok("text/html", "nope")
    })
    .await;
    let r = registry(FetchUrl::new(allowing(&[missing])));
    assert_eq!(
        result(&fetch(&r, &format!("http://{missing}/")).await)["status"],
        404
    );
}

#[tokio::test]
async fn long_bodies_are_cut_to_8000_chars_and_spilled() {
    let body = "x".repeat(20_000);
    let addr = serve_fixed(Reply::ok("text/plain", body.clone())).await;
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolContext::default().with_spill_dir(dir.path().to_path_buf());
    let r = registry(FetchUrl::new(allowing(&[addr])));
    let run = r
        .execute_with_context(
            "fetch_url",
            &json!({"url": format!("http://{addr}/")}).to_string(),
            &ctx,
        )
        .await;
    let v = result(&run);
    let shown = v["body"].as_str().unwrap();
    assert!(shown.starts_with(&"x".repeat(8000)));
    assert!(!shown.starts_with(&"x".repeat(8001)));
    assert!(shown.contains("...[truncated]"));
    let out = run.output.unwrap();
    assert!(out.truncated);
    assert_eq!(std::fs::read_to_string(&out.spill[0]).unwrap(), body);
}

#[tokio::test]
async fn huge_bodies_stop_at_the_byte_limit() {
    let addr = serve_fixed(Reply::ok(
        "application/octet-stream",
        vec![b'a'; 8 * 1024 * 1024],
    ))
    .await;
    let r = registry(FetchUrl::new(FetchConfig {
        max_bytes: 64 * 1024,
        ..allowing(&[addr])
    }));
    let run = fetch(&r, &format!("http://{addr}/")).await;
    let v = result(&run);
    assert!(v["note"].as_str().unwrap().contains("65536 bytes"), "{v}");
    assert!(
        run.timeline().contains("(65536 bytes)"),
        "{}",
        run.timeline()
    );
}

#[tokio::test]
async fn slow_servers_time_out() {
    let addr = serve_fixed(Reply::slow(Duration::from_secs(300))).await;
    let r = registry(FetchUrl::new(FetchConfig {
        timeout: Duration::from_millis(500),
        ..allowing(&[addr])
    }));
    let start = Instant::now();
    let run = fetch(&r, &format!("http://{addr}/")).await;
    assert!(start.elapsed() < Duration::from_secs(60));
    assert_eq!(run.class, Some(FailureClass::Timeout), "{}", run.model_text);
}

#[tokio::test]
async fn redirects_between_allowed_servers_are_followed() {
    let end = serve_fixed(Reply::ok("text/plain", "arrived")).await;
    let to = format!("http://{end}/final");
    let start = serve_fixed(Reply::redirect(&to)).await;
    let r = registry(FetchUrl::new(allowing(&[start, end])));
    let v = result(&fetch(&r, &format!("http://{start}/go")).await);
    assert_eq!(v["body"], "arrived");
    assert_eq!(v["url"], to);
    // Endless redirects stop.
    let lp = serve(Arc::new(|_| Reply::redirect("/again"))).await;
    let r = registry(FetchUrl::new(allowing(&[lp])));
    let run = fetch(&r, &format!("http://{lp}/")).await;
    assert!(
        run.model_text.contains("too many redirects"),
        "{}",
        run.model_text
    );
}

#[tokio::test]
async fn domain_lists_apply() {
    let addr = serve_fixed(Reply::ok("text/plain", "internal")).await;
    let policy = |allow: &[&str], deny: &[&str]| SsrfPolicy {
        allow_private: true,
        allow_domains: allow.iter().map(|s| s.to_string()).collect(),
        deny_domains: deny.iter().map(|s| s.to_string()).collect(),
        hosts: vec![("docs.corp.test".into(), IpAddr::from([127, 0, 0, 1]))],
        ..Default::default()
    };
    let url = format!("http://docs.corp.test:{}/", addr.port());
    let ok = registry(FetchUrl::new(ungated()).with_policy(policy(&[], &[])));
    assert_eq!(result(&fetch(&ok, &url).await)["body"], "internal");
    for (allow, deny) in [
        (&[][..], &["corp.test"][..]),
        (&["example.org"][..], &[][..]),
    ] {
        let r = registry(FetchUrl::new(ungated()).with_policy(policy(allow, deny)));
        let run = fetch(&r, &url).await;
        assert_eq!(
            run.class,
            Some(FailureClass::PermissionDenied),
            "{}",
            run.model_text
        );
    }
}

#[test]
fn a_fetch_asks_unless_the_operator_lets_its_host_through() {
    use vigil::tools::Tool;
    let gate = |cfg: FetchConfig, url: &str| FetchUrl::new(cfg).gate(&json!({"url": url}));
    let g = gate(FetchConfig::default(), "https://example.com/?d=c2VjcmV0").expect("asked");
    assert_eq!(g.action, "GET https://example.com/?d=c2VjcmV0");
    assert_eq!(g.editable_field.as_deref(), Some("url"));
    let listed = || FetchConfig {
        unasked_hosts: vec!["docs.rs".into(), "*.rust-lang.org".into()],
        ..Default::default()
    };
    for url in [
        "https://docs.rs/x",
        "https://DOCS.RS./x",
        "https://blog.rust-lang.org/",
    ] {
        assert!(gate(listed(), url).is_none(), "{url}");
    }
    for url in [
        "https://evil.docs.rs/",
        "https://docs.rs.evil.test/",
        "https://rust-lang.org/",
        "https://evil.test/?u=docs.rs",
    ] {
        assert!(gate(listed(), url).is_some(), "{url}");
    }
    assert!(gate(ungated(), "https://example.com/").is_none());
    // A URL that does not parse fails before anything is sent.
    assert!(gate(listed(), "not a url").is_none());
}

/// An unasked fetch (its host listed) follows a redirect only to another
/// listed host; an operator-approved one follows it.
#[tokio::test]
async fn an_unasked_fetch_is_not_redirected_to_a_host_nobody_allowed() {
    let hits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = hits.clone();
    let elsewhere = serve(Arc::new(move |_| {
        seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Reply::ok("text/plain", SECRET)
    }))
    .await;
    // `localhost` names are refused outright, so the other host is an
    // endpoint by address; the listed one is reached by a hosts override.
    let to = format!("http://{elsewhere}/?d=token");
    let start = serve_fixed(Reply::redirect(&to)).await;
    let cfg = FetchConfig {
        allow_private: true,
        unasked_hosts: vec!["docs.test".into()],
        timeout: Duration::from_secs(3),
        ..Default::default()
    };
    let policy = SsrfPolicy {
        allow_private: true,
        hosts: vec![("docs.test".into(), start.ip())],
        ..Default::default()
    };
    let url = format!("http://docs.test:{}/go", start.port());
    let tool = || FetchUrl::new(cfg.clone()).with_policy(policy.clone());
    let unasked = registry(tool());
    let run = fetch(&unasked, &url).await;
    assert_eq!(
        run.class,
        Some(FailureClass::PermissionDenied),
        "{}",
        run.model_text
    );
    assert!(
        run.model_text.contains("fetch_unasked_hosts"),
        "{}",
        run.model_text
    );
    assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 0);
    // The operator approved a call to a host not listed: its redirect is
    // followed.
    let gated = FetchConfig {
        unasked_hosts: Vec::new(),
        ..cfg.clone()
    };
    let mut asked = registry(FetchUrl::new(gated).with_policy(policy.clone()));
    asked.set_approver(Arc::new(vigil::policy::gate::FixedApprover(
        vigil_protocol::approval::ApprovalDecision::ApproveOnce,
    )));
    assert_eq!(result(&fetch(&asked, &url).await)["body"], SECRET);
    // A gated host (not listed) is asked for: with nobody to ask, nothing.
    let run = fetch(&unasked, &format!("http://{elsewhere}/?d=token")).await;
    assert!(run.denied(), "{}", run.model_text);
    assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 1);
}

/// Every address of this machine's interfaces but loopback is refused,
/// even with `allow_private` (a real server bound on it gets nothing).
#[tokio::test]
async fn this_machines_own_addresses_are_refused() {
    let Some((addr, hits)) = serve_on_own_address().await else {
        eprintln!("no non-loopback interface address to bind: skipped");
        return;
    };
    let cfg = FetchConfig {
        allow_private: true,
        timeout: Duration::from_secs(3),
        ..ungated()
    };
    let policy = SsrfPolicy {
        allow_private: true,
        hosts: vec![("me.test".into(), addr.ip())],
        ..Default::default()
    };
    let r = registry(FetchUrl::new(cfg).with_policy(policy));
    let host = match addr.ip() {
        IpAddr::V6(ip) => format!("[{ip}]"),
        IpAddr::V4(ip) => ip.to_string(),
    };
    for url in [
        format!("http://{host}:{}/", addr.port()),
        format!("http://me.test:{}/", addr.port()),
    ] {
        let run = fetch(&r, &url).await;
        assert_eq!(
            run.class,
            Some(FailureClass::PermissionDenied),
            "{url}: {}",
            run.model_text
        );
        assert!(
            run.model_text.contains("this machine"),
            "{url}: {}",
            run.model_text
        );
    }
    assert_eq!(
        hits.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "the server was reached"
    );
}

/// A server on one of this machine's non-loopback addresses, counting its
/// requests.
async fn serve_on_own_address() -> Option<(SocketAddr, Arc<std::sync::atomic::AtomicUsize>)> {
    let ip = vigil::tools::own_addrs::interface_addresses()
        .into_iter()
        .find(|ip| {
            !ip.is_loopback()
                && !matches!(ip, IpAddr::V6(v6) if (v6.segments()[0] & 0xffc0) == 0xfe80)
        })?;
    let listener = tokio::net::TcpListener::bind((ip, 0)).await.ok()?;
    let addr = listener.local_addr().ok()?;
    let hits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = hits.clone();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            use tokio::io::AsyncWriteExt;
            let body = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{SECRET}",
                SECRET.len()
            );
            let _ = sock.write_all(body.as_bytes()).await;
        }
    });
    Some((addr, hits))
}

/// What the URL parser makes of a vector (for failure messages).
fn parsed(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(u) => format!("parsed as {u} (host {:?})", u.host_str()),
        Err(e) => format!("parse error: {e}"),
    }
}

fn assert_refused(run: &ToolRun, url: &str) {
    assert!(!run.ok(), "{url} was fetched ({})", parsed(url));
    assert!(!run.model_text.contains(SECRET), "{url} leaked the body");
    assert!(
        matches!(
            run.class,
            Some(FailureClass::PermissionDenied | FailureClass::InvalidArguments)
        ),
        "{url}: {:?} {} ({})",
        run.class,
        run.model_text,
        parsed(url)
    );
}

#[tokio::test]
async fn ssrf_vectors_are_refused_under_the_default_policy() {
    let secret = serve_fixed(Reply::ok("text/plain", SECRET)).await;
    let p = secret.port();
    let vectors: Vec<String> = [
        "http://127.0.0.1:{P}/",
        "http://2130706433:{P}/",
        "http://0177.0.0.1:{P}/",
        "http://017700000001:{P}/",
        "http://0x7f.1:{P}/",
        "http://0x7f000001:{P}/",
        "http://0x7f.0x0.0x0.0x1:{P}/",
        "http://127.1:{P}/",
        "http://127.0.1:{P}/",
        "http://127.0.0.1.:{P}/",
        "http://%31%32%37.0.0.1:{P}/",
        "http://0:{P}/",
        "http://0.0.0.0:{P}/",
        "http://[::1]:{P}/",
        "http://[0:0:0:0:0:0:0:1]:{P}/",
        "http://[::ffff:127.0.0.1]:{P}/",
        "http://[::ffff:7f00:1]:{P}/",
        "http://[::127.0.0.1]:{P}/",
        "http://[::]:{P}/",
        "http://localhost:{P}/",
        "http://localhost.:{P}/",
        "http://LOCALHOST:{P}/",
        "http://app.localhost:{P}/",
        "http://ip6-localhost:{P}/",
        "http://evil@127.0.0.1:{P}/",
        "http://user:pw@example.com/",
        "http://example.com@127.0.0.1:{P}/",
        "http://127.0.0.1:{P}#@example.com/",
        "http://127.0.0.1:{P}\\@example.com/",
        "http://10.0.0.1/",
        "http://172.16.0.1/",
        "http://192.168.1.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::ffff:169.254.169.254]/",
        "http://100.64.0.1/",
        "http://224.0.0.1/",
        "http://255.255.255.255/",
        "http://192.0.2.1/",
        "http://198.18.0.1/",
        "http://[fc00::1]/",
        "http://[fd12:3456::1]/",
        "http://[fe80::1]/",
        "http://[fe80::1%25eth0]/",
        "http://[ff02::1]/",
        "http://[2002:7f00:1::]/",
        "http://[64:ff9b::7f00:1]/",
        "file:///etc/passwd",
        "ftp://example.com/",
        "gopher://127.0.0.1:{P}/",
        "javascript:alert(1)",
    ]
    .iter()
    .map(|v| v.replace("{P}", &p.to_string()))
    .collect();
    assert!(vectors.len() >= 40);
    // Control: the secret is really there for anyone allowed to reach it.
    let ctl = registry(FetchUrl::new(allowing(&[secret])));
    assert_eq!(
        result(&fetch(&ctl, &format!("http://{secret}/")).await)["body"],
        SECRET
    );
    let r = registry(FetchUrl::new(FetchConfig {
        timeout: Duration::from_secs(3),
        ..ungated()
    }));
    for url in &vectors {
        let run = fetch(&r, url).await;
        assert_refused(&run, url);
    }
}

#[tokio::test]
async fn redirects_to_loopback_are_refused_at_every_hop() {
    let secret = serve_fixed(Reply::ok("text/plain", SECRET)).await;
    let targets = [
        format!("http://{secret}/"),
        format!("http://localhost:{}/", secret.port()),
        format!("http://[::1]:{}/", secret.port()),
        format!("http://2130706433:{}/", secret.port()),
        "http://169.254.169.254/latest/meta-data/".to_string(),
        "file:///etc/passwd".to_string(),
    ];
    for target in targets {
        // The "public" server: allowed by an exact endpoint opt-in.
        let t = target.clone();
        let public = serve(Arc::new(move |path: &str| {
            if path == "/hop" {
                Reply::redirect(&t)
            } else {
                Reply::redirect("/hop")
            }
        }))
        .await;
        let r = registry(FetchUrl::new(allowing(&[public])));
        let run = fetch(&r, &format!("http://{public}/start")).await;
        assert_refused(&run, &target);
    }
}

#[tokio::test]
async fn names_resolving_to_loopback_are_refused() {
    let secret = serve_fixed(Reply::ok("text/plain", SECRET)).await;
    // A static override stands in for a DNS record pointing at loopback.
    for ip in [
        IpAddr::from([127, 0, 0, 1]),
        "::ffff:127.0.0.1".parse().unwrap(),
    ] {
        let policy = SsrfPolicy {
            hosts: vec![("rebind.example".into(), ip)],
            ..Default::default()
        };
        let r = registry(FetchUrl::new(allowing(&[])).with_policy(policy));
        let url = format!("http://rebind.example:{}/", secret.port());
        let run = fetch(&r, &url).await;
        assert_refused(&run, &url);
        assert!(
            run.model_text.contains("forbidden addresses"),
            "{}",
            run.model_text
        );
    }
    // The real system resolver: `localhost` answers loopback, filtered there too.
    let resolver = SsrfPolicy::default().resolver();
    let e = resolver.lookup("localhost").await.unwrap_err();
    assert!(e.contains("this machine"), "{e}");
    // This machine's own hostname often resolves to 127.0.1.1 via /etc/hosts.
    let host = std::fs::read_to_string("/etc/hostname").unwrap_or_default();
    let host = host.trim();
    if !host.is_empty()
        && let Ok(addrs) = tokio::net::lookup_host((host, 0)).await
    {
        let addrs: Vec<_> = addrs.collect();
        if !addrs.is_empty()
            && addrs
                .iter()
                .all(|a| vigil::tools::ssrf::ip_refusal(a.ip()).is_some())
        {
            let e = resolver.lookup(host).await.unwrap_err();
            assert!(e.contains("forbidden addresses"), "{e}");
            let r = registry(FetchUrl::new(allowing(&[])));
            let url = format!("http://{host}:{}/", secret.port());
            assert_refused(&fetch(&r, &url).await, &url);
        }
    }
}
