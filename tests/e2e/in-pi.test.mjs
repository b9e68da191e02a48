// Issue 15 inside the real pi (RPC mode, mock provider): the new commands are
// registered, /index-all indexes stored sessions with n/N progress through the
// cheapest priced model of pi's registry, the overview's content, /continue
// starting a session with the parent link and the context as its first entry,
// and a daily cap pausing auto-indexing in a second pi process on the same
// agent dir (whose explicit command then asks first, through pi's selector),
// and /sessions: search results in pi's selector, then resuming the one picked.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { startMockServer } from "./mock-llm.mjs";
import { PiRpc } from "./pi-rpc.mjs";
import { eventually, makeWorld, piCli, piEnv, readEntries, REPO, BRIDGE, sessionFileById } from "./setup.mjs";

const SO = process.platform === "darwin" ? "dylib" : process.platform === "win32" ? "dll" : "so";
const HOST = process.env.PI_E2E_HOST ?? join(REPO, `target/debug/pi-ext-host${process.platform === "win32" ? ".exe" : ""}`);
const LIB = process.env.PI_E2E_LIB ?? join(REPO, `target/debug/${SO === "dll" ? "" : "lib"}session_index.${SO}`);
// No modelKeys entry has credentials in pi: the bridge must pick the cheapest priced registry model.
const CONFIG = { minNewUserMessages: 2, modelKeys: ["absent/not-in-pi"], useHostModels: true, offlineFallback: false, timeoutMs: 20000 };
const ARGS = ["--provider", "mock", "--model", "mock-main", "-e", BRIDGE];

let mock;
let world;
let pi;
const stored = [];

function piFor(configFile, log) {
	return new PiRpc({
		cli: piCli(),
		args: ARGS,
		cwd: world.project,
		env: piEnv(world, { PI_EXT_HOST: HOST, PI_EXT_PLUGIN: REPO, PI_EXT_LIB: LIB, PI_EXT_CONFIG: configFile, PI_EXT_LOG: join(world.root, log) }),
	});
}

function bridgeLog(file = "bridge.log") {
	try {
		return readFileSync(join(world.root, file), "utf8").slice(-3000);
	} catch {
		return "(no bridge log)";
	}
}

const metaFile = (id) => join(world.agentDir, "sessions-meta", `${id}.meta.json`);
const readMeta = (id) => existsSync(metaFile(id)) && JSON.parse(readFileSync(metaFile(id), "utf8"));
const notices = (p, from = 0) => p.events.slice(from).filter((e) => e.method === "notify").map((e) => e.message ?? "");

/** A stored pi session of the project (as an earlier pi run would have left it). */
function storeSession(n, name) {
	const id = `0a000000-0000-4000-8000-00000000000${n}`;
	const dir = join(world.agentDir, "sessions", `--${world.project.replace(/^[/\\]/, "").replace(/[/\\:]/g, "-")}--`);
	mkdirSync(dir, { recursive: true });
	const file = join(dir, `2026-01-0${n}T10-00-00-000Z_${id}.jsonl`);
	const t = Date.parse(`2026-01-0${n}T10:00:00Z`);
	const lines = [
		{ type: "session", version: 3, id, timestamp: new Date(t).toISOString(), cwd: world.project },
		{ type: "message", id: `a${n}000001`, parentId: null, timestamp: new Date(t + 1000).toISOString(), message: { role: "user", content: [{ type: "text", text: `TOPIC:stored${n} Plan the ${name} work.` }], timestamp: t + 1000 } },
		{ type: "message", id: `a${n}000002`, parentId: `a${n}000001`, timestamp: new Date(t + 2000).toISOString(), message: { role: "assistant", content: [{ type: "text", text: `We decided the ${name} approach.` }], provider: "mock", model: "mock-main", stopReason: "stop", timestamp: t + 2000 } },
		{ type: "session_info", id: `a${n}000003`, parentId: `a${n}000002`, timestamp: new Date(t + 3000).toISOString(), name },
	];
	writeFileSync(file, lines.map((l) => JSON.stringify(l)).join("\n") + "\n");
	stored.push({ id, file, name });
}

before(async () => {
	for (const [what, path] of [["pi-ext-host binary", HOST], ["plugin library", LIB]]) {
		assert.ok(existsSync(path), `${what} not found at ${path}: build the workspace first (cargo build --workspace)`);
	}
	mock = await startMockServer();
	world = makeWorld(mock.url, "in-pi");
	// Several registry models with different prices (USD per million tokens); all have pi's credentials.
	const models = JSON.parse(readFileSync(join(world.agentDir, "models.json"), "utf8"));
	const cost = (input, output) => ({ input, output, cacheRead: 0, cacheWrite: 0 });
	models.providers.mock.models = [
		{ id: "mock-main", name: "Mock main", contextWindow: 128000, maxTokens: 4096, cost: cost(3, 15) },
		{ id: "mock-mid", name: "Mock mid", contextWindow: 128000, maxTokens: 4096, cost: cost(1, 4) },
		{ id: "mock-cheap", name: "Mock cheap", contextWindow: 128000, maxTokens: 4096, cost: cost(0.5, 2) },
		{ id: "mock-tiny", name: "Mock tiny context", contextWindow: 8000, maxTokens: 1024, cost: cost(0.01, 0.01) },
	];
	writeFileSync(join(world.agentDir, "models.json"), JSON.stringify(models, null, 2));
	storeSession(1, "Alpha stored plan");
	storeSession(2, "Beta stored plan");
	storeSession(3, "Gamma stored plan");
	writeFileSync(join(world.root, "config.json"), JSON.stringify(CONFIG));
	pi = piFor(join(world.root, "config.json"), "bridge.log");
});

after(async () => {
	await pi?.stop();
	await mock?.close();
	if (world && !process.env.PI_E2E_KEEP) rmSync(world.root, { recursive: true, force: true });
	else if (world) console.error(`kept ${world.root}`);
});

test("get_commands lists the overview, /continue, /index-all and /sessions", async () => {
	const { commands } = await pi.command({ type: "get_commands" });
	const names = commands.filter((c) => c.source === "extension").map((c) => c.name);
	for (const name of ["index-session", "session-index", "continue", "index-all", "sessions"]) {
		assert.ok(names.includes(name), `${name} missing from ${names}\n${bridgeLog()}`);
	}
});

test("/index-all indexes the stored sessions in the background with n/N progress, through the cheapest priced model", async () => {
	const from = pi.events.length;
	await pi.command({ type: "prompt", message: "/index-all" }, 60_000);
	assert.ok(notices(pi, from).some((m) => m.startsWith("Indexing 3 of 3 sessions of this project")), `${notices(pi, from)}\n${bridgeLog()}`);
	await pi.waitFor((e) => e.method === "setStatus" && e.statusText === "bulk indexing: 3/3 indexed", "the final bulk status", 60_000, from);
	const progress = pi.events.slice(from).filter((e) => e.method === "setStatus" && /^indexing \d\/3$/.test(e.statusText ?? "")).map((e) => e.statusText);
	assert.deepEqual(progress, ["indexing 1/3", "indexing 2/3", "indexing 3/3"]);
	for (const s of stored) {
		const meta = readMeta(s.id);
		assert.ok(meta, `meta of ${s.name}\n${bridgeLog()}`);
		assert.equal(meta.model, "mock/mock-cheap", "the cheapest capable (priced, large enough) model of pi's registry");
		assert.equal(meta.modelChoice, "cheapest");
	}
	const pluginCalls = mock.requests.filter((r) => r.reply.kind === "plugin");
	assert.deepEqual([...new Set(pluginCalls.map((r) => r.body.model))], ["mock-cheap"]);
	const ledger = JSON.parse(readFileSync(join(world.agentDir, "sessions-meta", "spending.json"), "utf8"));
	assert.ok(ledger.total.indexing > 0, `pi priced the calls: ${JSON.stringify(ledger)}`);

	const again = pi.events.length;
	await pi.command({ type: "prompt", message: "/index-all" }, 60_000);
	assert.ok(notices(pi, again).includes("All 3 sessions of this project have an up-to-date meta"), `${notices(pi, again)}`);
	assert.equal(mock.requests.filter((r) => r.reply.kind === "plugin").length, pluginCalls.length, "nothing re-indexed");
});

test("the overview shows version and health, the model and why, counts, money and the @@ syntax", async () => {
	const from = pi.events.length;
	await pi.command({ type: "prompt", message: "/session-index" }, 60_000);
	const text = notices(pi, from).find((m) => m.startsWith("session-index "));
	assert.ok(text, `no overview notice: ${notices(pi, from)}\n${bridgeLog()}`);
	assert.match(text, /^session-index \d+\.\d+\.\d+ — ok$/m);
	assert.match(text, /^Model: mock\/mock-cheap \(cheapest in pi's registry; last index .*\), through pi's model registry$/m);
	assert.match(text, /^Sessions: 3 in all, 3 indexed, 0 stale, 0 without meta; this project 3 \(0 to index\)$/m);
	assert.match(text, /^Spent: this session \$[\d.]+; today \$[\d.]+ \(no daily cap\); all time \$[\d.]+ \(indexing \$[\d.]+, queries \$[\d.]+\)$/m);
	assert.match(text, /@@auth-refactor~1 +with its parent session/);
	assert.match(text, /\/continue <@@ref>/);
});

test("/continue starts a session whose header names the parent and whose first entry is its context", async () => {
	const alpha = stored[0];
	const meta = readMeta(alpha.id);
	const { sessionId: before } = await pi.command({ type: "get_state" });
	await pi.command({ type: "prompt", message: `/continue @@"${alpha.name}"` }, 60_000);
	const { sessionId } = await eventually(async () => {
		const state = await pi.command({ type: "get_state" });
		return state.sessionId !== before && state;
	}, `a new session after /continue\n${bridgeLog()}`);
	// pi writes a session file once it has an assistant message.
	await pi.prompt("TOPIC:continued carry on from there");
	const file = await eventually(() => sessionFileById(world.agentDir, sessionId), `the continued session's file\n${bridgeLog()}`);
	// pi itself opens every new session with its model and thinking-level entries; ours comes next, before any message.
	const [header, ...opening] = readEntries(file);
	const first = opening.find((e) => e.type !== "model_change" && e.type !== "thinking_level_change");
	assert.equal(header.parentSession, alpha.file, "the header records the referenced session as parent");
	assert.equal(first.type, "custom_message");
	assert.equal(first.customType, "session-reference");
	assert.ok(first.content.includes(meta.summary.trim().slice(0, 60)), `the first entry carries the summary: ${first.content.slice(0, 400)}`);
	assert.ok(first.content.length <= 12000, "within references.maxInjectedBytes");

	// @@<new session>~1 reaches the old one.
	await pi.command({ type: "new_session" });
	await pi.prompt(`TOPIC:ancestry what came before @@${sessionId}~1?`);
	const { sessionId: asking } = await pi.command({ type: "get_state" });
	const entries = readEntries(await eventually(() => sessionFileById(world.agentDir, asking), "the asking session's file"));
	const ref = entries.find((e) => e.type === "custom_message" && e.customType === "session-reference");
	assert.ok(ref, `no session-reference in the asking session\n${bridgeLog()}`);
	assert.deepEqual(ref.details.sessionIds, [sessionId, alpha.id]);
	assert.match(ref.content, /relation="ancestor level 1/);
});

test("a failed attempt's telemetry names the model the bridge actually tried", async () => {
	mock.pluginFailStatus = 500;
	try {
		await pi.command({ type: "prompt", message: "/index-session" }, 120_000);
	} finally {
		mock.pluginFailStatus = 0;
	}
	const { sessionId } = await pi.command({ type: "get_state" });
	const attempt = await eventually(
		() => readEntries(sessionFileById(world.agentDir, sessionId)).find((e) => e.customType === "session-index:index" && e.data.success === false),
		`a failed index entry\n${bridgeLog()}`,
	);
	assert.equal(attempt.data.model, "mock/mock-cheap", "not the configured key absent/not-in-pi");
	assert.match(attempt.data.error, /mock\/mock-cheap/);
});

test("past the daily cap a second pi process pauses auto-indexing once and asks before /index-all", async () => {
	// The ledger already holds today's spending from the bulk run: any cap below it is reached.
	writeFileSync(join(world.root, "capped.json"), JSON.stringify({ ...CONFIG, spending: { dailyCapUsd: 0.0000001 } }));
	const capped = piFor(join(world.root, "capped.json"), "capped.log");
	try {
		for (let i = 1; i <= 3; i++) await capped.prompt(`TOPIC:capped Step ${i}: keep going.`);
		const { sessionId } = await capped.command({ type: "get_state" });
		await new Promise((resolve) => setTimeout(resolve, 3000));
		assert.ok(!existsSync(metaFile(sessionId)), "no automatic index past the cap");
		const paused = notices(capped).filter((m) => m.includes("automatic indexing is paused"));
		assert.equal(paused.length, 1, `one notice: ${notices(capped)}\n${bridgeLog("capped.log")}`);

		const from = capped.events.length;
		const running = capped.command({ type: "prompt", message: "/index-all" }, 60_000);
		const select = await capped.waitFor((e) => e.type === "extension_ui_request" && e.method === "select", "the cap's selector", 30_000, from);
		assert.match(select.title, /spending cap is reached/);
		assert.deepEqual(select.options, ["Spend anyway", "Cancel"]);
		capped.child.stdin.write(`${JSON.stringify({ type: "extension_ui_response", id: select.id, value: "Spend anyway" })}\n`);
		await running;
		await capped.waitFor((e) => e.method === "notify" && /^Indexing \d+ of \d+ sessions of this project/.test(e.message ?? ""), "the bulk run after the answer", 30_000, from);
		await eventually(() => readMeta(sessionId), `the capped session indexed after "Spend anyway"\n${bridgeLog("capped.log")}`, 60_000);
	} finally {
		await capped.stop();
	}
});

test("/sessions shows the matches in pi's selector; picking one and \"Resume it\" switches to it", async () => {
	const beta = stored[1];
	const from = pi.events.length;
	const running = pi.command({ type: "prompt", message: "/sessions stored2" }, 60_000);
	const results = await pi.waitFor((e) => e.type === "extension_ui_request" && e.method === "select", "the results selector", 30_000, from);
	assert.match(results.title, /stored2/);
	assert.equal(results.options.length, 1, `only the Beta session says stored2: ${results.options}`);
	assert.match(results.options[0], /^1\. .+ · \d{4}-\d{2}-\d{2} · .+ · .*stored2/);
	pi.child.stdin.write(`${JSON.stringify({ type: "extension_ui_response", id: results.id, value: results.options[0] })}\n`);
	const from2 = pi.events.length;
	const choices = await pi.waitFor((e) => e.type === "extension_ui_request" && e.method === "select" && e.id !== results.id, "the choices", 30_000, from2);
	assert.equal(choices.options[0], "Resume it");
	assert.match(choices.options[1], /^Insert @@\S+ into the prompt$/);
	assert.equal(choices.options[2], "Continue from it (/continue)");
	pi.child.stdin.write(`${JSON.stringify({ type: "extension_ui_response", id: choices.id, value: "Resume it" })}\n`);
	await running;
	await eventually(async () => (await pi.command({ type: "get_state" })).sessionFile === beta.file, `pi switched to ${beta.file}\n${bridgeLog()}`);
});
