//! Reading another process's memory for the view's supervisor (the
//! addresses and paths a watched system call names). Only ever reads;
//! used by the view's PID 1, never by vigil itself.

/// `len` bytes at `addr` in process `pid`.
pub fn read_memory(pid: libc::pid_t, addr: u64, len: usize) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; len];
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: len,
    };
    let remote = libc::iovec {
        iov_base: addr as *mut libc::c_void,
        iov_len: len,
    };
    // SAFETY: the kernel writes at most `len` bytes into `buf` and reads
    // the other process's memory, never ours.
    let n = unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) };
    (n == len as isize).then_some(buf)
}
