//! Rows that try a channel out of the sandbox: IPC objects and keyrings,
//! sockets, terminals, FIFOs and devices.

use super::*;

// ---- IPC and keyrings -----------------------------------------------------

#[tokio::test]
async fn no_ipc_object_or_key_is_made_or_reached() {
    let before = ipc_and_keys();
    let r = reach();
    let out = boxed(&format!(
        "python3 {r} ipc; python3 {r} keys vigil-contain-root; ipcmk -Q; ipcmk -M 4096; ipcmk -S 1"
    ))
    .await;
    all_refused(&text(&out.stdout), &[], "root");
    assert_eq!(before, ipc_and_keys(), "{out:?}");
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    open_up(dir.path());
    let r = reach_in(dir.path());
    let out = nobody_boxed(
        &format!("python3 {r} ipc; python3 {r} keys vigil-contain-nobody"),
        dir.path(),
    );
    all_refused(&text(&out.stdout), &[], "nobody");
    assert_eq!(before, ipc_and_keys(), "{out:?}");
}

// ---- sockets ---------------------------------------------------------------

#[tokio::test]
async fn no_socket_reaches_an_outside_unix_socket_or_netlink_peer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let listener = UnixDatagram::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).unwrap();
    let r = reach();
    let p = path.display();
    let out = boxed(&format!(
        "python3 {r} sockets {p}; python3 {r} dgram-race {p}; ip -br link >/dev/null; echo ip=$?"
    ))
    .await;
    let said = text(&out.stdout);
    all_refused(&said, &["netlink_route", "ip"], "root");
    assert!(
        said.contains("ip=0") && said.contains("netlink_route=ok"),
        "{said}"
    );
    let mut buf = [0u8; 64];
    assert!(
        listener.recv(&mut buf).is_err(),
        "a datagram arrived: {said}"
    );
    // Control: unsandboxed the datagram arrives.
    let out = plain(&format!("python3 {r} sockets {p}")).await;
    assert!(
        text(&out.stdout).contains("socket_unix_dgram=ok"),
        "{out:?}"
    );
    assert!(listener.recv(&mut buf).is_ok());
}

// ---- terminals, FIFOs, devices --------------------------------------------

#[tokio::test]
async fn no_terminal_fifo_or_device_outside_is_opened() {
    let (master, _slave, pts) = pty();
    let size = winsize(&master);
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    std::fs::set_permissions(&fifo, std::fs::Permissions::from_mode(0o666)).unwrap();
    // SAFETY: opening the test's own FIFO, non-blocking, for reading.
    let reader = unsafe {
        let p = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        OwnedFd::from_raw_fd(libc::open(p.as_ptr(), libc::O_RDONLY | libc::O_NONBLOCK))
    };
    let (p, f) = (pts.display(), fifo.display());
    let cmd = format!(
        "printf X > {p}; echo pty=$?; stty -F {p} cols 7; echo stty=$?; \
         timeout 2 sh -c 'echo X > {f}'; echo fifo=$?; true > /dev/tty; echo devtty=$?; \
         head -c1 /dev/ptmx; echo ptmx=$?; true > /dev/shm/vigil-contain; echo shm=$?; \
         true > /dev/mqueue/vigil-contain; echo mq=$?; \
         echo ctty=$(cut -d' ' -f7 /proc/self/stat)"
    );
    let out = boxed(&cmd).await;
    let said = text(&out.stdout);
    for step in ["pty", "stty", "fifo", "devtty", "ptmx", "shm", "mq"] {
        assert!(
            !said.contains(&format!("\n{step}=0")) && !said.starts_with(&format!("{step}=0")),
            "{step}: {said}"
        );
    }
    assert!(said.contains("ctty=0\n"), "{said}");
    assert!(drained(&master).is_empty(), "the terminal got output");
    assert_eq!(size, winsize(&master), "the terminal was resized");
    let mut buf = [0u8; 8];
    // SAFETY: reading the test's own FIFO into a local buffer.
    let n = unsafe { libc::read(reader.as_raw_fd(), buf.as_mut_ptr().cast(), 8) };
    assert!(n <= 0, "the FIFO got data");
    assert!(!Path::new("/dev/shm/vigil-contain").exists());
    // Control: unsandboxed, the terminal gets it.
    plain(&format!("printf X > {p}")).await;
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(drained(&master), b"X");
}

/// The helper started with a terminal as its controlling terminal and on
/// descriptors 0 and 2: the command gets neither.
#[test]
fn a_terminal_given_to_the_helper_does_not_reach_the_command() {
    home();
    let (master, slave, _) = pty();
    let (a, b) = (slave.try_clone().unwrap(), slave.try_clone().unwrap());
    let out = Command::new("setsid")
        .arg("--ctty")
        .arg(common::sandbox_helper_bin())
        .arg(sandbox::helper::MODE)
        .args(sandbox::helper_args(None))
        .args(["--", "/bin/sh", "-c"])
        .arg(
            "echo ctty=$(cut -d' ' -f7 /proc/self/stat); echo in=$(readlink /proc/self/fd/0); \
             echo err=$(readlink /proc/self/fd/2); echo X >&2; echo X >&0",
        )
        .stdin(Stdio::from(a))
        .stderr(Stdio::from(b))
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    let said = text(&out.stdout);
    assert!(said.contains("ctty=0\n"), "{said}");
    assert!(
        said.contains("in=/dev/null\n") && said.contains("err=/dev/null\n"),
        "{said}"
    );
    assert!(drained(&master).is_empty(), "the terminal got output");
}
