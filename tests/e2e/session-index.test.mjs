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
	const info = await eventually(
		async () => (await sessionEntries()).entries.filter((e) => e.type === "session_info").at(-1),
		"a session_info entry",
	);
	assert.equal(info.name, state.alphaMeta.name);
	// The index's entries land asynchronously (notifications to the bridge): read the file again until they do.
	let entries = [];
	await eventually(
		async () => {
			({ entries } = await sessionEntries());
			return entries.some((e) => e.type === "custom" && e.customType.startsWith("session-index:"));
		},
		"session-index:* custom entries",
	).catch((err) => assert.fail(`${err.message}; custom types: ${entries.filter((e) => e.type === "custom").map((e) => e.customType)}\n${bridgeLog()}`));
});

test("two agent runs ending back to back after an index do not index again", async () => {
	assert.ok(state.alphaMeta, "needs the indexed alpha session");
	const successes = (entries) => entries.filter((e) => e.type === "custom" && e.customType === "session-index:index" && e.data?.success);
	const infos = (entries) => entries.filter((e) => e.type === "session_info");
	// The first index's effects land asynchronously (notifications to the bridge).
	await eventually(async () => successes((await sessionEntries()).entries).length >= 1, `the first index entry\n${bridgeLog()}`);
	const pluginCalls = () => mock.requests.filter((r) => r.reply.kind === "plugin").length;
	const callsBefore = pluginCalls();
	// Fewer than THRESHOLD new user messages: neither run may index.
	for (let i = 1; i < THRESHOLD; i++) await pi.prompt(`TOPIC:alpha Follow-up ${i}: rollout order agreed.`);
	// Give the coalesced background jobs time to (wrongly) run and report.
	await new Promise((resolve) => setTimeout(resolve, 4000));
	const { entries } = await sessionEntries();
	const meta = JSON.parse(readFileSync(metaPath(state.alphaId), "utf8"));
	const leafIndex = entries.findIndex((e) => e.id === meta.lastIndexedLeafId);
	const summary = entries.map((e) => `${e.id}<-${e.parentId} ${e.type}${e.customType ? `:${e.customType}` : ""}${e.message ? `:${e.message.role}` : ""}`).join("\n");
	assert.equal(successes(entries).length, 1, `one index, one session-index:index success entry\nlastIndexedLeafId ${meta.lastIndexedLeafId}\n${summary}\n${bridgeLog()}`);
	assert.equal(infos(entries).length, 1, `one index, one session_info\n${summary}`);
	assert.equal(pluginCalls(), callsBefore, "no model call for an index below the threshold");
	assert.ok(leafIndex > 0, `lastIndexedLeafId ${meta.lastIndexedLeafId} names an entry of the session file`);
	state.alphaMeta = meta;
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
	const inject = entries.filter((e) => e.type === "custom" && e.customType === "session-reference:inject");
	assert.equal(inject.length, 1, "one @@ telemetry entry for the prompt");
	assert.equal(inject[0].data.success, true);
	assert.equal(inject[0].data.resolvedCount, 1);
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
	const telemetry = entries.filter((e) => e.type === "custom" && e.customType === "session-query:query");
	assert.equal(telemetry.length, 1, "one query telemetry entry for the tool call");
	assert.equal(telemetry[0].data.success, true);
	assert.equal(telemetry[0].data.sessionId, state.alphaId);
});

test("search_sessions called by the model finds the session by what was said in it", async () => {
	assert.ok(state.alphaId, "needs the alpha session");
	await pi.prompt('CALL_TOOL(search_sessions|{"query":"postgres migration feature flag"})');
	const { entries } = await sessionEntries();
	const result = entries.find((e) => e.type === "message" && e.message.role === "toolResult" && e.message.toolName === "search_sessions");
	assert.ok(result, "a search_sessions tool result in the session");
	const text = result.message.content.map((c) => c.text ?? "").join("\n");
	assert.equal(result.message.isError, false, `search_sessions failed: ${text}`);
	const first = text.indexOf(state.alphaId);
	assert.ok(first >= 0, `the alpha session is not among the results: ${text}`);
	const alphaIds = readEntries(sessionFileById(world.agentDir, state.alphaId)).map((e) => e.id).filter(Boolean);
	assert.ok(alphaIds.some((id) => text.includes(id)), `no entry id of the alpha session to follow up with: ${text}`);
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
	const indexed = pi.events.slice(from).filter((e) => e.method === "notify" && /^Indexed: /.test(e.message ?? ""));
	assert.equal(indexed.length, 1, `one "Indexed" notice per index: ${JSON.stringify(indexed)}`);
});

test("the run that reaches the threshold and the next one, ending back to back, index once", async () => {
	await pi.command({ type: "new_session" });
	const { sessionId } = await pi.command({ type: "get_state" });
	const pluginCalls = () => mock.requests.filter((r) => r.reply.kind === "plugin" && /TOPIC:gamma/.test(JSON.stringify(r.body.messages))).length;
	// A slow cheap model keeps the first job running while the next agent run ends.
	mock.pluginDelayMs = 1500;
	try {
		for (let i = 1; i <= THRESHOLD; i++) await pi.prompt(`TOPIC:gamma Step ${i}: chose blue-green deploys.`);
		await pi.prompt("TOPIC:gamma One more: the rollback plan is written.");
		await eventually(() => existsSync(metaPath(sessionId)), `meta of gamma\n${bridgeLog()}`, 60_000);
		// Room for a (wrong) coalesced re-run to call the model and report.
		await new Promise((resolve) => setTimeout(resolve, 4000));
	} finally {
		mock.pluginDelayMs = 0;
	}
	const { entries } = await sessionEntries();
	const summary = entries.map((e) => `${e.id}<-${e.parentId} ${e.type}${e.customType ? `:${e.customType}` : ""}${e.message ? `:${e.message.role}` : ""}`).join("\n");
	const meta = JSON.parse(readFileSync(metaPath(sessionId), "utf8"));
	const indexEntries = entries.filter((e) => e.type === "custom" && e.customType === "session-index:index");
	assert.deepEqual(indexEntries.map((e) => e.data.success), [true], `exactly one index attempt, a success\nlastIndexedLeafId ${meta.lastIndexedLeafId}\n${summary}\n${bridgeLog()}`);
	assert.equal(entries.filter((e) => e.type === "session_info").length, 1, `one session_info\n${summary}`);
	assert.equal(pluginCalls(), 1, "one model call");
	assert.ok(entries.some((e) => e.id === meta.lastIndexedLeafId), `lastIndexedLeafId ${meta.lastIndexedLeafId} is an entry of the session file\n${summary}`);
});

test("/index-session right after the run that reaches the threshold waits for the background index", async () => {
	await pi.command({ type: "new_session" });
	const { sessionId } = await pi.command({ type: "get_state" });
	mock.pluginDelayMs = 1500;
	try {
		for (let i = 1; i <= THRESHOLD; i++) await pi.prompt(`TOPIC:delta Step ${i}: picked the canary region.`);
		// The background index of the last run is now waiting on the (slow) model. The prompt's
		// answer can reach us before agent_end reaches the plugin: on a loaded machine the command
		// could then run first, and the background run find nothing left. So the command is sent
		// once the model has the background run's call.
		const deltaCalls = () => mock.requests.filter((r) => r.reply.kind === "plugin" && /TOPIC:delta/.test(JSON.stringify(r.body.messages))).length;
		await eventually(() => deltaCalls() >= 1, `the background index's model call\n${bridgeLog()}`, 60_000);
		await pi.command({ type: "prompt", message: "/index-session" }, 120_000);
		await new Promise((resolve) => setTimeout(resolve, 2000));
	} finally {
		mock.pluginDelayMs = 0;
	}
	const { entries } = await sessionEntries();
	const summary = entries.map((e) => `${e.id}<-${e.parentId} ${e.type}${e.customType ? `:${e.customType}` : ""}${e.message ? `:${e.message.role}` : ""}`).join("\n");
	const attempts = entries.filter((e) => e.type === "custom" && e.customType === "session-index:index");
	assert.deepEqual(attempts.map((e) => e.data.success), [true, true], `the background index, then the command's\n${summary}\n${bridgeLog()}`);
	const names = entries.filter((e) => e.type === "session_info").map((e) => e.name);
	assert.ok(names.length >= 1 && names.every((n, i) => i === 0 || n !== names[i - 1]), `no name is set twice in a row: ${names}\n${summary}`);
	// The command's run started after the background one had reported, and continued from it.
	const meta = JSON.parse(readFileSync(metaPath(sessionId), "utf8"));
	const leaf = entries.findIndex((e) => e.id === meta.lastIndexedLeafId);
	const firstReport = entries.findIndex((e) => e.id === attempts[0].id);
	assert.ok(leaf >= firstReport, `lastIndexedLeafId ${meta.lastIndexedLeafId} is at or after the first run's report\n${summary}`);
});

test("failed index attempts are recorded as session-index:index entries and shown in the status line", async () => {
	await pi.command({ type: "new_session" });
	const { sessionId } = await pi.command({ type: "get_state" });
	const from = pi.events.length;
	mock.pluginFailStatus = 500;
	let entries;
	try {
		for (let i = 1; i <= THRESHOLD; i++) await pi.prompt(`TOPIC:epsilon Step ${i}: the model is down.`);
		entries = await eventually(async () => {
			const found = (await sessionEntries()).entries;
			return found.some((e) => e.customType === "session-index:index") && found;
		}, `a failure entry\n${bridgeLog()}`);
	} finally {
		mock.pluginFailStatus = 0;
	}
	const attempts = entries.filter((e) => e.type === "custom" && e.customType === "session-index:index");
	assert.equal(attempts.length, 1, "one attempt for the run that reached the threshold");
	assert.equal(attempts[0].data.success, false);
	assert.equal(attempts[0].data.sessionId, sessionId);
	assert.match(attempts[0].data.error, /\S/, "the failure says why");
	assert.ok(!existsSync(metaPath(sessionId)), "no meta file after a failed index");
	assert.equal(entries.filter((e) => e.type === "session_info").length, 0, "a failed index names nothing");
	const status = await pi.waitFor((e) => e.method === "setStatus" && e.statusKey === "session-index" && /^index failed: /.test(e.statusText ?? ""), "the failure status", 10_000, from);
	assert.ok(status.statusText.length > "index failed: ".length);
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
