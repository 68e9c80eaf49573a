//! Making the view's PID 1 look like an ordinary init: its name (`comm`)
//! is `init` and its command line `/sbin/init`, not `vigil-sandbox
//! __sandbox --preview …`. A command can still tell it is in a preview
//! (few processes, no network, overlay mounts); this only removes the
//! cheapest tell. It only rewrites the calling process's own name and
//! argument area, and must only run in the view's PID 1 after its
//! arguments were read.

/// The command line PID 1 shows.
const CMDLINE: &[u8] = b"/sbin/init\0";

/// Rename the calling process and overwrite its argument area (best
/// effort: a failure leaves the real name).
pub fn look_like_init() {
    // SAFETY: PR_SET_NAME copies at most 16 bytes from a NUL-terminated
    // literal.
    unsafe { libc::prctl(libc::PR_SET_NAME, c"init".as_ptr(), 0, 0, 0) };
    let Some((start, end)) = argument_area() else {
        return;
    };
    let len = end.saturating_sub(start);
    if len < CMDLINE.len() {
        return;
    }
    // SAFETY: [start, end) is this process's own argument area (from
    // /proc/self/stat), mapped writable on its initial stack; the
    // arguments were parsed into owned values before, and nothing in this
    // process reads argv again.
    unsafe {
        let area = std::slice::from_raw_parts_mut(start as *mut u8, len);
        area.fill(0);
        area[..CMDLINE.len()].copy_from_slice(CMDLINE);
        // A last byte that is not NUL makes the kernel show the area up
        // to its first NUL (as after setproctitle), not the whole area.
        area[len - 1] = b' ';
    }
}

/// `arg_start` and `arg_end` (fields 48 and 49 of `/proc/self/stat`).
fn argument_area() -> Option<(usize, usize)> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let (_, rest) = stat.rsplit_once(") ")?;
    // `rest` starts at field 3 (state).
    let mut fields = rest.split_whitespace().skip(48 - 3);
    let start = fields.next()?.parse().ok()?;
    let end = fields.next()?.parse().ok()?;
    (start != 0 && end > start).then_some((start, end))
}
