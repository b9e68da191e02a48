#!/usr/bin/env node
// Entry point of the end-to-end tests (run by tests/e2e_pi.rs under `cargo test`):
// make sure the pinned pi is installed, then run the node:test files one after another.
//
//   node tests/e2e/run.mjs [test files...]
//
// pi comes from tools/pi-ref/node_modules when CI installed it there, else it is
// installed once from tools/pi-ref's lockfile into target/e2e-node (reused later).
// PI_E2E_NODE_DIR points at any directory that already holds the pinned pi.
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync } from "node:fs";
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

function ensurePi() {
	if (process.env.PI_E2E_NODE_DIR) {
		const dir = resolve(process.env.PI_E2E_NODE_DIR);
		const found = installedPiVersion(dir);
		if (found !== PI_VERSION) fail(`PI_E2E_NODE_DIR has pi ${found ?? "(none)"}, need ${PI_VERSION}`);
		return dir;
	}
	const pinned = join(REPO, "tools/pi-ref");
	if (installedPiVersion(pinned) === PI_VERSION) return pinned;
	const cache = join(REPO, "target/e2e-node");
	if (installedPiVersion(cache) === PI_VERSION) return cache;

	mkdirSync(cache, { recursive: true });
	copyFileSync(join(pinned, "package.json"), join(cache, "package.json"));
	copyFileSync(join(pinned, "package-lock.json"), join(cache, "package-lock.json"));
	console.error(`e2e: installing @mariozechner/pi-coding-agent@${PI_VERSION} into ${cache}`);
	const install = spawnSync("npm", ["ci", "--no-audit", "--no-fund", "--prefix", cache], {
		stdio: ["ignore", "inherit", "inherit"],
		shell: process.platform === "win32",
	});
	if (install.status !== 0) fail(`npm ci into ${cache} failed (exit ${install.status})`);
	if (installedPiVersion(cache) !== PI_VERSION) fail(`npm installed no pi ${PI_VERSION} into ${cache}`);
	return cache;
}

const nodeDir = ensurePi();
const files = process.argv.slice(2);
const tests = files.length
	? files
	: [
			join(REPO, "tests/e2e/bridge-types.test.mjs"),
			join(REPO, "tests/e2e/autocomplete.test.mjs"),
			join(REPO, "tests/e2e/bridge.test.mjs"),
			join(REPO, "tests/e2e/session-index.test.mjs"),
			join(REPO, "tests/e2e/in-pi.test.mjs"),
			join(REPO, "tests/e2e/install.test.mjs"),
		];
const run = spawnSync(process.execPath, ["--test", "--test-concurrency=1", ...tests], {
	stdio: "inherit",
	env: { ...process.env, PI_E2E_NODE_DIR: nodeDir },
});
process.exit(run.status ?? 1);
