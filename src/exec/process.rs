//! Running one child process: own process group, live output, timeout, and
//! killing the whole group on timeout or when the caller drops the future.
