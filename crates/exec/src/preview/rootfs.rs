//! The view's own root folder: the readable world of the command
//! ([`crate::sandbox::world`]) and nothing else. Built by the view's PID 1
//! on its staging tmpfs, entered by the command with `chroot` before it
//! drops every capability, and fenced by Landlock beneath it
//! ([`super::fence`]), so a way out of the `chroot` still reads nothing.
//!
//! In it: each readable place bound read-only (`/usr`, `/etc`, tool
//! homes…) and the symbolic links among them made again (`/bin` →
//! `usr/bin`); the working tree as an overlay on the real one; the home
//! folder and `/tmp` as overlays on empty folders (the command's own: what
//! it writes there is an effect, what was there does not exist); empty
//! `/run`; then (see the caller) a fresh `/dev`, the view's `/proc`, the
//! masks. Every other path of the machine does not exist there.
//!
//! Mount points are made before anything is mounted over their parent, on
//! the staging tmpfs (or in the empty lower folder of a home or `/tmp`
//! overlay), so none shows up as a change. The functions here must only
//! run in the view's PID 1, in its own mount namespace, and never mount
//! anything writable over a real folder.

use std::path::{Path, PathBuf};

use super::mounts::{self, bind_tree, os_err, set_attr_path};

/// What the root holds (all paths real and canonical, as on the machine).
pub struct Plan<'a> {
    /// The new root folder (on the staging tmpfs, not yet made).
    pub root: &'a Path,
    /// The staging folder (upper, work and empty lower folders go there).
    pub staging: &'a Path,
    /// Writable places shown with their real contents (the working tree).
    pub trees: &'a [PathBuf],
    /// Writable places shown empty (home, `/tmp`).
    pub fresh: &'a [PathBuf],
    /// Readable places, bound read-only.
    pub reads: &'a [PathBuf],
    /// Symbolic links to make again: `(where, what it says)`.
    pub links: &'a [(PathBuf, PathBuf)],
    pub userns: bool,
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// Overlay number `i` (its upper is `u{i}` on the staging tmpfs).
    Overlay(usize),
    /// The empty lower folder `l{i}` of overlay `i`.
    Fresh(usize),
    Read,
}

struct Point {
    target: PathBuf,
    kind: Kind,
    dir: bool,
}

/// `path` (absolute) beneath `base`.
pub fn beneath(base: &Path, path: &Path) -> PathBuf {
    base.join(path.strip_prefix("/").unwrap_or(path))
}

impl Plan<'_> {
    /// The lower folder of fresh place `j`.
    pub fn empty_lower(&self, j: usize) -> PathBuf {
        self.staging.join(format!("l{}", self.trees.len() + j))
    }

    fn points(&self) -> Vec<Point> {
        let n = self.trees.len();
        let mut all: Vec<Point> = self
            .trees
            .iter()
            .enumerate()
            .map(|(i, t)| Point {
                target: t.clone(),
                kind: Kind::Overlay(i),
                dir: true,
            })
            .chain(self.fresh.iter().enumerate().map(|(j, f)| Point {
                target: f.clone(),
                kind: Kind::Fresh(n + j),
                dir: true,
            }))
            .chain(self.reads.iter().map(|r| Point {
                target: r.clone(),
                kind: Kind::Read,
                dir: r.is_dir(),
            }))
            .collect();
        all.sort_by_key(|p| p.target.components().count());
        all
    }

    /// Where the entry `target` must be made so it exists in the root
    /// before anything is mounted: in the empty lower folder of the
    /// deepest fresh place holding it, else on the root's own tmpfs;
    /// `None` when a real folder bound or overlaid above already has it.
    fn home_of(&self, points: &[Point], target: &Path) -> Option<PathBuf> {
        let holder = points
            .iter()
            .filter(|p| target.starts_with(&p.target) && p.target != target)
            .max_by_key(|p| p.target.components().count());
        match holder.map(|p| (p.kind, &p.target)) {
            Some((Kind::Fresh(i), at)) => {
                let rel = target.strip_prefix(at).unwrap_or(target);
                Some(self.staging.join(format!("l{i}")).join(rel))
            }
            Some(_) => None,
            None => Some(beneath(self.root, target)),
        }
    }
}

fn make_point(at: &Path, dir: bool) -> Result<(), String> {
    let parent = at.parent().unwrap_or(at);
    std::fs::create_dir_all(parent)
        .map_err(|e| format!("cannot make {}: {e}", parent.display()))?;
    let made = if dir {
        std::fs::create_dir(at)
    } else {
        std::fs::File::create(at).map(drop)
    };
    match made {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
            Err(format!("cannot make {}: {e}", at.display()))
        }
        _ => Ok(()),
    }
}

/// Build the root (see the module doc); the overlays' lower folders are
/// returned in overlay order (trees, then fresh places).
pub fn build(plan: &Plan<'_>) -> Result<Vec<PathBuf>, String> {
    std::fs::create_dir(plan.root).map_err(|e| format!("cannot make the view's root: {e}"))?;
    bind_tree(plan.root, plan.root)?;
    let points = plan.points();
    for (i, _) in plan.fresh.iter().enumerate() {
        make_point(&plan.empty_lower(i), true)?;
    }
    for p in &points {
        if let Some(at) = plan.home_of(&points, &p.target) {
            make_point(&at, p.dir)?;
        }
    }
    for extra in ["dev", "proc", "run"] {
        make_point(&plan.root.join(extra), true)?;
    }
    for (link, to) in plan.links {
        if let Some(at) = plan.home_of(&points, link) {
            make_point(at.parent().unwrap_or(&at), true)?;
            std::os::unix::fs::symlink(to, &at)
                .map_err(|e| format!("cannot make the link {}: {e}", link.display()))?;
        }
    }
    let mut lowers = vec![PathBuf::new(); plan.trees.len() + plan.fresh.len()];
    for p in &points {
        let at = beneath(plan.root, &p.target);
        match p.kind {
            Kind::Overlay(i) => {
                mounts::overlay(plan.staging, i, &p.target, &at, plan.userns)?;
                lowers[i] = p.target.clone();
            }
            Kind::Fresh(i) => {
                let lower = plan.staging.join(format!("l{i}"));
                mounts::overlay(plan.staging, i, &lower, &at, plan.userns)?;
                lowers[i] = lower;
            }
            Kind::Read => read_only(&p.target, &at)?,
        }
    }
    Ok(lowers)
}

/// Bind `real` (and what is mounted beneath it) at `at`, read-only,
/// without devices or set-uid.
fn read_only(real: &Path, at: &Path) -> Result<(), String> {
    if std::fs::symlink_metadata(at).is_err() || std::fs::metadata(real).is_err() {
        // Its place is inside a real folder that lacks it, or this user
        // cannot reach it: nothing to show.
        return Ok(());
    }
    bind_tree(real, at)?;
    set_attr_path(at, mounts::FROZEN, true)
        .map_err(|e| format!("{e} ({})", os_err("read-only bind")))
}

/// Make the root's own folder read-only (its mounts keep their own
/// flags): nothing can be created beside the places.
pub fn seal(root: &Path) -> Result<(), String> {
    set_attr_path(root, mounts::FROZEN, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_points_go_where_nothing_real_has_them() {
        let staging = PathBuf::from("/s");
        let trees = [PathBuf::from("/home/u/proj")];
        let fresh = [PathBuf::from("/home/u"), PathBuf::from("/tmp")];
        let reads = [PathBuf::from("/usr"), PathBuf::from("/home/u/.cargo")];
        let plan = Plan {
            root: Path::new("/s/r"),
            staging: &staging,
            trees: &trees,
            fresh: &fresh,
            reads: &reads,
            links: &[],
            userns: false,
        };
        let points = plan.points();
        let home = |t: &str| plan.home_of(&points, Path::new(t));
        assert_eq!(home("/usr"), Some(PathBuf::from("/s/r/usr")));
        assert_eq!(home("/home/u"), Some(PathBuf::from("/s/r/home/u")));
        // Inside the fresh home (overlay 1): made in its empty lower.
        assert_eq!(home("/home/u/proj"), Some(PathBuf::from("/s/l1/proj")));
        assert_eq!(home("/home/u/.cargo"), Some(PathBuf::from("/s/l1/.cargo")));
        // Inside a real folder: it is there already.
        assert_eq!(home("/usr/lib/x"), None);
        assert_eq!(plan.empty_lower(0), PathBuf::from("/s/l1"));
        // Parents are mounted before what they hold.
        let order: Vec<_> = points.iter().map(|p| p.target.clone()).collect();
        let at = |t: &str| order.iter().position(|p| p == Path::new(t)).unwrap();
        assert!(at("/home/u") < at("/home/u/proj"));
        assert!(at("/home/u") < at("/home/u/.cargo"));
    }
}
