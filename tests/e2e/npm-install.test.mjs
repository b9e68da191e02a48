// session-index as a pi user without Rust gets it: the packed platform package and main package
// (npm/pack.mjs, `npm run pack:all`) are published to a real npm registry on loopback (verdaccio,
// tests/e2e/registry), then, in a clean HOME with no cargo or rustc on PATH,
// `pi install npm:session-index` installs them; real pi (mock provider) runs 6 prompts and the
// meta file is written; `session-index list` works from the PATH; `pi remove` leaves no process.
//
// The packs come from PI_E2E_PACKS (a folder holding packs.json), else target/npm, packed here
// first when missing or older than a source (the dist profile's build; .ci/run packs before the
// tests).
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { after, before, test } from "node:test";
import { startMockServer } from "./mock-llm.mjs";
import { PiRpc } from "./pi-rpc.mjs";
import { eventually, piCli, piPackageDir, REPO, writeMockModels } from "./setup.mjs";

const PACKS = process.env.PI_E2E_PACKS ?? join(REPO, "target", "npm");
const REGISTRY_DIR = join(REPO, "tests/e2e/registry");
const PROC = existsSync("/proc/self/stat");
/** The platform package of this machine, as npm/pack.mjs names it. */
const PLATFORM_PACKAGE = `@session-index/${process.platform}-${process.arch}`;
/** The newest glibc the Linux binaries may need: every maintained distribution has 2.28. */
const GLIBC_MAX = [2, 28];

let mock;
let registry;
let root;
let home;
let prefix;
let env;
let pi;
let packs;
const state = {};

function freePort() {
	return new Promise((resolve, reject) => {
		const server = createServer();
		server.once("error", reject);
		server.listen(0, "127.0.0.1", () => {
			const { port } = server.address();
			server.close(() => resolve(port));
		});
	});
}

/** verdaccio 6.8.0 on loopback: anyone may publish, no uplink (only what the test publishes exists). */
async function startRegistry(dir) {
	const verdaccio = join(REGISTRY_DIR, "node_modules/verdaccio/bin/verdaccio");
	if (!existsSync(verdaccio)) {
		const install = spawnSync("npm", ["ci", "--no-audit", "--no-fund", "--prefix", REGISTRY_DIR], { stdio: ["ignore", "inherit", "inherit"] });
		assert.equal(install.status, 0, "npm ci --prefix tests/e2e/registry (verdaccio) failed");
	}
	const port = await freePort();
	const config = [
		`storage: ${join(dir, "storage")}`,
		"uplinks: {}",
		"packages:",
		"  '**':",
		"    access: $all",
		"    publish: $all",
		"    unpublish: $all",
		"max_body_size: 200mb",
		"log: { type: stdout, format: pretty, level: warn }",
	].join("\n");
	writeFileSync(join(dir, "config.yaml"), `${config}\n`);
	const child = spawn(process.execPath, [verdaccio, "--config", join(dir, "config.yaml"), "--listen", `127.0.0.1:${port}`], {
		stdio: ["ignore", "pipe", "pipe"],
	});
	let output = "";
	child.stdout.on("data", (c) => (output += c));
	child.stderr.on("data", (c) => (output += c));
	const url = `http://127.0.0.1:${port}`;
	await eventually(async () => (await fetch(`${url}/-/ping`)).ok, `verdaccio on ${url}\n${output}`, 60_000);
	return {
		url,
		auth: `--//127.0.0.1:${port}/:_authToken=e2e`,
		stop: () => new Promise((resolve) => (child.exitCode === null ? (child.once("exit", resolve), child.kill()) : resolve())),
	};
}

/** Newest modification time (ms) of what the packs are made from. */
function sourcesTime() {
	let newest = 0;
	const walk = (path) => {
		const st = statSync(path, { throwIfNoEntry: false });
		if (st?.isDirectory()) for (const name of readdirSync(path)) walk(join(path, name));
		else if (st) newest = Math.max(newest, st.mtimeMs);
	};
	const sources = ["Cargo.toml", "Cargo.lock", "build.rs", "src", "crates", "bridge", "bin", "index.ts", "package.json", "plugin.toml", "session-index.config.json"];
	for (const path of sources) walk(join(REPO, path));
	return newest;
}

/** The packs of npm/pack.mjs, packing them first when there are none or a source is newer. */
function ensurePacks() {
	const report = join(PACKS, "packs.json");
	const packed = statSync(report, { throwIfNoEntry: false })?.mtimeMs ?? 0;
	if (!process.env.PI_E2E_PACKS && packed < sourcesTime()) {
		console.error(`npm e2e: ${packed ? "the packs are older than the sources" : `no packs in ${PACKS}`}: running npm/pack.mjs (a release build of the dist profile)`);
		const pack = spawnSync(process.execPath, [join(REPO, "npm/pack.mjs"), "--out", PACKS], { stdio: ["ignore", "inherit", "inherit"] });
		assert.equal(pack.status, 0, "npm/pack.mjs failed");
	}
	return JSON.parse(readFileSync(report, "utf8"));
}

/** PATH for a user without Rust: npm's global bin, node (with npm) and the system, minus any dir holding cargo or rustc. */
function userPath() {
	const dirs = [join(prefix, "bin"), dirname(process.execPath), "/usr/local/bin", "/usr/bin", "/bin"];
	const rust = (dir) => ["cargo", "rustc", "cargo.exe", "rustc.exe"].some((tool) => existsSync(join(dir, tool)));
	return [...new Set(dirs)].filter((dir) => !rust(dir)).join(delimiter);
}

/** The user's environment: a clean HOME and npm prefix, the local registry, nothing of cargo's or this build's. */
function userEnv() {
	const ours = /^(PI_EXT_|PI_E2E_|PI_CODING_AGENT_DIR$|CARGO|RUSTUP_|RUSTC|OUT_DIR$|npm_)/i;
	const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !ours.test(k)));
	return {
		...clean,
		HOME: home,
		USERPROFILE: home,
		PATH: userPath(),
		npm_config_registry: registry.url,
		npm_config_prefix: prefix,
		npm_config_cache: join(root, "npm-cache"),
		npm_config_update_notifier: "false",
		npm_config_audit: "false",
		npm_config_fund: "false",
		PI_OFFLINE: "1",
		PI_SKIP_VERSION_CHECK: "1",
		PI_TELEMETRY: "0",
	};
}

function piCommand(args, timeout = 180_000) {
	return spawnSync(process.execPath, [piCli(), ...args], { cwd: join(root, "project"), env, encoding: "utf8", timeout });
}

/** Where `npm install -g` put the main package. */
function installedPackage() {
	return join(prefix, process.platform === "win32" ? "" : "lib", "node_modules", "session-index");
}

/** pids of live processes whose executable lies under the npm prefix (the installed pi-ext-host). */
function processesUnder(dir) {
	const found = [];
	for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
		try {
			const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
			if (stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")) continue;
			if (readlinkSync(`/proc/${pid}/exe`).startsWith(dir)) found.push(Number(pid));
		} catch {
			// gone meanwhile, or not ours to read
		}
	}
	return found;
}

/** The newest `GLIBC_x.y` symbol version an ELF binary needs (objdump -T). */
function newestGlibc(file) {
	const dump = spawnSync("objdump", ["-T", file], { encoding: "utf8" });
	assert.equal(dump.status, 0, `objdump -T ${file}: ${dump.stderr}`);
	const versions = [...dump.stdout.matchAll(/GLIBC_(\d+(?:\.\d+)+)/g)].map((m) => m[1].split(".").map(Number));
	return versions.reduce((max, v) => (isNewer(v, max) ? v : max), [0, 0]);
}

/** Whether version `a` (e.g. [2, 28]) is newer than `b`. */
function isNewer(a, b) {
	for (let i = 0; i < Math.max(a.length, b.length); i++) {
		if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) > (b[i] ?? 0);
	}
	return false;
}

before(async () => {
	packs = ensurePacks();
	root = join(tmpdir(), `pi-e2e-npm-${process.pid}`);
	rmSync(root, { recursive: true, force: true });
	home = join(root, "home");
	prefix = join(root, "npm-global");
	const agentDir = join(home, ".pi", "agent");
	for (const dir of [agentDir, prefix, join(root, "project"), join(root, "registry")]) mkdirSync(dir, { recursive: true });
	mock = await startMockServer();
	registry = await startRegistry(join(root, "registry"));
	writeMockModels(agentDir, mock.url);
	writeFileSync(join(agentDir, "session-index.config.json"), JSON.stringify({ modelKeys: ["mock/mock-cheap"], offlineFallback: false, timeoutMs: 20000 }));
	state.agentDir = agentDir;
	env = userEnv();
});

after(async () => {
	await pi?.stop();
	await registry?.stop();
	await mock?.close();
	if (root && !process.env.PI_E2E_KEEP) rmSync(root, { recursive: true, force: true });
	else if (root) console.error(`kept ${root}`);
});

test("the packs: sizes, and Linux binaries that need no glibc newer than 2.28", () => {
	const mb = (bytes) => `${(bytes / 1e6).toFixed(2)} MB`;
	for (const [what, pack] of Object.entries({ platform: packs.platform, main: packs.main })) {
		console.error(`npm e2e: ${what} package ${pack.file.split("/").at(-1)}: ${mb(pack.size)} compressed, ${mb(pack.unpackedSize)} unpacked`);
	}
	if (process.platform !== "linux") return;
	const stage = join(dirname(packs.platform.file), "stage", packs.platform.file.includes("arm64") ? "linux-arm64" : "linux-x64");
	for (const binary of ["pi-ext-host", "session-index", "libsession_index.so"]) {
		const newest = newestGlibc(join(stage, binary));
		console.error(`npm e2e: ${binary} needs GLIBC_${newest.join(".")}`);
		assert.ok(!isNewer(newest, GLIBC_MAX), `${binary} needs GLIBC_${newest.join(".")}, newer than ${GLIBC_MAX.join(".")}`);
	}
});

test("both packages publish to the local registry", () => {
	for (const pack of [packs.platform, packs.main]) {
		const publish = spawnSync("npm", ["publish", pack.file, "--registry", registry.url, registry.auth, "--access", "public"], {
			encoding: "utf8",
			env: { ...process.env, npm_config_cache: join(root, "publish-cache") },
		});
		assert.equal(publish.status, 0, `npm publish ${pack.file}\n${publish.stdout}\n${publish.stderr}`);
	}
});

test("pi install npm:session-index with no Rust toolchain: prebuilt, nothing compiles", () => {
	assert.ok(!env.PATH.split(delimiter).some((d) => existsSync(join(d, "cargo")) || existsSync(join(d, "rustc"))), "no cargo or rustc on PATH");
	const started = Date.now();
	const out = piCommand(["install", "npm:session-index"]);
	const seconds = (Date.now() - started) / 1000;
	console.error(`npm e2e: pi install npm:session-index took ${seconds.toFixed(1)} s`);
	assert.equal(out.status, 0, `pi install failed\n${out.stdout}\n${out.stderr}`);
	for (const line of `${out.stdout}\n${out.stderr}`.split("\n").filter((l) => /session-index:|install-scripts|added/.test(l))) console.error(`npm e2e: | ${line}`);
	const installed = installedPackage();
	const platformDir = join(installed, "node_modules", PLATFORM_PACKAGE);
	assert.ok(existsSync(join(platformDir, "pi-ext-host")), `${PLATFORM_PACKAGE} holds pi-ext-host (${platformDir})\n${out.stdout}\n${out.stderr}`);
	// Nothing compiled: the installed tree has no cargo output and no sources to build from.
	assert.ok(!existsSync(join(installed, "target")), "no target/ directory in the installed package");
	assert.ok(!existsSync(join(installed, "Cargo.toml")), "the npm package ships no Rust sources");
	state.installed = installed;
});

test("pi's [Extensions] list names the extension session-index", () => {
	const labels = spawnSync(process.execPath, [join(REPO, "tests/e2e/extension-labels.mjs"), piPackageDir()], { cwd: join(root, "project"), env, encoding: "utf8" });
	assert.equal(labels.status, 0, labels.stderr);
	assert.deepEqual(JSON.parse(labels.stdout), ["session-index"]);
});

test("real pi loads the prebuilt parts, runs 6 prompts and writes the meta file", async () => {
	const log = join(root, "bridge.log");
	const started = Date.now();
	pi = new PiRpc({ cli: piCli(), args: ["--provider", "mock", "--model", "mock-main"], cwd: join(root, "project"), env: { ...env, PI_EXT_LOG: log } });
	const { commands } = await pi.command({ type: "get_commands" });
	console.error(`npm e2e: first pi start answered in ${((Date.now() - started) / 1000).toFixed(1)} s`);
	assert.ok(commands.some((c) => c.name === "index-session"), `index-session missing: ${commands.map((c) => c.name)}\n${pi.stderr.slice(-2000)}`);
	assert.match(readFileSync(log, "utf8"), new RegExp(`native parts: platform \\(${PLATFORM_PACKAGE}@`), "the bridge runs the platform package's binaries");
	if (PROC) assert.equal(processesUnder(prefix).length, 1, "one pi-ext-host from the installed package");

	const { sessionId } = await pi.command({ type: "get_state" });
	const metaFile = join(state.agentDir, "sessions-meta", `${sessionId}.meta.json`);
	for (let i = 1; i <= 6; i++) await pi.prompt(`TOPIC:npm-install Step ${i}: session-index installed from the registry.`);
	const meta = await eventually(() => existsSync(metaFile) && JSON.parse(readFileSync(metaFile, "utf8")), `meta file ${metaFile}\n${pi.stderr.slice(-2000)}`, 60_000);
	assert.equal(meta.sessionId, sessionId);
	assert.equal(meta.model, "mock/mock-cheap");
	state.sessionId = sessionId;
	await pi.stop();
	pi = undefined;
});

test("session-index list works from the PATH", () => {
	const list = spawnSync("session-index", ["list", "--all", "--json", "--wait"], { cwd: join(root, "project"), env, encoding: "utf8", timeout: 60_000 });
	assert.equal(list.status, 0, `session-index list\n${list.stdout}\n${list.stderr}`);
	const ids = JSON.parse(list.stdout).map((s) => s.id ?? s.sessionId);
	assert.ok(ids.includes(state.sessionId), `${state.sessionId} listed: ${ids}`);
});

test("pi remove npm:session-index removes the package and leaves no process behind", async () => {
	const out = piCommand(["remove", "npm:session-index"]);
	assert.equal(out.status, 0, `pi remove failed\n${out.stdout}\n${out.stderr}`);
	assert.ok(!existsSync(state.installed), "the package is gone from the npm prefix");
	assert.ok(!existsSync(join(prefix, "bin", "session-index")), "the session-index launcher is gone from the PATH");
	if (PROC) await eventually(() => processesUnder(prefix).length === 0, "no process from the installed package", 15_000);
});
