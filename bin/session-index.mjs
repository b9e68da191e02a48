#!/usr/bin/env node
// `session-index` on the PATH (the package's npm `bin`): runs the native CLI of the platform
// package installed for this machine (or a source checkout's build), as esbuild's launcher does.
import { spawnSync } from "node:child_process";
import { cliBinary, PLATFORM_PACKAGE } from "../bridge/native.mjs";

const binary = cliBinary();
if (!binary) {
	console.error(`session-index: the native CLI is missing: ${PLATFORM_PACKAGE} is not installed for this machine (reinstall the package), and no source build is here`);
	process.exit(1);
}
const run = spawnSync(binary, process.argv.slice(2), { stdio: "inherit" });
if (run.error) {
	console.error(`session-index: cannot run ${binary}: ${run.error.message}`);
	process.exit(1);
}
if (run.signal) process.kill(process.pid, run.signal);
process.exit(run.status ?? 1);
