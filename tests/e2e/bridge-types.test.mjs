// The bridge type-checks against pi's own types and the protocol types generated from the Rust
// ones (bridge/protocol.ts; crates/pi-ext-abi checks that file is up to date): a field renamed on
// either side fails here, not in a user's pi.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { nodeDir, REPO } from "./setup.mjs";

test("tsc finds no type error in the bridge", () => {
	const modules = join(nodeDir(), "node_modules");
	const dir = mkdtempSync(join(tmpdir(), "bridge-types-"));
	try {
		// bridge/tsconfig.json with pi's types from wherever run.mjs installed the pinned pi.
		const config = {
			extends: join(REPO, "bridge/tsconfig.json"),
			compilerOptions: { typeRoots: [join(modules, "@types")], paths: { "@mariozechner/*": [join(modules, "@mariozechner/*")] } },
		};
		writeFileSync(join(dir, "tsconfig.json"), JSON.stringify(config));
		const tsc = spawnSync(process.execPath, [join(modules, "typescript/bin/tsc"), "-p", dir], { encoding: "utf8" });
		assert.equal(tsc.status, 0, `tsc -p bridge failed:\n${tsc.stdout}${tsc.stderr}`);
	} finally {
		rmSync(dir, { recursive: true, force: true });
	}
});
