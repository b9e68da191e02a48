// bridge/native.mjs, on copies of the package laid out as each install leaves it: where the native
// parts come from (a prebuilt platform package, a checkout that needs a build, neither), the
// background build's lock, progress and one-line failure, and that failure as real pi shows it.
import assert from "node:assert/strict";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { pathToFileURL } from "node:url";
import { PiRpc } from "./pi-rpc.mjs";
import { eventually, makeWorld, piCli, piEnv, REPO } from "./setup.mjs";

const PLATFORM = `${process.platform}-${process.arch}`;
const HOST = `pi-ext-host${process.platform === "win32" ? ".exe" : ""}`;
const LIB = { darwin: "libsession_index.dylib", win32: "session_index.dll" }[process.platform] ?? "libsession_index.so";
const roots = [];

/** A copy of the package's JavaScript side (what `npm pack` ships), plus `extra` files. */
function packageCopy(extra = {}) {
	const root = mkdtempSync(join(tmpdir(), "native-"));
	roots.push(root);
	mkdirSync(join(root, "bridge"));
	for (const file of readdirSync(join(REPO, "bridge")).filter((f) => /\.(ts|mjs)$/.test(f))) cpSync(join(REPO, "bridge", file), join(root, "bridge", file));
	for (const file of ["index.ts", "package.json", "plugin.toml", "session-index.config.json"]) cpSync(join(REPO, file), join(root, file));
	for (const [path, text] of Object.entries(extra)) {
		mkdirSync(join(root, path, ".."), { recursive: true });
		writeFileSync(join(root, path), text);
	}
	return root;
}

/** native.mjs of a package copy (each copy is its own module: its own package root). */
const nativeOf = (root) => import(pathToFileURL(join(root, "bridge", "native.mjs")).href);

/** A source checkout whose build fails at once (cargo rejects the manifest). */
const BROKEN_CHECKOUT = { "Cargo.toml": "this is not a manifest\n", "src/lib.rs": "" };

after(() => {
	for (const root of roots) rmSync(root, { recursive: true, force: true });
});

test("the npm package uses the platform package installed for this machine", async () => {
	const dir = `node_modules/@session-index/${PLATFORM}`;
	const root = packageCopy({ [`${dir}/package.json`]: JSON.stringify({ name: `@session-index/${PLATFORM}`, version: "9.8.7" }), [`${dir}/${HOST}`]: "", [`${dir}/${LIB}`]: "", [`${dir}/session-index`]: "" });
	const native = await nativeOf(root);
	const found = native.locate(join(root, "agent"), {});
	assert.equal(found.from, "platform");
	assert.equal(found.package, `@session-index/${PLATFORM}@9.8.7`);
	assert.equal(found.host, join(root, dir, HOST));
	assert.equal(found.lib, join(root, dir, LIB));
	assert.equal(native.cliBinary(), join(root, dir, "session-index"));
	assert.equal(found.needsBuild, false);
});

test("without a platform package or sources, the reason names the platforms and the source install", async () => {
	const native = await nativeOf(packageCopy());
	const found = native.locate("/nonexistent-agent", {});
	assert.equal(found.needsBuild, false);
	assert.match(found.missing, /is not installed|no prebuilt package for/);
	assert.match(found.missing, /pi install git:/);
	assert.equal(native.cliBinary(), undefined);
});

test("a checkout without a build needs one; its failure is one line naming the command that shows why", async () => {
	const root = packageCopy(BROKEN_CHECKOUT);
	const native = await nativeOf(root);
	assert.equal(native.locate(join(root, "agent"), {}).needsBuild, true);
	const files = native.startBuild(root);
	// A second start while the first runs follows it: one builder, one lock.
	native.startBuild(root);
	const outcome = await eventually(() => {
		const state = native.buildState(root);
		return !state.running && state.finished && state;
	}, "the background build's outcome", 60_000);
	assert.equal(outcome.ok, false);
	assert.equal(outcome.error, `cargo build failed (exit code 101); to see why: cd ${root} && cargo build --release -p session-index -p pi-ext-host`);
	assert.ok(!existsSync(files.lock), "the builder released its lock");
	assert.match(native.buildState(root).error, /^[^\n]+$/, "one line");
});

test("the build's progress is cargo's own progress bar, as a percentage", async () => {
	const root = packageCopy(BROKEN_CHECKOUT);
	const native = await nativeOf(root);
	const files = native.buildFiles(root);
	mkdirSync(files.dir, { recursive: true });
	writeFileSync(files.lock, String(process.pid)); // a live holder: the build "runs"
	const bar = (done, total) => `    Building [=====>        ] ${done}/${total}: serde, tokio\r`;
	writeFileSync(files.log, `   Compiling serde v1.0.0\n${bar(10, 120)}${bar(45, 120)}`);
	assert.deepEqual(native.buildState(root), { running: true, percent: 37 });
	rmSync(files.lock);
});

test("in real pi, a checkout whose build fails: pi starts, then says once why session-index is off", async () => {
	const root = packageCopy(BROKEN_CHECKOUT);
	const world = makeWorld("http://127.0.0.1:9", "native");
	roots.push(world.root);
	const started = Date.now();
	const pi = new PiRpc({ cli: piCli(), args: ["--no-session", "-e", join(root, "index.ts")], cwd: world.project, env: piEnv(world) });
	try {
		// How soon pi answers while a build runs is install.test.mjs's check; here jiti also compiles
		// this copy of the bridge afresh, which a loaded machine makes slow.
		await pi.command({ type: "get_state" });
		console.error(`native e2e: pi answered ${((Date.now() - started) / 1000).toFixed(1)} s after its start`);
		const notice = await pi.waitFor((e) => e.method === "notify" && /^session-index is off/.test(e.message ?? ""), "the failed build's notice", 60_000);
		assert.equal(notice.message, `session-index is off: cargo build failed (exit code 101); to see why: cd ${root} && cargo build --release -p session-index -p pi-ext-host`);
		assert.equal(notice.notifyType, "error");
		const { commands } = await pi.command({ type: "get_commands" });
		assert.ok(!commands.some((c) => c.name === "index-session"), "session-index stays off");
	} finally {
		await pi.stop();
	}
});
