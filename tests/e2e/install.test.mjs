// session-index installed from source as a user installs it: `pi install <checkout>`
// into a fresh HOME, then plain `pi` (no -e, no PI_EXT_* variables: the bridge finds
// its host, library and the user's config itself), then `pi remove`. When the
// checkout's target/release is missing or older than the sources (always on a clean
// CI clone), the first start is usable at once while cargo builds in the background,
// with its progress in the status line, and session-index turns on when it is done.
//
// The temporary HOME isolates pi (~/.pi/agent: settings, models.json with the
// mock provider, sessions); CARGO_HOME and RUSTUP_HOME keep pointing at the
// machine's Rust toolchain so the build needs no network.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, test } from "node:test";
import { startMockServer } from "./mock-llm.mjs";
import { PiRpc } from "./pi-rpc.mjs";
import { buildFiles, locate } from "../../bridge/native.mjs";
import { eventually, makeWorld, piCli, REPO } from "./setup.mjs";

const THRESHOLD = 3;
const HOST = join(REPO, "target/release", `pi-ext-host${process.platform === "win32" ? ".exe" : ""}`);
const SO = process.platform === "darwin" ? "libsession_index.dylib" : process.platform === "win32" ? "session_index.dll" : "libsession_index.so";
const LIB = join(REPO, "target/release", SO);
const PROC = existsSync("/proc/self/stat");
/** "Usable at once": pi answers within this while the build runs. */
const FIRST_START_MS = 10_000;
/** The background build of the release profile on a busy 2-core machine. */
const BUILD_MS = 40 * 60_000;
/**
 * On CI (a clean clone, built once and thrown away) the background build is the release profile at
 * opt-level 0 without debug info: the same `cargo build --release` of the same sources and crates
 * from nothing, through the same bridge, progress line and turning on, at a third of the CPU (a
 * cold build here: 267 CPU-s against 809 at the profile's opt-level 3 with line tables).
 * That the optimized release code compiles and runs is proven in the same CI run by npm/pack.mjs's
 * `dist` profile (it inherits release), whose binaries npm-install.test.mjs installs and runs.
 * A developer's run builds their checkout's real target/release, as a user's pi does.
 */
const CI_BUILD = process.env.CI === "true" ? { CARGO_PROFILE_RELEASE_OPT_LEVEL: "0", CARGO_PROFILE_RELEASE_DEBUG: "false" } : {};

let mock;
let world;
let home;
let agentDir;
let env;
let pi;
const state = {};

/**
 * The user's environment: nothing that points at this build (nor the clippy
 * driver CI compiles the workspace with), and none of the variables `cargo
 * test` sets for its tests (ring's build script reruns when CARGO_PKG_NAME or
 * CARGO_MANIFEST_DIR differ, which would rebuild the whole release tree
 * instead of reusing it).
 */
function userEnv() {
	const ours = /^(PI_EXT_|PI_E2E_|PI_CODING_AGENT_DIR$|CARGO_TARGET_DIR$|RUSTC_WORKSPACE_WRAPPER$|CLIPPY_ARGS$)/;
	const cargoTest = /^(CARGO_PKG_|CARGO_MANIFEST_|CARGO_BIN_EXE_|CARGO_CRATE_NAME$|CARGO_TARGET_TMPDIR$|CARGO_PRIMARY_PACKAGE$|OUT_DIR$)/;
	const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !ours.test(k) && !cargoTest.test(k)));
	return {
		...clean,
		HOME: home,
		USERPROFILE: home,
		CARGO_HOME: process.env.CARGO_HOME ?? join(homedir(), ".cargo"),
		RUSTUP_HOME: process.env.RUSTUP_HOME ?? join(homedir(), ".rustup"),
		PI_OFFLINE: "1",
		PI_SKIP_VERSION_CHECK: "1",
		PI_TELEMETRY: "0",
		...CI_BUILD,
	};
}

function piCommand(args) {
	return spawnSync(process.execPath, [piCli(), ...args], { cwd: world.project, env, encoding: "utf8", timeout: 120_000 });
}

function settings() {
	return JSON.parse(readFileSync(join(agentDir, "settings.json"), "utf8"));
}

/** pids of live `pi-ext-host` processes started from this checkout for this HOME (Linux /proc). */
function hostProcesses() {
	const found = [];
	for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
		try {
			const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
			if (stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")) continue; // exited, not yet reaped
			if (readlinkSync(`/proc/${pid}/exe`) !== HOST) continue;
			if (readFileSync(`/proc/${pid}/environ`, "utf8").split("\0").includes(`HOME=${home}`)) found.push(Number(pid));
		} catch {
			// gone meanwhile, or not ours to read
		}
	}
	return found;
}

/** A background build still running when the test ends (it failed early) is stopped with its process group. */
function stopBuild() {
	try {
		const pid = Number(readFileSync(buildFiles(REPO).lock, "utf8"));
		if (pid > 0) process.kill(-pid, "SIGTERM");
	} catch {
		// no build running
	}
}

before(async () => {
	mock = await startMockServer();
	world = makeWorld(mock.url, "install");
	home = join(world.root, "home");
	agentDir = join(home, ".pi", "agent");
	mkdirSync(join(home, ".pi"), { recursive: true });
	renameSync(world.agentDir, agentDir); // models.json: the mock is pi's only provider
	const config = { minNewUserMessages: THRESHOLD, modelKeys: ["mock/mock-cheap"], offlineFallback: false, timeoutMs: 20000 };
	writeFileSync(join(agentDir, "session-index.config.json"), JSON.stringify(config, null, 2));
	env = userEnv();
});

after(async () => {
	await pi?.stop();
	stopBuild();
	await mock?.close();
	if (world && !process.env.PI_E2E_KEEP) rmSync(world.root, { recursive: true, force: true });
	else if (world) console.error(`kept ${world.root}`);
});

test("pi install <checkout> records the package in the user's settings", () => {
	const out = piCommand(["install", REPO]);
	assert.equal(out.status, 0, `pi install failed\n${out.stdout}\n${out.stderr}`);
	assert.match(out.stdout + out.stderr, /Installed/);
	const packages = settings().packages ?? [];
	assert.equal(packages.length, 1, JSON.stringify(packages));
	assert.equal(resolve(agentDir, packages[0]), REPO, "a local package is referenced, not copied");
});

test("the first pi start is usable at once; the build runs in the background and session-index turns on", async () => {
	const building = locate(agentDir, {}).needsBuild;
	const started = Date.now();
	pi = new PiRpc({ cli: piCli(), args: ["--provider", "mock", "--model", "mock-main"], cwd: world.project, env });
	const { commands } = await pi.command({ type: "get_commands" }, building ? FIRST_START_MS : 60_000);
	const seconds = ((Date.now() - started) / 1000).toFixed(1);
	console.error(`install e2e: first pi start answered in ${seconds} s (${building ? "while the native parts build in the background" : "target/release was up to date"})`);
	if (building) {
		assert.ok(!commands.some((c) => c.name === "index-session"), "session-index is not on before its build is done");
		const status = await pi.waitFor((e) => e.method === "setStatus" && e.statusKey === "session-index" && /building/.test(e.statusText ?? ""), "the build's progress in the status line");
		assert.match(status.statusText, /^session-index: building \d{1,3}%…$/);
		// pi is usable meanwhile: a prompt gets its answer.
		await pi.prompt("TOPIC:install While the native parts build, pi answers.");
		await pi.waitFor((e) => e.method === "notify" && /^session-index is (on|off)/.test(e.message ?? ""), `session-index turning on\n${pi.stderr.slice(-3000)}`, BUILD_MS);
		const outcome = JSON.parse(readFileSync(buildFiles(REPO).outcome, "utf8"));
		assert.equal(outcome.ok, true, `the build failed: ${outcome.error}`);
		const on = pi.events.find((e) => e.method === "notify" && /^session-index is on/.test(e.message ?? ""));
		assert.ok(on, `session-index turned on: ${JSON.stringify(pi.uiRequests("notify").map((e) => e.message))}`);
		console.error(`install e2e: ${on.message}`);
	}
	const after = building ? (await pi.command({ type: "get_commands" })).commands : commands;
	assert.ok(after.some((c) => c.name === "index-session"), `index-session missing: ${after.map((c) => c.name)}\n${pi.stderr.slice(-3000)}`);
	assert.ok(existsSync(HOST) && existsSync(LIB), "the host and the library are in the checkout's target/release");
	if (PROC) {
		const hosts = hostProcesses();
		assert.equal(hosts.length, 1, `one pi-ext-host from ${HOST}: ${hosts}`);
		state.host = hosts[0];
	}

	const { sessionId } = await pi.command({ type: "get_state" });
	const metaFile = join(agentDir, "sessions-meta", `${sessionId}.meta.json`);
	for (let i = 1; i <= THRESHOLD; i++) {
		await pi.prompt(`TOPIC:install Step ${i}: we install session-index with pi install.`);
		if (i < THRESHOLD && !building) assert.ok(!existsSync(metaFile), `meta written before the threshold (after ${i} prompts)`);
	}
	const meta = await eventually(() => existsSync(metaFile) && JSON.parse(readFileSync(metaFile, "utf8")), `meta file ${metaFile}\n${pi.stderr.slice(-3000)}`, 60_000);
	assert.equal(meta.sessionId, sessionId);
	assert.equal(meta.model, "mock/mock-cheap", "the user's config (~/.pi/agent/session-index.config.json) was used");
});

test("the host does not outlive pi, even when pi is killed", { skip: !PROC && "needs /proc" }, async () => {
	assert.ok(state.host, "needs the running host");
	pi.child.kill("SIGKILL");
	await pi.exited;
	pi = undefined;
	// stdin closes with pi: the host gives background work its deadline (5 s) and exits.
	await eventually(() => !hostProcesses().includes(state.host), `pi-ext-host ${state.host} to exit after pi was killed`, 15_000);
});

test("pi remove unregisters the package: pi starts without it and nothing is left running", async () => {
	const out = piCommand(["remove", REPO]);
	assert.equal(out.status, 0, `pi remove failed\n${out.stdout}\n${out.stderr}`);
	assert.deepEqual(settings().packages ?? [], []);
	pi = new PiRpc({ cli: piCli(), args: ["--provider", "mock", "--model", "mock-main"], cwd: world.project, env });
	const { commands } = await pi.command({ type: "get_commands" });
	assert.ok(!commands.some((c) => c.name === "index-session"), "the package is no longer loaded");
	if (PROC) assert.deepEqual(hostProcesses(), [], "no pi-ext-host is running");
	await pi.stop();
	pi = undefined;
	if (PROC) assert.deepEqual(hostProcesses(), [], "no pi-ext-host is running");
});
