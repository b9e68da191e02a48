// The package's native parts (the `pi-ext-host` binary, the plugin library and the `session-index`
// CLI): where they are found, and the build that makes them in a source checkout.
//
// Plain JavaScript, so one file serves the bridge (loaded by pi), the npm `install` script
// (`node bridge/native.mjs install`), `npm run build` (`node bridge/native.mjs build`) and the
// `session-index` launcher (bin/session-index.mjs).
//
// Lookup, first hit wins:
//   1. PI_EXT_HOST / PI_EXT_PLUGIN / PI_EXT_LIB / PI_EXT_CONFIG (overrides)
//   2. a source checkout's own build, `<package>/target/release`, when no source file is newer
//   3. the prebuilt platform package `@session-index/<platform>-<arch>` (an optionalDependency:
//      npm installs only the one whose `os`/`cpu` match this machine)
//   4. the manual layout: everything in the bridge's own directory
//   5. `pi-ext-host` on PATH (the library through plugin.toml's own search)
// A source checkout with none of 2–4 is built (`cargo build --release`) by a detached background
// process, so pi starts at once: the bridge shows its progress and turns the plugin on when it is
// done (or at the next start), and a failed build is one line with the command that shows why.
import { spawn } from "node:child_process";
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, rmSync, statSync, writeFileSync, writeSync } from "node:fs";
import { createRequire } from "node:module";
import { homedir, setPriority } from "node:os";
import { delimiter, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const exe = process.platform === "win32" ? ".exe" : "";
const LIB = { darwin: "libsession_index.dylib", win32: "session_index.dll" }[process.platform] ?? "libsession_index.so";
const HOST = `pi-ext-host${exe}`;
const CLI = `session-index${exe}`;
export const PLATFORM = `${process.platform}-${process.arch}`;
export const PLATFORM_PACKAGE = `@session-index/${PLATFORM}`;
/** The platforms with a prebuilt package (npm/pack.mjs builds them; .github/workflows/release.yml publishes). */
export const PUBLISHED_PLATFORMS = ["linux-x64", "linux-arm64", "darwin-x64", "darwin-arm64"];
export const BUILD_ARGS = ["build", "--release", "-p", "session-index", "-p", "pi-ext-host"];
/** Written into target/release after each successful build (cargo leaves fresh outputs untouched). */
const STAMP = ".session-index-built";

/** The package root (package.json and plugin.toml one level up), if the bridge runs from one. */
export function packageRoot() {
	const root = resolve(here, "..");
	return ["package.json", "plugin.toml"].every((f) => existsSync(join(root, f))) ? root : undefined;
}

/** A source checkout (a git clone or a local path): the package root also holds the Rust workspace. */
export function isCheckout(root) {
	return Boolean(root) && existsSync(join(root, "Cargo.toml")) && existsSync(join(root, "src"));
}

/** The installed platform package matching this machine: its directory and version. */
export function platformPackage(root) {
	if (!root) return undefined;
	try {
		const manifest = createRequire(join(root, "package.json")).resolve(`${PLATFORM_PACKAGE}/package.json`);
		return { dir: dirname(manifest), version: JSON.parse(readFileSync(manifest, "utf8")).version };
	} catch {
		return undefined;
	}
}

function onPath(name) {
	for (const dir of (process.env.PATH ?? "").split(delimiter)) {
		if (dir && existsSync(join(dir, name))) return join(dir, name);
	}
	return undefined;
}

/** Newest modification time (ms) of what the native parts are built from. */
function sourcesTime(root) {
	let newest = 0;
	const walk = (path) => {
		const st = statSync(path, { throwIfNoEntry: false });
		if (st?.isDirectory()) for (const name of readdirSync(path)) walk(join(path, name));
		else if (st && /\.(rs|toml|lock)$/.test(path)) newest = Math.max(newest, st.mtimeMs);
	};
	for (const path of ["Cargo.toml", "Cargo.lock", "build.rs", "src", "crates"]) walk(join(root, path));
	return newest;
}

/** The checkout's own build, when it holds the host and the library and no source is newer. */
function freshBuild(root) {
	if (!isCheckout(root)) return undefined;
	const dir = join(root, "target", "release");
	if (!existsSync(join(dir, HOST)) || !existsSync(join(dir, LIB))) return undefined;
	const built = [HOST, LIB, STAMP].map((f) => statSync(join(dir, f), { throwIfNoEntry: false })?.mtimeMs ?? 0);
	return Math.max(...built) >= sourcesTime(root) ? dir : undefined;
}

/** Why nothing runs here: no prebuilt package for this machine, and no sources to build. */
function noPartsReason() {
	const published = PUBLISHED_PLATFORMS.includes(PLATFORM)
		? `${PLATFORM_PACKAGE} is not installed (npm skipped the optional dependency; reinstall the package)`
		: `no prebuilt package for ${PLATFORM} (there are: ${PUBLISHED_PLATFORMS.join(", ")})`;
	return `${published}; or install from source: pi install git:<repository> (needs Rust)`;
}

/**
 * @typedef {object} NativeParts
 * @property {string | undefined} root the package root
 * @property {string} plugin the directory holding plugin.toml
 * @property {string | undefined} config the config file, when not the manifest's default
 * @property {string} host the `pi-ext-host` binary
 * @property {string | undefined} lib the plugin library (else plugin.toml's own search)
 * @property {string} [cli] the `session-index` CLI
 * @property {"override" | "build" | "platform" | "manual" | "path"} [from] where the parts come from
 * @property {string} [package] the platform package, as `name@version`
 * @property {boolean} needsBuild a source checkout with nothing usable: build it
 * @property {string} [missing] why nothing can run here
 */

/**
 * Where the host, plugin directory, library, CLI and config are (`agentDir` is pi's).
 * `from` says where the parts come from (`override`, `build`, `platform`, `manual`, `path`);
 * `needsBuild` is set for a checkout with nothing usable (see `startBuild`), and `missing` says
 * why nothing can run when neither holds.
 * @param {string} agentDir
 * @returns {NativeParts}
 */
export function locate(agentDir, env = process.env) {
	const root = packageRoot();
	const userConfig = join(agentDir, "session-index.config.json");
	const found = {
		root,
		plugin: env.PI_EXT_PLUGIN || root || (existsSync(join(here, "plugin.toml")) ? here : join(agentDir, "extensions", "session-index")),
		config: env.PI_EXT_CONFIG || (existsSync(userConfig) ? userConfig : undefined),
		needsBuild: false,
	};
	// An overridden host brings its own library (or plugin.toml's search finds it).
	if (env.PI_EXT_HOST) return { ...found, from: "override", host: env.PI_EXT_HOST, lib: env.PI_EXT_LIB || undefined };
	const platform = platformPackage(root);
	const candidates = [
		{ from: "build", dir: freshBuild(root) },
		{ from: "platform", dir: platform?.dir, package: platform && `${PLATFORM_PACKAGE}@${platform.version}` },
		{ from: "manual", dir: here },
	];
	// Host and library from one place (a matching pair).
	const hit = candidates.find((c) => c.dir && existsSync(join(c.dir, HOST)) && existsSync(join(c.dir, LIB)));
	if (hit) return { ...found, from: hit.from, package: hit.package, host: join(hit.dir, HOST), lib: env.PI_EXT_LIB || join(hit.dir, LIB), cli: join(hit.dir, CLI) };
	if (isCheckout(root)) return { ...found, needsBuild: true, host: join(root, "target", "release", HOST), lib: env.PI_EXT_LIB || undefined };
	const host = onPath(HOST);
	if (host) return { ...found, from: "path", host, lib: env.PI_EXT_LIB || undefined };
	return { ...found, missing: noPartsReason(), host: HOST };
}

/** The `session-index` CLI binary for the launcher: the platform package's, else a checkout's build. */
export function cliBinary() {
	const root = packageRoot();
	const dirs = [platformPackage(root)?.dir, root && join(root, "target", "release")].filter(Boolean);
	return dirs.map((d) => join(d, CLI)).find((p) => existsSync(p));
}

// ---- the build of a source checkout ---------------------------------------------------------------

/** `cargo` on PATH, else rustup's default location. */
function cargoCommand() {
	return onPath(`cargo${exe}`) ?? [join(homedir(), ".cargo", "bin", `cargo${exe}`)].find((p) => existsSync(p));
}

/** The files of the build in `<root>/target/session-index-build/`: its lock (the builder's pid), cargo's log, its outcome. */
export function buildFiles(root) {
	const dir = join(root, "target", "session-index-build");
	return { dir, lock: join(dir, "lock"), log: join(dir, "cargo.log"), outcome: join(dir, "outcome.json") };
}

/** The command that runs the build in the foreground, with cargo's own output (why it failed). */
export function buildCommand(root) {
	return `cd ${root} && cargo ${BUILD_ARGS.join(" ")}`;
}

/** A small file's text, or "" when it is missing. */
function readText(path) {
	try {
		return readFileSync(path, "utf8");
	} catch {
		return "";
	}
}

function alive(pid) {
	try {
		process.kill(pid, 0);
		return true;
	} catch (err) {
		return err.code === "EPERM";
	}
}

/** The pid holding the build lock, when that process is alive. */
function lockHolder(root) {
	const pid = Number.parseInt(readText(buildFiles(root).lock), 10);
	return Number.isInteger(pid) && pid > 0 && alive(pid) ? pid : undefined;
}

/** Take the build lock for `pid`; false when a live process holds it (a stale lock is taken over). */
function takeLock(root, pid) {
	const { dir, lock } = buildFiles(root);
	mkdirSync(dir, { recursive: true });
	for (let attempt = 0; attempt < 2; attempt++) {
		try {
			const fd = openSync(lock, "wx");
			writeFileSync(fd, String(pid));
			closeSync(fd);
			return true;
		} catch (err) {
			if (err.code !== "EEXIST" || lockHolder(root)) return false;
			rmSync(lock, { force: true }); // its holder died
		}
	}
	return false;
}

/**
 * The build's state: `running` (with `percent` from cargo's progress), else the last outcome
 * (`ok`, `error`: one line), else nothing.
 */
export function buildState(root) {
	const files = buildFiles(root);
	if (lockHolder(root)) return { running: true, percent: progress(files.log) };
	try {
		return { running: false, ...JSON.parse(readFileSync(files.outcome, "utf8")) };
	} catch {
		return { running: false };
	}
}

/** Cargo's progress bar (`Building [===>  ] 37/120: …`, forced on in the log) as a percentage. */
function progress(log) {
	let text = "";
	try {
		const fd = openSync(log, "r");
		const size = statSync(log).size;
		const tail = Buffer.alloc(Math.min(size, 8192));
		readSync(fd, tail, 0, tail.length, size - tail.length);
		closeSync(fd);
		text = tail.toString("utf8");
	} catch {
		return 0;
	}
	const counts = [...text.matchAll(/(\d+)\/(\d+): /g)].at(-1);
	return counts && Number(counts[2]) > 0 ? Math.floor((100 * Number(counts[1])) / Number(counts[2])) : 0;
}

/**
 * Start the checkout's build in a detached process that outlives pi (`node native.mjs build
 * --background`), unless one is running. Returns the build files; `buildState` follows it.
 */
export function startBuild(root) {
	const files = buildFiles(root);
	if (!takeLock(root, process.pid)) return files; // a build is running: follow it
	const out = openSync(files.log, "w");
	const child = spawn(process.execPath, [fileURLToPath(import.meta.url), "build", "--background"], {
		cwd: root,
		detached: true,
		stdio: ["ignore", out, out],
		windowsHide: true,
	});
	closeSync(out);
	writeFileSync(files.lock, String(child.pid));
	child.unref();
	return files;
}

/**
 * `cargo build --release -p session-index -p pi-ext-host` into `<root>/target` (whatever
 * CARGO_TARGET_DIR says: the bridge looks there), cargo's output to file descriptor `fd`. Resolves
 * with the outcome (`ok`, `error`: one line naming the command that shows why), never rejects.
 */
export function build(root, fd = 2) {
	const files = buildFiles(root);
	const finish = (outcome) => {
		writeFileSync(files.outcome, JSON.stringify({ ...outcome, finished: new Date().toISOString(), log: files.log }));
		if (readText(files.lock) === String(process.pid)) rmSync(files.lock, { force: true });
		return outcome;
	};
	const cargo = cargoCommand();
	if (!cargo) return Promise.resolve(finish({ ok: false, error: `cargo was not found: install Rust (https://rustup.rs), then restart pi (or: ${buildCommand(root)})` }));
	const args = [...BUILD_ARGS, "--target-dir", join(root, "target")];
	writeSync(fd, `session-index: cargo ${args.join(" ")} in ${root}\n`);
	// Cargo's progress bar, also when its output is not a terminal: the bridge reads the percentage.
	const env = { ...process.env, CARGO_TERM_PROGRESS_WHEN: "always", CARGO_TERM_PROGRESS_WIDTH: "100" };
	return new Promise((done) => {
		const child = spawn(cargo, args, { cwd: root, env, stdio: ["ignore", fd, fd] });
		child.once("error", (err) => done(finish({ ok: false, error: `cannot run ${cargo}: ${err.message}` })));
		child.once("exit", (code, signal) => {
			if (code === 0) {
				writeFileSync(join(root, "target", "release", STAMP), `${new Date().toISOString()}\n`);
				done(finish({ ok: true }));
			} else {
				const why = signal ?? `exit code ${code}`;
				done(finish({ ok: false, error: `cargo build failed (${why}); to see why: ${buildCommand(root)}` }));
			}
		});
	});
}

// ---- command line: the npm install script, `npm run build`, the background build ----------------

/** One line on what the package runs on; in a checkout without parts, starts the background build. */
function install() {
	const root = packageRoot();
	const found = locate(join(homedir(), ".pi", "agent"), {});
	if (found.from === "platform") return say(`using the prebuilt ${found.package}`);
	if (found.from === "build") return say(`using this checkout's build (${join(root, "target", "release")})`);
	if (found.needsBuild) {
		const { log } = startBuild(root);
		return say(`no prebuilt package fits; building the native parts in the background (${buildCommand(root)}, log: ${log}); pi turns session-index on when it is done`);
	}
	say(`session-index stays off: ${found.missing ?? "no native parts found"}`);
}

function lowerPriority() {
	try {
		setPriority(10);
	} catch {
		// not permitted here: build at the normal priority
	}
}

function say(line) {
	console.error(`session-index: ${line}`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
	const [command, flag] = process.argv.slice(2);
	const root = packageRoot();
	if (command === "install") {
		// Never fails the install: pi works without session-index, and says why it is off.
		try {
			install();
		} catch (err) {
			say(`${err.message}`);
		}
	} else if (command === "build" && isCheckout(root)) {
		// `--background`: started by startBuild, which took the lock for this process. It runs at a
		// lower priority (cargo and rustc inherit it), so the pi the user works in stays responsive.
		if (flag === "--background") lowerPriority();
		if (flag !== "--background" && !takeLock(root, process.pid)) {
			say(`a build is already running (pid ${lockHolder(root)}); its log: ${buildFiles(root).log}`);
			process.exit(1);
		}
		build(root, flag === "--background" ? 1 : 2).then((outcome) => {
			if (!outcome.ok) say(outcome.error);
			process.exit(outcome.ok ? 0 : 1);
		});
	} else {
		say("usage: node bridge/native.mjs install | build (build runs in a source checkout only)");
		process.exit(2);
	}
}
