#!/usr/bin/env node
// Entry point of the end-to-end tests (run by tests/e2e_pi.rs under `cargo test`):
// make sure the pinned pi is installed, then run the node:test files one after another.
//
//   node tests/e2e/run.mjs [test files...]
//
// pi (and tsc, for the bridge's type check) come from tools/pi-ref/node_modules when CI installed
// them there, else from tools/pi-ref's lockfile installed once into target/e2e-node (reused later).
// PI_E2E_NODE_DIR points at any directory that already holds the pinned pi.
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { installedPiVersion, PI_VERSION, REPO } from "./setup.mjs";

function fail(message) {
	console.error(`e2e: ${message}`);
	process.exit(2);
}

const [major] = process.versions.node.split(".").map(Number);
if (major < 20) fail(`node >= 20 is required (pi ${PI_VERSION}), found ${process.versions.node}`);

const npm = spawnSync("npm", ["--version"], { encoding: "utf8", shell: process.platform === "win32" });
if (npm.status !== 0) fail("npm is required by the end-to-end test (it installs pi): install Node.js with npm");

/** A directory holding the pinned pi and the TypeScript compiler of tools/pi-ref's lockfile. */
function ready(dir) {
	return installedPiVersion(dir) === PI_VERSION && existsSync(join(dir, "node_modules/typescript/bin/tsc"));
}

function ensurePi() {
	if (process.env.PI_E2E_NODE_DIR) {
		const dir = resolve(process.env.PI_E2E_NODE_DIR);
		if (!ready(dir)) fail(`PI_E2E_NODE_DIR has pi ${installedPiVersion(dir) ?? "(none)"}, need ${PI_VERSION} and typescript (npm ci --prefix tools/pi-ref)`);
		return dir;
	}
	const pinned = join(REPO, "tools/pi-ref");
	if (ready(pinned)) return pinned;
	const cache = join(REPO, "target/e2e-node");
	if (ready(cache)) return cache;

	mkdirSync(cache, { recursive: true });
	copyFileSync(join(pinned, "package.json"), join(cache, "package.json"));
	copyFileSync(join(pinned, "package-lock.json"), join(cache, "package-lock.json"));
	console.error(`e2e: installing tools/pi-ref's lockfile (pi ${PI_VERSION}, typescript) into ${cache}`);
	const install = spawnSync("npm", ["ci", "--no-audit", "--no-fund", "--prefix", cache], {
		stdio: ["ignore", "inherit", "inherit"],
		shell: process.platform === "win32",
	});
	if (install.status !== 0) fail(`npm ci into ${cache} failed (exit ${install.status})`);
	if (!ready(cache)) fail(`npm installed no pi ${PI_VERSION} with typescript into ${cache}`);
	return cache;
}

const nodeDir = ensurePi();
const files = process.argv.slice(2);
const tests = files.length
	? files
	: [
			join(REPO, "tests/e2e/bridge-types.test.mjs"),
			join(REPO, "tests/e2e/native.test.mjs"),
			join(REPO, "tests/e2e/autocomplete.test.mjs"),
			join(REPO, "tests/e2e/models.test.mjs"),
			join(REPO, "tests/e2e/bridge.test.mjs"),
			join(REPO, "tests/e2e/session-index.test.mjs"),
			join(REPO, "tests/e2e/in-pi.test.mjs"),
			join(REPO, "tests/e2e/install.test.mjs"),
			join(REPO, "tests/e2e/npm-install.test.mjs"),
		];
// SESSION_INDEX_E2E_QUICK=1 (a developer's pre-landing run, never CI) leaves out the two packaging tests,
// whose release and cross builds cost more CPU than the rest of the suite together.
const PACKAGING = ["install.test.mjs", "npm-install.test.mjs"];
const quick = process.env.SESSION_INDEX_E2E_QUICK === "1" && process.env.CI !== "true" && !files.length;
const selected = quick ? tests.filter((t) => !PACKAGING.some((p) => t.endsWith(`/${p}`))) : tests;
if (quick) console.error(`e2e: SESSION_INDEX_E2E_QUICK=1: skipping ${PACKAGING.join(", ")} (CI runs them)`);
const run = spawnSync(process.execPath, ["--test", "--test-concurrency=1", ...selected], {
	stdio: "inherit",
	env: { ...process.env, PI_E2E_NODE_DIR: nodeDir },
});
process.exit(run.status ?? 1);
