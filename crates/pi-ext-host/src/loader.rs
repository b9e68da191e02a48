//! Finding and loading a plugin library.
//!
//! Loading goes through `lib_header_from_path(..).init_root_module()` rather
//! than `RootModule::load_from_file`: the latter caches one module per
//! interface type in the host, so a second plugin (or a second build of the
//! same plugin) would silently get the first one back.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use abi_stable::library::{lib_header_from_path, LibraryError, RootModuleError};
use pi_ext_abi::PluginModRef;

use crate::error::{one_line, HostError};
use crate::manifest::Manifest;

/// Environment variable naming the library file to load (overrides the search).
pub const LIB_ENV: &str = "PI_EXT_LIB";

/// The platform's file name for a library stem: `libx.so`, `libx.dylib`, `x.dll`.
pub fn library_file_name(stem: &str) -> String {
    format!(
        "{}{stem}{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    )
}

/// Where a manifest's library is looked for, in order.
pub fn candidate_paths(manifest: &Manifest) -> Vec<PathBuf> {
    let file = library_file_name(&manifest.library);
    let dir = &manifest.dir;
    vec![
        dir.join(&file),
        dir.join("target/release").join(&file),
        dir.join("target/debug").join(&file),
        dir.join("target/debug/deps").join(&file),
    ]
}

/// The library to load: `lib_override`, else `$PI_EXT_LIB`, else the most
/// recently built of the candidates (so a fresh debug build wins over a
/// stale release build, and vice versa).
pub fn find_library(
    manifest: &Manifest,
    lib_override: Option<&Path>,
) -> Result<PathBuf, HostError> {
    let explicit = lib_override.map(Path::to_path_buf).or_else(|| {
        std::env::var_os(LIB_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    });
    if let Some(path) = explicit {
        return if path.is_file() {
            Ok(path)
        } else {
            Err(HostError::LibraryMissing { tried: vec![path] })
        };
    }
    let candidates = candidate_paths(manifest);
    let mut newest: Option<(SystemTime, &PathBuf)> = None;
    for path in &candidates {
        let Some(meta) = std::fs::metadata(path).ok().filter(|m| m.is_file()) else {
            continue;
        };
        let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
        // Strictly newer only: on a tie (cargo hard-links deps/ into debug/) the earlier candidate wins.
        if newest.is_none_or(|(best, _)| modified > best) {
            newest = Some((modified, path));
        }
    }
    match newest {
        Some((_, path)) => Ok(path.clone()),
        None => Err(HostError::LibraryMissing { tried: candidates }),
    }
}

/// Find and load the plugin library of `manifest`.
pub fn load_module(
    manifest: &Manifest,
    lib_override: Option<&Path>,
) -> Result<PluginModRef, HostError> {
    let path = find_library(manifest, lib_override)?;
    load_module_from_path(&path)
}

/// Load the plugin library at `path`, checking abi_stable's header, the
/// pi-ext-abi version and the layout of every type that crosses the boundary.
pub fn load_module_from_path(path: &Path) -> Result<PluginModRef, HostError> {
    if !path.is_file() {
        return Err(HostError::LibraryMissing {
            tried: vec![path.to_path_buf()],
        });
    }
    lib_header_from_path(path)
        .and_then(|header| header.init_root_module::<PluginModRef>())
        .map_err(|e| map_library_error(path, e))
}

/// Turn abi_stable's multi-line errors into one-line host errors.
fn map_library_error(path: &Path, error: LibraryError) -> HostError {
    let not_a_plugin = |reason: String| HostError::NotAPlugin {
        path: path.to_path_buf(),
        reason,
    };
    let incompatible = |reason: String| HostError::Incompatible {
        path: path.to_path_buf(),
        reason,
    };
    match error {
        LibraryError::OpenError { err, .. } => not_a_plugin(format!(
            "cannot load it as a dynamic library: {}",
            one_line(&err.to_string())
        )),
        LibraryError::GetSymbolError { .. } => not_a_plugin(
            "it exports no abi_stable root module (was it built with #[export_root_module]?)"
                .into(),
        ),
        LibraryError::InvalidAbiHeader(_) => not_a_plugin(
            "its abi_stable header is invalid or from an incompatible abi_stable version".into(),
        ),
        LibraryError::ParseVersionError(e) => not_a_plugin(format!(
            "unreadable interface version: {}",
            one_line(&e.to_string())
        )),
        LibraryError::IncompatibleVersionNumber {
            expected_version,
            actual_version,
            ..
        } => HostError::AbiMismatch {
            location: path.display().to_string(),
            host: expected_version.to_string(),
            plugin: actual_version.to_string(),
            how: "was built against",
        },
        LibraryError::AbiInstability(e) => incompatible(format!(
            "type layouts differ from the host's: {}",
            one_line(&e.to_string())
        )),
        LibraryError::InvalidCAbi { .. } => {
            incompatible("it was built with an incompatible C ABI".into())
        }
        LibraryError::RootModule { err, .. } => match err {
            RootModuleError::Unwound => not_a_plugin("its root module loader panicked".into()),
            RootModuleError::Returned(e) => not_a_plugin(format!(
                "its root module loader failed: {}",
                one_line(&e.to_string())
            )),
        },
        LibraryError::Many(errors) => {
            let mut mapped = errors.into_iter().map(|e| map_library_error(path, e));
            let Some(first) = mapped.next() else {
                return incompatible("unknown error".into());
            };
            // Keep the first error's kind (an ABI mismatch stays an ABI mismatch) and append the rest.
            let rest: Vec<String> = mapped.map(|e| e.to_string()).collect();
            if rest.is_empty() {
                first
            } else {
                incompatible(format!("{first}; {}", rest.join("; ")))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest_in(dir: &Path) -> Manifest {
        let text = "[plugin]\nname = \"x\"\nversion = \"1\"\nabi = \"1.0\"\nlibrary = \"x\"\n";
        Manifest::parse(&dir.join("plugin.toml"), text).unwrap()
    }

    #[test]
    fn missing_library_names_every_path_tried() {
        let dir = tempfile::tempdir().unwrap();
        let err = find_library(&manifest_in(dir.path()), None)
            .unwrap_err()
            .to_string();
        for candidate in candidate_paths(&manifest_in(dir.path())) {
            assert!(err.contains(&candidate.display().to_string()), "{err}");
        }
    }

    #[test]
    fn newest_candidate_wins() {
        let dir = tempfile::tempdir().unwrap();
        let m = manifest_in(dir.path());
        let [_, release, debug, _] = <[PathBuf; 4]>::try_from(candidate_paths(&m)).unwrap();
        std::fs::create_dir_all(release.parent().unwrap()).unwrap();
        std::fs::create_dir_all(debug.parent().unwrap()).unwrap();
        std::fs::write(&debug, b"old").unwrap();
        std::fs::write(&release, b"new").unwrap();
        let old = SystemTime::now() - std::time::Duration::from_secs(3600);
        std::fs::File::options()
            .write(true)
            .open(&debug)
            .unwrap()
            .set_modified(old)
            .unwrap();
        assert_eq!(find_library(&m, None).unwrap(), release);
        assert_eq!(find_library(&m, Some(&debug)).unwrap(), debug);
    }

    #[test]
    fn a_text_file_is_not_a_plugin() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(library_file_name("fake"));
        std::fs::write(&path, "not a library").unwrap();
        let Err(err) = load_module_from_path(&path) else {
            panic!("a text file loaded as a plugin")
        };
        assert!(matches!(err, HostError::NotAPlugin { .. }), "{err}");
        assert!(!err.to_string().contains('\n'));
    }
}
