//! # shell::resolve
//!
//! A path as the kernel would resolve it, without opening anything: what both the words of
//! a command ([`super::reach`]) and the names in a glob ([`super::glob`]) are checked by.
//!
//! Must never: say a path stays inside a folder when a link or a `..` it cannot see
//! through could take it out (such a path resolves to `None`).

use std::path::{Component, Path, PathBuf};

/// `path` from the real folder `base` as the kernel resolves it: links followed for the part
/// that exists, the rest taken as written. `None` when a `..` follows a name that does not
/// exist (what it will mean is unknown), when a `..` steps out of `root` from inside it, or
/// when a link leads to nothing (what it names may appear) or in a loop.
///
/// One `lstat` a component, and `realpath` only at a link: this runs for every word of
/// every line the gate decides.
pub(super) fn resolve(base: &Path, path: &Path, root: &Path) -> Option<PathBuf> {
    let mut real = match path.is_absolute() {
        true => PathBuf::from("/"),
        false => base.to_path_buf(),
    };
    let mut exists = true;
    for part in path.components() {
        match part {
            Component::ParentDir if !exists => return None,
            Component::ParentDir => {
                let was_inside = real.starts_with(root);
                real.pop();
                if was_inside && !real.starts_with(root) {
                    return None;
                }
            }
            Component::Normal(name) => {
                real.push(name);
                if exists {
                    match real.symlink_metadata() {
                        Ok(m) if m.is_symlink() => real = real.canonicalize().ok()?,
                        Ok(_) => {}
                        Err(_) => exists = false,
                    }
                }
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    Some(real)
}
