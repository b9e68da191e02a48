//! The pinned download against a real HTTP server on loopback.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use sentence_embed::{download, verify, DownloadOptions, InstallError, ModelSpec, MINILM_L6_V2};

use crate::http::{Reply, Server};
use crate::support::{assert_nothing_installed, entries, model_dir, small_spec};

const CONFIG: &[u8] = br#"{"hidden_size": 4}"#;

fn weights() -> Vec<u8> {
    (0..200_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect()
}

fn spec() -> &'static ModelSpec {
    small_spec(&[("config.json", CONFIG), ("model.safetensors", &weights())])
}

fn route(spec: &ModelSpec, file: usize, reply: Reply) -> (String, Reply) {
    let url = spec.file_url("", &spec.files[file]);
    (url, reply)
}

fn options(server: &Server) -> DownloadOptions {
    DownloadOptions {
        base_url: server.base_url.clone(),
        connect_timeout: Duration::from_secs(5),
        stall_timeout: Duration::from_millis(500),
    }
}

fn run(
    spec: &'static ModelSpec,
    weights_reply: Reply,
) -> (
    tempfile::TempDir,
    Result<sentence_embed::Installed, InstallError>,
) {
    let routes = HashMap::from([
        route(spec, 0, Reply::Body(CONFIG.to_vec())),
        route(spec, 1, weights_reply),
    ]);
    let server = Server::start(routes);
    let models = tempfile::tempdir().unwrap();
    let result = download(models.path(), spec, &options(&server), |_| {});
    (models, result)
}

#[test]
fn a_good_download_installs_once_and_reports_progress() {
    let spec = spec();
    let routes = HashMap::from([
        route(spec, 0, Reply::Body(CONFIG.to_vec())),
        route(spec, 1, Reply::Body(weights())),
    ]);
    let server = Server::start(routes);
    let models = tempfile::tempdir().unwrap();
    let mut last = HashMap::new();
    let installed = download(models.path(), spec, &options(&server), |p| {
        assert!(p.done <= p.total);
        last.insert(p.file.to_string(), (p.done, p.total));
    })
    .unwrap();
    assert!(installed.fresh);
    assert_eq!(installed.dir, models.path().join("tiny-model"));
    verify(&installed.dir, spec).unwrap();
    assert_eq!(
        entries(&installed.dir),
        ["config.json", "model.safetensors"]
    );
    assert_eq!(
        entries(models.path()),
        [".install.lock", "tiny-model"],
        "no staging left"
    );
    assert_eq!(last["model.safetensors"], (200_000, 200_000));
    assert_eq!(server.requests(), 2);

    let again = download(models.path(), spec, &options(&server), |_| {}).unwrap();
    assert!(!again.fresh);
    assert_eq!(
        server.requests(),
        2,
        "an installed model is not downloaded again"
    );
}

#[test]
fn a_truncated_body_is_an_error_and_leaves_nothing() {
    let (models, result) = run(
        spec(),
        Reply::Truncated {
            body: weights(),
            sent: 150_000,
        },
    );
    let error = result.unwrap_err();
    assert!(
        matches!(error, InstallError::Http { .. } | InstallError::Size { .. }),
        "{error}"
    );
    assert_nothing_installed(models.path());
}

#[test]
fn a_wrong_checksum_is_refused() {
    let mut wrong = weights();
    wrong[1234] ^= 1;
    let (models, result) = run(spec(), Reply::Body(wrong));
    let error = result.unwrap_err();
    assert!(matches!(error, InstallError::Checksum { .. }), "{error}");
    assert!(
        error.to_string().contains("model.safetensors: SHA-256"),
        "{error}"
    );
    assert_nothing_installed(models.path());
}

#[test]
fn a_wrong_length_is_refused_before_the_body() {
    let (models, result) = run(spec(), Reply::Body(vec![7u8; 300_000]));
    let error = result.unwrap_err();
    assert!(
        matches!(error, InstallError::Size { found: 300_000, .. }),
        "{error}"
    );
    assert_nothing_installed(models.path());
}

#[test]
fn a_404_names_the_url() {
    let (models, result) = run(spec(), Reply::Status(404));
    let error = result.unwrap_err().to_string();
    assert!(
        error.contains(
            "/resolve/0123456789abcdef0123456789abcdef01234567/model.safetensors: HTTP 404"
        ),
        "{error}"
    );
    assert_nothing_installed(models.path());
}

#[test]
fn a_stalled_server_is_given_up_on_in_bounded_time() {
    let started = Instant::now();
    let stall = Reply::Stall {
        body: weights(),
        sent: 1000,
        pause: Duration::from_secs(10),
    };
    let (models, result) = run(spec(), stall);
    let error = result.unwrap_err();
    assert!(
        matches!(
            error,
            InstallError::Stalled { .. } | InstallError::Http { .. }
        ),
        "{error}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
    assert_nothing_installed(models.path());
}

#[test]
fn a_slow_server_that_keeps_sending_succeeds() {
    let spec = spec();
    let trickle = Reply::Trickle {
        body: weights(),
        chunks: 10,
        every: Duration::from_millis(100),
    };
    let (_models, result) = run(spec, trickle);
    let installed = result.unwrap();
    assert!(installed.fresh);
    verify(&installed.dir, spec).unwrap();
}

#[test]
fn a_damaged_install_is_replaced() {
    let spec = spec();
    let routes = HashMap::from([
        route(spec, 0, Reply::Body(CONFIG.to_vec())),
        route(spec, 1, Reply::Body(weights())),
    ]);
    let server = Server::start(routes);
    let models = tempfile::tempdir().unwrap();
    let damaged = models.path().join("tiny-model");
    std::fs::create_dir_all(&damaged).unwrap();
    std::fs::write(damaged.join("config.json"), CONFIG).unwrap();
    std::fs::write(damaged.join("model.safetensors"), b"half a file").unwrap();
    let installed = download(models.path(), spec, &options(&server), |_| {}).unwrap();
    assert!(installed.fresh);
    verify(&installed.dir, spec).unwrap();
    assert_eq!(entries(models.path()), [".install.lock", "tiny-model"]);
}

/// The real pinned files over loopback at HuggingFace's URL layout: the spec's
/// sizes, checksums and paths are the ones the model was published with.
#[test]
fn the_real_model_downloads_from_its_pinned_layout() {
    let Some(dir) = model_dir() else { return };
    let spec = &MINILM_L6_V2;
    let routes = spec
        .files
        .iter()
        .enumerate()
        .map(|(i, file)| {
            route(
                spec,
                i,
                Reply::Body(std::fs::read(dir.join(file.name)).unwrap()),
            )
        })
        .collect();
    let server = Server::start(routes);
    let models = tempfile::tempdir().unwrap();
    let installed = download(models.path(), spec, &options(&server), |_| {}).unwrap();
    assert!(installed.fresh);
    assert_eq!(installed.dir, models.path().join("all-MiniLM-L6-v2"));
    let encoder = sentence_embed::Encoder::load(&installed.dir, &Default::default()).unwrap();
    assert_eq!(encoder.dims(), 384);
    assert_eq!(
        spec.file_url("https://huggingface.co", &spec.files[2]),
        "https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2/resolve/c9745ed1d9f207416be6d2e6f8de32d1f16199bf/model.safetensors"
    );
}
