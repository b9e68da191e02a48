// The bridge's native parts (the `pi-ext-host` binary and the plugin library):
// where they are found, and the one-time build that makes them.
//
// Plain JavaScript, so the same file serves the bridge (loaded by pi) and the
// package's npm `install` script (`node bridge/native.mjs build`),
// which `pi install git:…` runs after cloning.
//
// Lookup, first hit wins:
//   1. PI_EXT_HOST / PI_EXT_PLUGIN / PI_EXT_LIB / PI_EXT_CONFIG (overrides)
//   2. a prebuilt platform package `@session-index/<platform>-<arch>` in the
//      package's node_modules (optionalDependencies; none is published yet)
//   3. the package's own build, `<package>/target/release` (the install step;
//      built again when a source file is newer, e.g. after a pull)
//   4. the manual layout: everything in the bridge's own directory
//   5. `pi-ext-host` on PATH (the library through plugin.toml's search)
import { spawn } from "node:child_process";
import { existsSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { homedir } from "node:os";
import { delimiter, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const exe = process.platform === "win32" ? ".exe" : "";
const LIB = { darwin: "libsession_index.dylib", win32: "session_index.dll" }[process.platform] ?? "libsession_index.so";
const HOST = `pi-ext-host${exe}`;
/** Written into target/release after each successful build (cargo leaves fresh outputs untouched). */
const STAMP = ".session-index-built";
export const PLATFORM_PACKAGE = `@session-index/${process.platform}-${process.arch}`;
export const BUILD_ARGS = ["build", "--release", "-p", "session-index", "-p", "pi-ext-host"];

/** The package root (package.json + plugin.toml + Cargo.toml one level up), if the bridge runs from one. */
export function packageRoot() {
	const root = resolve(here, "..");
	const ok = ["package.json", "plugin.toml", "Cargo.toml"].every((f) => existsSync(join(root, f)));
	return ok ? root : undefined;
}

/** The prebuilt platform package's directory, when one is installed. */
function platformDir(root) {
	try {
		return dirname(createRequire(join(root, "package.json")).resolve(`${PLATFORM_PACKAGE}/package.json`));
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
	for (const path of ["Cargo.toml", "Cargo.lock", "src", "crates"]) walk(join(root, path));
	return newest;
}

/** The package's own build is older than its sources (a pulled checkout): build again. */
function stale(root, dir, files) {
	const built = [...files, STAMP].map((f) => statSync(join(dir, f), { throwIfNoEntry: false })?.mtimeMs ?? 0);
	return Math.max(...built) < sourcesTime(root);
}

/**
 * Where the host, plugin directory, library and config are (`agentDir` is
 * pi's). `built` is false for a source checkout whose parts are missing.
 */
export function locate(agentDir, env = process.env) {
	const root = packageRoot();
	const release = root && join(root, "target", "release");
	const dirs = [root && platformDir(root), release, here].filter(Boolean);
	// Host and library from one place when one has both (a matching pair).
	const both = dirs.find((d) => existsSync(join(d, HOST)) && existsSync(join(d, LIB)));
	const find = (name) => (both ? join(both, name) : dirs.map((d) => join(d, name)).find((p) => existsSync(p)));
	const [host, lib] = [env.PI_EXT_HOST || find(HOST), env.PI_EXT_LIB || find(LIB)];
	const userConfig = join(agentDir, "session-index.config.json");
	return {
		root,
		// An overridden host brings its own library (or plugin.toml's search finds it).
		built: !root || Boolean(env.PI_EXT_HOST) || (Boolean(host && lib) && !(both === release && stale(root, release, [HOST, LIB]))),
		plugin: env.PI_EXT_PLUGIN || root || (existsSync(join(here, "plugin.toml")) ? here : join(agentDir, "extensions", "session-index")),
		host: host || onPath(HOST) || HOST,
		// Undefined: plugin.toml's own search (next to it, target/release, target/debug).
		lib,
		config: env.PI_EXT_CONFIG || (existsSync(userConfig) ? userConfig : undefined),
	};
}

/** `cargo` on PATH, else rustup's default location. */
function cargoCommand() {
	return onPath(`cargo${exe}`) ?? [join(homedir(), ".cargo", "bin", `cargo${exe}`)].find((p) => existsSync(p));
}

/**
 * `cargo build --release -p session-index -p pi-ext-host` into `<root>/target`
 * (whatever CARGO_TARGET_DIR says: the bridge looks there). Progress goes to
 * stderr (stdout may be pi's RPC channel). Rejects with one actionable line.
 */
export function build(root, say = (line) => process.stderr.write(`${line}\n`)) {
	const cargo = cargoCommand();
	if (!cargo) {
		return Promise.reject(
			new Error(`cargo was not found: install Rust (https://rustup.rs), then run \`npm run build\` in ${root} (or restart pi)`),
		);
	}
	const args = [...BUILD_ARGS, "--target-dir", join(root, "target")];
	say(`session-index: building the native parts once (cargo ${BUILD_ARGS.join(" ")}) in ${root}; this takes a few minutes the first time`);
	return new Promise((resolvePromise, reject) => {
		const child = spawn(cargo, args, { cwd: root, stdio: ["ignore", process.stderr, process.stderr] });
		child.once("error", (err) => reject(new Error(`cannot run ${cargo}: ${err.message}`)));
		child.once("exit", (code, signal) => {
			if (code === 0) {
				writeFileSync(join(root, "target", "release", STAMP), `${new Date().toISOString()}\n`);
				resolvePromise();
			}
			else reject(new Error(`cargo build failed (${signal ?? `exit code ${code}`}); run \`cargo ${args.join(" ")}\` in ${root} to see why`));
		});
	});
}

// `node native.mjs build`: the npm install script.
if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url) && process.argv[2] === "build") {
	const root = packageRoot();
	if (!root) {
		console.error("session-index: native.mjs build must run inside the session-index package");
		process.exit(1);
	}
	if (platformDir(root)) {
		console.error(`session-index: using the prebuilt ${PLATFORM_PACKAGE}; nothing to build`);
	} else {
		build(root).then(
			() => console.error("session-index: native parts built"),
			(err) => {
				console.error(`session-index: ${err.message}`);
				process.exit(1);
			},
		);
	}
}
