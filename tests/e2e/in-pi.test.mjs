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
// No modelKeys entry has credentials in pi and the user opted in to the cheapest priced registry model.
const CONFIG = { minNewUserMessages: 2, modelKeys: ["absent/not-in-pi"], useHostModels: true, modelFallback: "cheapest", offlineFallback: false, timeoutMs: 20000 };
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

test("without an opt-in, no model of modelKeys logged in means the offline model and one notice saying how to choose one", async () => {
	const { modelFallback, offlineFallback, ...defaults } = CONFIG;
	writeFileSync(join(world.root, "default-fallback.json"), JSON.stringify(defaults));
	const offline = piFor(join(world.root, "default-fallback.json"), "default-fallback.log");
	try {
		await offline.command({ type: "prompt", message: "/index-all" }, 60_000);
		await offline.waitFor((e) => e.method === "setStatus" && e.statusText === "bulk indexing: 3/3 indexed", "the final bulk status", 60_000);
		for (const s of stored) {
			const meta = readMeta(s.id);
			assert.equal(meta.model, "local/extractive", `${JSON.stringify(meta)}\n${bridgeLog("default-fallback.log")}`);
			assert.equal(meta.modelChoice, "offline");
		}
		assert.equal(mock.requests.filter((r) => r.reply.kind === "plugin").length, 0, "no model call");
		const told = notices(offline).filter((m) => m.startsWith("session-index indexes with the offline model"));
		assert.equal(told.length, 1, `${notices(offline)}`);
		assert.match(told[0], /the cheapest logged-in model in pi is mock\/mock-cheap\. To index with a model, list it first in "modelKeys"/);
		assert.match(told[0], /"modelFallback": "cheapest"/);
		assert.ok(existsSync(join(world.agentDir, "session-index", "offline-notice-shown")), "shown once for this agent dir");
	} finally {
		await offline.stop();
		rmSync(join(world.agentDir, "sessions-meta"), { recursive: true, force: true });
	}
});

/** Answer pi's selector (an extension UI request over RPC) with the option starting `label`. */
async function pick(p, from, what, label) {
	const select = await p.waitFor((e) => e.type === "extension_ui_request" && e.method === "select", what, 30_000, from);
	const value = select.options.find((o) => o.startsWith(label));
	assert.ok(value, `${label} among ${select.options}`);
	p.child.stdin.write(`${JSON.stringify({ type: "extension_ui_response", id: select.id, value })}\n`);
	return select;
}

test("/index-all asks first with the estimate, then indexes in the background with n/N progress, through the cheapest priced model", async () => {
	const from = pi.events.length;
	const running = pi.command({ type: "prompt", message: "/index-all" }, 60_000);
	const asked = await pick(pi, from, "the estimate's selector", "Index with ");
	assert.match(asked.title, /^session-index: index 3 sessions, about \d+ input tokens with pi's cheapest logged-in model: its price is not known here\?$/);
	assert.deepEqual(asked.options, ["Index with pi's cheapest logged-in model", "Index with the offline model (free)", "Cancel"]);
	await running;
	await pi.waitFor((e) => e.method === "notify" && (e.message ?? "").startsWith("Indexing 3 of 3"), "the bulk run after the answer", 30_000, from);
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
	assert.match(text, /^Model: the first of absent\/not-in-pi that has credentials \(absent\/not-in-pi: price unknown, set prices\); with none, pi's cheapest logged-in model \(modelFallback: cheapest\), through pi's model registry$/m);
	assert.match(text, /^Last index: mock\/mock-cheap \(cheapest in pi's registry\) at /m);
	assert.match(text, /^Commands: .*\/sessions <words> \(search\)/m);
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
	assert.equal(first.customType, "session-continuation");
	// Framed as a continuation, with one line for pi to show.
	// Shown by its title: the meta's name (pi's own name only when there is no meta).
	const headline = `Continued from "${meta.name}" (${alpha.id.slice(0, 8)}, 2026-01-01)`;
	assert.equal(first.details.headline, headline);
	assert.ok(first.content.startsWith(`${headline}. This session continues that one.`), first.content.slice(0, 300));
	assert.ok(!first.content.includes("referenced earlier pi sessions with @@"), "not framed as an @@ reference");
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
		const select = await pick(capped, from, "the cap's selector", "Spend anyway");
		assert.match(select.title, /spending cap is reached/);
		assert.deepEqual(select.options, ["Spend anyway", "Cancel"]);
		// "Spend anyway" runs /index-all again, which shows the estimate and asks (the prompt waits for it).
		await pick(capped, capped.events.indexOf(select) + 1, "the estimate's selector", "Index with ");
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

/** Answer pi's extension UI request `request` with `value` (or cancel it). */
function answer(p, request, value) {
	const reply = value === undefined ? { cancelled: true } : { value };
	p.child.stdin.write(`${JSON.stringify({ type: "extension_ui_response", id: request.id, ...reply })}\n`);
}

const selectAfter = (from, what) => pi.waitFor((e) => e.type === "extension_ui_request" && e.method === "select", what, 30_000, from);

test("an ambiguous @@ reference asks in pi's selector before the prompt is sent; the pick is injected and confirmed", async () => {
	const beta = stored[1];
	// A new session, so the stored ones are all candidates (the current one never is).
	await pi.command({ type: "new_session" });
	const from = pi.events.length;
	const text = "TOPIC:picked what did we decide in @@stored-plan?";
	const running = pi.command({ type: "prompt", message: text }, 60_000);
	const select = await selectAfter(from, "the reference's selector");
	try {
		assert.equal(select.title, "@@stored-plan matches 3 sessions: which one?");
		assert.equal(select.options.length, 5, `three sessions, then "send without it" and "cancel": ${select.options}`);
		assert.deepEqual(select.options.slice(3), ["Send without @@stored-plan", "Cancel (back to the editor)"]);
	} catch (err) {
		answer(pi, select, undefined);
		throw err;
	}
	const title = readMeta(beta.id).name;
	// Their ids share 35 characters: each is told apart by the shortest prefix that does.
	const label = select.options.find((o) => o === `${title} · 2026-01-02 · ${world.project} · ${beta.id.slice(0, 36)}`);
	assert.ok(label, `Beta is offered by its name, day, project and id: ${select.options}`);
	assert.ok(!pi.events.slice(from).some((e) => e.type === "agent_start"), "nothing is sent while the user picks");
	answer(pi, select, label);
	await running;
	await pi.waitFor((e) => e.type === "agent_end", "the agent run", 60_000, from);
	const { sessionId } = await pi.command({ type: "get_state" });
	const entries = readEntries(await eventually(() => sessionFileById(world.agentDir, sessionId), "the session file"));
	const ref = entries.findLast((e) => e.type === "custom_message" && e.customType === "session-reference");
	assert.deepEqual(ref?.details.sessionIds, [beta.id], `${JSON.stringify(ref?.details)}\n${bridgeLog()}`);
	assert.equal(ref.details.resolved[0].rule, "picked");
	const confirmed = notices(pi, from).filter((m) => m.startsWith("@@stored-plan → "));
	assert.deepEqual(confirmed, [`@@stored-plan → "${title}" (${beta.id.slice(0, 8)}, 2026-01-02, ${world.project}, your choice)`]);
});

test("cancelling the reference's selector sends nothing and gives the prompt back to the editor", async () => {
	const from = pi.events.length;
	const text = "TOPIC:cancelled look at @@stored-plan";
	const running = pi.command({ type: "prompt", message: text }, 60_000);
	const select = await selectAfter(from, "the reference's selector");
	answer(pi, select, "Cancel (back to the editor)");
	await running;
	const back = await pi.waitFor((e) => e.type === "extension_ui_request" && e.method === "set_editor_text", "the prompt back in the editor", 10_000, from);
	assert.equal(back.text, text);
	await new Promise((resolve) => setTimeout(resolve, 500));
	assert.ok(!pi.events.slice(from).some((e) => e.type === "agent_start"), "no agent run");
	assert.ok(!mock.requests.some((r) => JSON.stringify(r.body).includes("TOPIC:cancelled")), "nothing reached the model");
});

test("a prompt whose references all resolve asks nothing and is not held up", async () => {
	const from = pi.events.length;
	const rounds = 10;
	for (let i = 0; i < rounds; i++) await pi.prompt(`TOPIC:clear${i} see @@"${stored[2].name}" and @@${stored[0].id.slice(0, 36)}`);
	assert.ok(!pi.events.slice(from).some((e) => e.type === "extension_ui_request" && e.method === "select"), "no selector");
	const confirmed = notices(pi, from).filter((m) => m.startsWith(`@@"${stored[2].name}" → `));
	assert.equal(confirmed.length, rounds, `${notices(pi, from)}`);
	// What asking costs a prompt that needs no answer: the questions' round trip (a figure, not a target).
	const asked = [...readFileSync(join(world.root, "bridge.log"), "utf8").matchAll(/references\.questions: 0 in ([\d.]+) ms/g)].map((m) => Number(m[1]));
	assert.ok(asked.length >= rounds, `the bridge logged each round trip: ${asked}`);
	const last = asked.slice(-rounds).sort((a, b) => a - b);
	console.error(`e2e: references.questions round trip for ${rounds} prompts whose 2 references resolve: median ${last[rounds >> 1]} ms, max ${last[rounds - 1]} ms`);
});
