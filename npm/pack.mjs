#!/usr/bin/env node
// `npm run pack:all`: builds the platform package for this machine (or `--platform`) and packs it,
// with the main package, into one folder as .tgz files: what the release workflow publishes and
// what the end-to-end test installs from a local registry.
//
//   node npm/pack.mjs [--out DIR] [--platform linux-x64|linux-arm64|darwin-x64|darwin-arm64]
//
// Linux binaries are built by cargo-zigbuild against glibc 2.17 (`<arch>-unknown-linux-gnu.2.17`),
// so they run on every maintained distribution; cargo-zigbuild and ziglang come from PyPI (into
// target/pytools when `cargo-zigbuild` is not on PATH). macOS binaries are built by cargo. The
// `dist` profile (Cargo.toml) is release without debug info, stripped.
import { execFileSync, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { delimiter, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "..");
/** cargo-zigbuild and ziglang from PyPI, pinned: the versions this was tested with. */
const PYPI_TOOLS = ["cargo-zigbuild==0.24.1", "ziglang==0.17.1"];

/** What each platform package is built from and for (npm's `os`/`cpu`/`libc` values). */
const PLATFORMS = {
	"linux-x64": { triple: "x86_64-unknown-linux-gnu", glibc: "2.17", os: "linux", cpu: "x64", libc: "glibc" },
	"linux-arm64": { triple: "aarch64-unknown-linux-gnu", glibc: "2.17", os: "linux", cpu: "arm64", libc: "glibc" },
	"darwin-x64": { triple: "x86_64-apple-darwin", os: "darwin", cpu: "x64" },
	"darwin-arm64": { triple: "aarch64-apple-darwin", os: "darwin", cpu: "arm64" },
};

function fail(message) {
	console.error(`pack: ${message}`);
	process.exit(1);
}

function option(name, fallback) {
	const i = process.argv.indexOf(name);
	return i > 0 && process.argv[i + 1] ? process.argv[i + 1] : fallback;
}

function run(command, args, options = {}) {
	console.error(`pack: ${command} ${args.join(" ")}`);
	const result = spawnSync(command, args, { cwd: REPO, stdio: ["ignore", "inherit", "inherit"], ...options });
	if (result.status !== 0) fail(`${command} ${args.join(" ")} failed (${result.error?.message ?? `exit ${result.status}`})`);
}

/** PATH with cargo-zigbuild on it: already there, else installed from PyPI into target/pytools. */
function zigbuildPath() {
	const path = process.env.PATH ?? "";
	const found = path.split(delimiter).some((dir) => dir && existsSync(join(dir, "cargo-zigbuild")));
	if (found) return path;
	const venv = join(REPO, "target", "pytools");
	if (!existsSync(join(venv, "bin", "cargo-zigbuild"))) {
		run("python3", ["-m", "venv", venv]);
		run(join(venv, "bin", "pip"), ["install", "--quiet", ...PYPI_TOOLS]);
	}
	return `${join(venv, "bin")}${delimiter}${path}`;
}

/** Build the three binaries for `platform`; returns the directory cargo put them in. */
function buildBinaries(platform) {
	const { triple, glibc } = PLATFORMS[platform];
	const args = ["--profile", "dist", "-p", "session-index", "-p", "pi-ext-host", "--locked"];
	if (glibc) {
		run("cargo", ["zigbuild", ...args, "--target", `${triple}.${glibc}`], { env: { ...process.env, PATH: zigbuildPath() } });
	} else {
		run("cargo", ["build", ...args, "--target", triple]);
	}
	return join(process.env.CARGO_TARGET_DIR ?? join(REPO, "target"), triple, "dist");
}

/** The platform package's folder: its package.json, a README and the binaries. */
function stagePlatform(platform, binaries, main, stage) {
	const { os, cpu, libc } = PLATFORMS[platform];
	const lib = os === "darwin" ? "libsession_index.dylib" : "libsession_index.so";
	const files = ["pi-ext-host", "session-index", lib];
	rmSync(stage, { recursive: true, force: true });
	mkdirSync(stage, { recursive: true });
	for (const file of files) {
		if (!existsSync(join(binaries, file))) fail(`${join(binaries, file)} was not built`);
		copyFileSync(join(binaries, file), join(stage, file));
	}
	const manifest = {
		name: `@session-index/${platform}`,
		version: main.version,
		description: `The ${platform} binaries of session-index: pi-ext-host, the plugin library and the session-index CLI`,
		license: main.license,
		repository: main.repository,
		os: [os],
		cpu: [cpu],
		...(libc ? { libc: [libc] } : {}),
		files: [...files, "README.md"],
		preferUnplugged: true,
	};
	writeFileSync(join(stage, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`);
	const readme = `# @session-index/${platform}\n\nThe prebuilt native parts of [session-index](https://www.npmjs.com/package/session-index) for ${platform}${libc ? ` (glibc ≥ ${PLATFORMS[platform].glibc})` : ""}.\nInstall \`session-index\` (or \`pi install npm:session-index\`), not this package: npm picks it for you.\n`;
	writeFileSync(join(stage, "README.md"), readme);
}

/**
 * The main package's folder: the files package.json's `files` names (as npm would pack them) and a
 * package.json without `scripts`. An installed package needs none: the bridge and the launcher find
 * the platform package at run time, and npm 11 skips a global install's `install` script anyway, with a
 * warning. The repository's own `install` script serves source installs (`pi install git:`).
 */
function stageMain(main, stage) {
	rmSync(stage, { recursive: true, force: true });
	const listing = execFileSync("npm", ["pack", "--dry-run", "--json"], { cwd: REPO, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
	for (const { path } of JSON.parse(listing)[0].files) {
		mkdirSync(dirname(join(stage, path)), { recursive: true });
		copyFileSync(join(REPO, path), join(stage, path));
	}
	const { scripts, ...published } = main;
	writeFileSync(join(stage, "package.json"), `${JSON.stringify(published, null, 2)}\n`);
}

/** `npm pack` of `dir` into `out`; returns npm's report (filename, size, unpackedSize). */
function npmPack(dir, out) {
	const json = execFileSync("npm", ["pack", dir, "--json", "--pack-destination", out], { cwd: REPO, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
	const [report] = JSON.parse(json);
	return { file: join(out, report.filename), size: report.size, unpackedSize: report.unpackedSize, files: report.entryCount };
}

const main = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8"));
const platform = option("--platform", `${process.platform}-${process.arch}`);
if (!PLATFORMS[platform]) fail(`no platform package for ${platform} (there are: ${Object.keys(PLATFORMS).join(", ")})`);
for (const [name, version] of Object.entries(main.optionalDependencies ?? {})) {
	if (version !== main.version) fail(`package.json: optionalDependencies.${name} is ${version}, the package is ${main.version}`);
}
if (!main.optionalDependencies?.[`@session-index/${platform}`]) fail(`package.json does not list @session-index/${platform} in optionalDependencies`);

const out = resolve(option("--out", join(REPO, "target", "npm")));
mkdirSync(out, { recursive: true });
const started = Date.now();
const binaries = buildBinaries(platform);
const stage = join(out, "stage", platform);
stagePlatform(platform, binaries, main, stage);
stageMain(main, join(out, "stage", "main"));
const packs = { platform: npmPack(stage, out), main: npmPack(join(out, "stage", "main"), out) };
writeFileSync(join(out, "packs.json"), `${JSON.stringify({ platform, seconds: Math.round((Date.now() - started) / 1000), ...packs }, null, 2)}\n`);
for (const [what, pack] of Object.entries(packs)) {
	const mb = (bytes) => `${(bytes / 1e6).toFixed(2)} MB`;
	console.error(`pack: ${what}: ${pack.file}: ${mb(pack.size)} compressed, ${mb(pack.unpackedSize)} unpacked, ${pack.files} files`);
}
