//! Landlock inside the preview's view: the command reads and executes
//! only beneath the view's own root ([`super::rootfs`]: its readable
//! world), so a way out of its `chroot` (a descriptor, a `/proc` link)
//! reads nothing; it writes, creates, removes, truncates (and opens a FIFO
//! or device for writing) only beneath the writable roots (the overlays),
//! plus `/dev/null` and `/dev/full`; it cannot signal the view's PID 1 or
//! reach an abstract socket outside its domain (ABI ≥ 6).
//!
//! With the read-only, `nodev` mounts ([`super::mounts`]) this closes the
//! files outside the writable layer as a class: a FIFO on a read-only
//! mount still opens for writing without it. [`build`] only makes the
//! ruleset (in PID 1, before the command starts); the command's own process
//! enforces it ([`crate::sandbox::confine::restrict_self`]). It must
//! never widen what the mounts allow.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, Scope,
};

fn err(e: impl std::fmt::Display) -> String {
    format!("cannot fence the view with Landlock: {e}")
}

/// The ruleset for a view whose root is `root` (as PID 1 sees it) and
/// whose writable roots are `roots` (as the command sees them).
pub fn build(root: &Path, roots: &[PathBuf]) -> Result<OwnedFd, String> {
    let inside = |p: &Path| super::rootfs::beneath(root, p);
    let abi = match crate::sandbox::confine::kernel_abi() {
        v if v < 3 => return Err(err(format!("the kernel's Landlock ABI is {v}, 3 needed"))),
        3 => ABI::V3,
        4 => ABI::V4,
        5 => ABI::V5,
        _ => ABI::V6,
    };
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(abi))
        .map_err(err)?;
    if abi >= ABI::V6 {
        ruleset = ruleset.scope(Scope::from_all(abi)).map_err(err)?;
    }
    let mut created = ruleset.create().map_err(err)?;
    let read: BitFlags<AccessFs> = AccessFs::Execute | AccessFs::ReadFile | AccessFs::ReadDir;
    let file_rights: BitFlags<AccessFs> = AccessFs::from_file(abi) & !AccessFs::Execute;
    let mut rules: Vec<(PathBuf, BitFlags<AccessFs>)> = vec![(root.to_path_buf(), read)];
    rules.extend(roots.iter().map(|r| (inside(r), AccessFs::from_all(abi))));
    for dev in ["/dev/null", "/dev/full"] {
        rules.push((inside(Path::new(dev)), file_rights));
    }
    for (path, rights) in rules {
        let fd = PathFd::new(Path::new(&path)).map_err(err)?;
        created = created
            .add_rule(PathBeneath::new(fd, rights))
            .map_err(err)?;
    }
    let fd: Option<OwnedFd> = created.into();
    fd.ok_or_else(|| err("no ruleset"))
}
