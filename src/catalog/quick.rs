//! First-use fast path for ids. pi names session files
//! `<timestamp>_<id>.jsonl`, so before the catalog has read every file, an id
//! or id prefix can be matched against file names from directory listings
//! alone and confirmed by reading that one file's header. Anything less
//! clear-cut (another naming scheme, several matches) returns `None` and the
//! caller does the full scan, which gives the authoritative answer.

use std::path::{Path, PathBuf};

use super::root::session_item;
use super::scan::{self, Listed};
use super::CatalogEntry;

const MAX_DEPTH: usize = 3;

pub(crate) fn quick_id(sessions_dir: &Path, meta_dir: &Path, reference: &str) -> Option<CatalogEntry> {
    let r = reference.trim().to_lowercase();
    let id_like = r.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
    if r.chars().count() < super::MIN_PREFIX || !id_like {
        return None;
    }
    let canon = std::fs::canonicalize(sessions_dir).ok()?;
    let mut matches: Vec<(PathBuf, String)> = Vec::new();
    let mut dirs = vec![(sessions_dir.to_path_buf(), 0usize)];
    while let Some((dir, depth)) = dirs.pop() {
        for l in scan::list_dir(&dir, &canon, ".jsonl").0 {
            match l {
                Listed::Dir(d) if depth < MAX_DEPTH => dirs.push((d, depth + 1)),
                Listed::Dir(_) => {}
                Listed::File(p, _) => {
                    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
                    // A file not named the pi way may hold any id: only a full scan can tell.
                    let (_, id) = name.strip_suffix(".jsonl")?.rsplit_once('_')?;
                    let id = id.to_lowercase();
                    if id.starts_with(&r) {
                        matches.push((p.clone(), id));
                    }
                }
            }
        }
    }
    let exact: Vec<&(PathBuf, String)> = matches.iter().filter(|(_, id)| *id == r).collect();
    let (path, id) = match (exact.as_slice(), matches.as_slice()) {
        ([one], _) => (*one).clone(),
        ([], [one]) => one.clone(),
        _ => return None,
    };
    let (stamp, light) = scan::read_session(&path, None).ok()?;
    let light = light.filter(|l| l.id.to_lowercase() == id)?;
    let meta = crate::meta::meta_path(meta_dir, &light.id).ok().and_then(|p| meta_inside(meta_dir, &p));
    Some(session_item(&path, stamp, &light, meta.as_ref()).entry)
}

/// The meta file, unless it is a symlink leading out of the meta directory.
fn meta_inside(meta_dir: &Path, path: &Path) -> Option<scan::MetaLight> {
    let md = std::fs::symlink_metadata(path).ok()?;
    if md.file_type().is_symlink() {
        let root = std::fs::canonicalize(meta_dir).ok()?;
        if !std::fs::canonicalize(path).ok()?.starts_with(root) {
            return None;
        }
    }
    scan::read_meta(path)?.1
}
