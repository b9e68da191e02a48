// session-index inside the real pi: pi (RPC mode) → bridge → pi-ext-host serve
// → the real cdylib, with a mock OpenAI-compatible server as pi's only provider.
// Every assertion reads what pi itself wrote (session files, sessions-meta).
//
// PI_E2E_HOST / PI_E2E_LIB point at the host binary and the plugin library
// (default: target/debug).
import assert from "node:assert/strict";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { startMockServer } from "./mock-llm.mjs";
import { PiRpc } from "./pi-rpc.mjs";
import { eventually, makeWorld, PI_ARGS, piCli, piEnv, readEntries, REPO, sessionFileById } from "./setup.mjs";

const SO = process.platform === "darwin" ? "dylib" : process.platform === "win32" ? "dll" : "so";
const HOST = process.env.PI_E2E_HOST ?? join(REPO, `target/debug/pi-ext-host${process.platform === "win32" ? ".exe" : ""}`);
const LIB = process.env.PI_E2E_LIB ?? join(REPO, `target/debug/${SO === "dll" ? "" : "lib"}session_index.${SO}`);
const THRESHOLD = 3;
const CONFIG = {
	minNewUserMessages: THRESHOLD,
	modelKeys: ["mock/mock-cheap"],
	useHostModels: true,
	offlineFallback: false,
	timeoutMs: 20000,
};

let mock;
let world;
let pi;
const state = {};

function bridgeLog() {
	try {
		return readFileSync(join(world.root, "bridge.log"), "utf8").slice(-4000);
	} catch {
		return "(no bridge log)";
	}
}

function metaPath(sessionId) {
	return join(world.agentDir, "sessions-meta", `${sessionId}.meta.json`);
}

async function sessionEntries() {
	const { sessionId } = await pi.command({ type: "get_state" });
	const file = await eventually(() => sessionFileById(world.agentDir, sessionId), `session file of ${sessionId}`);
	return { sessionId, file, entries: readEntries(file) };
}

before(async () => {
	for (const [what, path] of [["pi-ext-host binary", HOST], ["plugin library", LIB]]) {
		assert.ok(existsSync(path), `${what} not found at ${path}: build the workspace first (cargo build --workspace)`);
	}
	mock = await startMockServer();
	world = makeWorld(mock.url, "session-index");
	const configPath = join(world.root, "session-index.config.json");
	writeFileSync(configPath, JSON.stringify(CONFIG, null, 2));
	pi = new PiRpc({
		cli: piCli(),
		args: PI_ARGS,
		cwd: world.project,
		env: piEnv(world, {
			PI_EXT_HOST: HOST,
			PI_EXT_PLUGIN: REPO,
			PI_EXT_LIB: LIB,
			PI_EXT_CONFIG: configPath,
			PI_EXT_LOG: join(world.root, "bridge.log"),
		}),
	});
});

after(async () => {
	const exit = await pi?.stop();
	await mock?.close();
	if (exit && exit.code !== 0) console.error(`pi exited with ${JSON.stringify(exit)}\n${pi.stderr.slice(-2000)}`);
	if (world && !process.env.PI_E2E_KEEP) rmSync(world.root, { recursive: true, force: true });
	else if (world) console.error(`kept ${world.root}`);
});

test("pi loads the bridge: index-session command and query_session tool are registered", async () => {
	const { commands } = await pi.command({ type: "get_commands" });
	const cmd = commands.find((c) => c.name === "index-session");
	assert.ok(cmd, `index-session missing; commands: ${commands.map((c) => c.name)}\n${bridgeLog()}`);
	assert.equal(cmd.source, "extension");

	await pi.prompt("TOPIC:alpha We are planning the alpha database migration to Postgres 16.");
	const agentCall = mock.requests.find((r) => r.reply.kind === "agent");
	const tool = agentCall?.body.tools.find((t) => t.function.name === "query_session");
	assert.ok(tool, "query_session offered to the model");
	assert.deepEqual(tool.function.parameters.required, ["session", "question"]);
	assert.match(JSON.stringify(agentCall.body.messages), /query_session/, "promptSnippet/guidelines in the system prompt");
	assert.equal(pi.events.filter((e) => e.type === "extension_error").length, 0, JSON.stringify(pi.events.filter((e) => e.type === "extension_error")));
});

test("auto-indexing writes sessions-meta/<id>.meta.json once the threshold is reached, through pi's registry", async () => {
	const { sessionId } = await pi.command({ type: "get_state" });
	state.alphaId = sessionId;
	for (let i = 2; i <= THRESHOLD; i++) {
		await pi.prompt(`TOPIC:alpha Step ${i}: decided to keep the migration behind a feature flag.`);
		if (i < THRESHOLD) assert.ok(!existsSync(metaPath(sessionId)), `meta written before the threshold (after ${i} prompts)`);
	}
	const meta = await eventually(() => existsSync(metaPath(sessionId)) && JSON.parse(readFileSync(metaPath(sessionId), "utf8")), `meta file ${metaPath(sessionId)}\n${bridgeLog()}`, 60_000);
	assert.equal(meta.sessionId, sessionId);
	assert.equal(meta.model, "mock/mock-cheap", "the cheap model was served by pi's model registry");
	assert.ok(meta.name && meta.summary, "meta has a name and a summary");
	const pluginCalls = mock.requests.filter((r) => r.reply.kind === "plugin");
	assert.ok(pluginCalls.length > 0, "the plugin's model call reached the mock through pi");
	assert.equal(pluginCalls[0].body.model, "mock-cheap");
	assert.equal(pluginCalls[0].authorization, "Bearer mock-secret-key", "pi's key for the provider was used");
	state.alphaMeta = meta;
});

test("the session name is set and session-index:* custom entries are present", async () => {
	assert.ok(state.alphaMeta, "needs the indexed alpha session");
	const { entries } = await sessionEntries();
	const info = await eventually(
		async () => (await sessionEntries()).entries.filter((e) => e.type === "session_info").at(-1),
		"a session_info entry",
	);
	assert.equal(info.name, state.alphaMeta.name);
	const custom = entries.filter((e) => e.type === "custom" && e.customType.startsWith("session-index:"));
	assert.ok(custom.length > 0, `no session-index:* entries; custom types: ${entries.filter((e) => e.type === "custom").map((e) => e.customType)}`);
});

test("@@<session name> injects a session-reference custom_message with the referenced summary", async () => {
	assert.ok(state.alphaMeta, "needs the indexed alpha session");
	await pi.command({ type: "new_session" });
	const { sessionId } = await pi.command({ type: "get_state" });
	assert.notEqual(sessionId, state.alphaId);
	state.betaId = sessionId;
	await pi.prompt(`TOPIC:beta What did we decide in @@"${state.alphaMeta.name}"?`);
	const { entries } = await sessionEntries();
	const ref = entries.find((e) => e.type === "custom_message" && e.customType === "session-reference");
	assert.ok(ref, `no session-reference custom_message in ${entries.map((e) => e.customType ?? e.type)}\n${bridgeLog()}`);
	assert.ok(ref.content.includes(state.alphaMeta.summary), "the injected content holds the referenced summary");
});

test("query_session called by the model returns a cited answer in the tool result", async () => {
	assert.ok(state.alphaMeta && state.betaId, "needs the alpha and beta sessions");
	await pi.prompt(`QUERY_SESSION(${state.alphaId}|What did we decide about the migration?)`);
	const { entries } = await sessionEntries();
	const result = entries.find((e) => e.type === "message" && e.message.role === "toolResult" && e.message.toolName === "query_session");
	assert.ok(result, "a query_session tool result in the session");
	const text = result.message.content.map((c) => c.text ?? "").join("\n");
	assert.equal(result.message.isError, false, `query_session failed: ${text}`);
	const alphaIds = readEntries(sessionFileById(world.agentDir, state.alphaId)).map((e) => e.id).filter(Boolean);
	const cited = alphaIds.filter((id) => text.includes(id) || JSON.stringify(result.message.details ?? {}).includes(id));
	assert.ok(cited.length > 0, `the answer cites no entry of the alpha session: ${text}`);
});

test("/index-session indexes the current session below the threshold", async () => {
	assert.ok(state.betaId, "needs the beta session");
	assert.ok(!existsSync(metaPath(state.betaId)), "beta is below the threshold and not indexed yet");
	const from = pi.events.length;
	await pi.command({ type: "prompt", message: "/index-session" }, 120_000);
	const errors = pi.events.slice(from).filter((e) => e.method === "notify" && e.notifyType === "error");
	assert.deepEqual(errors.map((e) => e.message), [], "no error notifications");
	const meta = await eventually(() => existsSync(metaPath(state.betaId)) && JSON.parse(readFileSync(metaPath(state.betaId), "utf8")), `meta of beta\n${bridgeLog()}`, 60_000);
	assert.equal(meta.sessionId, state.betaId);
});

test("a plugin that cannot load leaves pi working and says why once", async () => {
	const broken = makeWorld(mock.url, "broken");
	const other = new PiRpc({
		cli: piCli(),
		args: PI_ARGS,
		cwd: broken.project,
		env: piEnv(broken, { PI_EXT_HOST: HOST, PI_EXT_PLUGIN: join(broken.root, "no-plugin-here") }),
	});
	try {
		const notice = await other.waitFor((e) => e.method === "notify" && /^session-index is off: /.test(e.message ?? ""), "the start-up notice");
		assert.equal(notice.notifyType, "warning");
		assert.match(notice.message, /plugin\.toml/, "the notice names the problem");
		const end = await other.prompt("still works?");
		assert.ok(end.messages.some((m) => m.role === "assistant"), "pi answered without the plugin");
		const { commands } = await other.command({ type: "get_commands" });
		assert.ok(!commands.some((c) => c.name === "index-session"));
	} finally {
		await other.stop();
		rmSync(broken.root, { recursive: true, force: true });
	}
});
