//! Following one managed-pane command's output files while it runs: new
//! bytes go to the run's stores (windows and counts, or every byte for
//! helpers), to the output callback, and, on this machine, a bounded part of
//! them to the pane's terminal so the operator sees the output live.
//!
//! The files the command writes are the store: on this machine they are
//! read in bounded chunks and, when the output outgrew the memory windows,
//! moved to the spill folder instead of being copied. This module must never
//! read a whole output file into memory on this machine, and never write an
//! unbounded amount to the pane's terminal (a flood is shown as its tail with
//! a "bytes not shown live" line, the mirror catches up from a capture).

use std::path::PathBuf;

use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

use super::manager::TmuxManager;
use super::script::CmdFiles;
use crate::OutputFn;
use crate::capture::{Capture, Retain, move_to_spill};
use crate::follow::which;
use crate::store::{Store, Utf8Chunker};

/// Bytes read from an output file at a time.
const READ_CHUNK: usize = 256 * 1024;
/// At most this many bytes per tick go to the pane's terminal.
pub const TTY_TICK_MAX: usize = 16 * 1024;

const EXT: [&str; 2] = ["o", "e"];

/// Follows the two output files of one command.
pub struct Streamer {
    on_output: Option<OutputFn>,
    offsets: [u64; 2],
    chunkers: [Utf8Chunker; 2],
    pub stores: [Store; 2],
    /// Open output files (this machine only).
    files: [Option<tokio::fs::File>; 2],
    local: bool,
    /// The pane's tty and the flag file telling the wrapper we showed it.
    tty_path: Option<String>,
    live_flag: String,
    tty: Option<tokio::fs::File>,
    /// The newest bytes of this tick for the terminal, and how many were
    /// left out before them.
    tty_tail: Vec<u8>,
    tty_skipped: u64,
}

impl Streamer {
    /// `retain`: keep windows (the files are the store) instead of every
    /// byte. `tty_path`: the pane's terminal, for live display.
    pub fn new(
        on_output: Option<OutputFn>,
        retain: Option<&Retain>,
        local: bool,
        tty_path: Option<String>,
        live_flag: String,
    ) -> Self {
        let stores = match retain {
            // On this machine the command's own files are the store.
            Some(r) if local => {
                [0, 1].map(|_| Store::Capture(Box::new(Capture::windows_only(r.window))))
            }
            other => Store::pair(other),
        };
        Streamer {
            on_output,
            offsets: [0, 0],
            chunkers: Default::default(),
            stores,
            files: [None, None],
            local,
            tty_path,
            live_flag,
            tty: None,
            tty_tail: Vec::new(),
            tty_skipped: 0,
        }
    }

    pub fn has_output_fn(&self) -> bool {
        self.on_output.is_some()
    }

    fn take(&mut self, i: usize, bytes: &[u8], show: bool) {
        self.offsets[i] += bytes.len() as u64;
        self.stores[i].push(bytes);
        if show && (self.tty_path.is_some() || self.tty.is_some()) {
            self.tty_tail.extend_from_slice(bytes);
            if self.tty_tail.len() > 2 * TTY_TICK_MAX {
                let cut = self.tty_tail.len() - TTY_TICK_MAX;
                self.tty_skipped += cut as u64;
                self.tty_tail.drain(..cut);
            }
        }
        if let Some(f) = &self.on_output {
            let text = self.chunkers[i].push(bytes);
            if !text.is_empty() {
                f(which(i), &text);
            }
        }
    }

    /// The next bytes of output file `i`, at most [`READ_CHUNK`] on this
    /// machine (everything new elsewhere).
    async fn read_next(&mut self, mgr: &TmuxManager, files: &CmdFiles, i: usize) -> Vec<u8> {
        let path = files.path(EXT[i]);
        if !self.local {
            return mgr.read_from(&path, self.offsets[i]).await;
        }
        if self.files[i].is_none() {
            self.files[i] = tokio::fs::File::open(&path).await.ok();
        }
        let Some(f) = self.files[i].as_mut() else {
            return Vec::new();
        };
        if f.seek(std::io::SeekFrom::Start(self.offsets[i]))
            .await
            .is_err()
        {
            return Vec::new();
        }
        let mut buf = vec![0u8; READ_CHUNK];
        let mut n = 0;
        while n < buf.len() {
            match f.read(&mut buf[n..]).await {
                Ok(0) | Err(_) => break,
                Ok(k) => n += k,
            }
        }
        buf.truncate(n);
        buf
    }

    /// Take everything the files hold beyond what was read; `show`: also
    /// send (a bounded tail of) it to the pane's terminal.
    pub async fn pull(&mut self, mgr: &TmuxManager, files: &CmdFiles, show: bool) {
        for i in 0..2 {
            loop {
                let new = self.read_next(mgr, files, i).await;
                if new.is_empty() {
                    break;
                }
                let more = self.local && new.len() == READ_CHUNK;
                self.take(i, &new, show);
                if !more {
                    break;
                }
            }
        }
        if show {
            self.show().await;
        }
    }

    /// Write this tick's bytes (their last [`TTY_TICK_MAX`] at most) to the
    /// pane's terminal, after a line naming what was left out.
    async fn show(&mut self) {
        if self.tty_tail.is_empty() {
            return;
        }
        if self.tty.is_none() {
            let Some(path) = self.tty_path.take() else {
                return;
            };
            if tokio::fs::write(&self.live_flag, b"").await.is_err() {
                return;
            }
            self.tty = tokio::fs::OpenOptions::new()
                .append(true)
                .open(&path)
                .await
                .ok();
        }
        let mut bytes = std::mem::take(&mut self.tty_tail);
        let mut skipped = std::mem::take(&mut self.tty_skipped);
        if bytes.len() > TTY_TICK_MAX {
            let cut = bytes.len() - TTY_TICK_MAX;
            skipped += cut as u64;
            bytes.drain(..cut);
        }
        if skipped > 0 {
            // Start at a line so the terminal shows whole lines.
            if let Some(nl) = bytes.iter().position(|&b| b == b'\n') {
                skipped += nl as u64 + 1;
                bytes.drain(..=nl);
            }
            let line = format!("\r\n\x1b[2m[vigil: {skipped} bytes not shown live]\x1b[0m\r\n");
            bytes.splice(0..0, line.into_bytes());
        }
        if let Some(t) = self.tty.as_mut() {
            let _ = t.write_all(&bytes).await;
        }
    }

    /// After exit: take what the files hold beyond what was streamed (not
    /// shown in the pane) and end the decoders.
    pub async fn finish(&mut self, mgr: &TmuxManager, files: &CmdFiles) {
        self.pull(mgr, files, false).await;
        for i in 0..2 {
            if let Some(f) = &self.on_output {
                let tail = self.chunkers[i].finish();
                if !tail.is_empty() {
                    f(which(i), &tail);
                }
            }
        }
        self.files = [None, None];
    }

    /// Where the bytes live once the run is over: an output file that
    /// outgrew the windows moves to the spill folder (this machine only;
    /// elsewhere the capture wrote its own spill file).
    pub async fn place(&mut self, files: &CmdFiles, retain: Option<&Retain>) {
        let Some(r) = retain else {
            return;
        };
        if !self.local {
            return;
        }
        for (i, store) in self.stores.iter_mut().enumerate() {
            let Store::Capture(c) = store else {
                continue;
            };
            if c.total() <= r.window as u64 * 2 {
                continue;
            }
            let Some(dir) = &r.spill_dir else {
                continue;
            };
            let src = PathBuf::from(files.path(EXT[i]));
            let dir = dir.clone();
            let label = r.labels[i].clone();
            let moved = tokio::task::spawn_blocking(move || move_to_spill(&src, &dir, &label))
                .await
                .unwrap_or_else(|e| Err(format!("moving the output file failed: {e}")));
            c.set_spill(moved);
        }
    }
}
