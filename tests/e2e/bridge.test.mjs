// The bridge inside the real pi (RPC mode), against a scripted host
// (fake-host.mjs) that exercises every effect and host request. Independent of
// what the session-index plugin implements, so it pins the bridge's contract.
import assert from "node:assert/strict";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { startMockServer } from "./mock-llm.mjs";
import { PiRpc } from "./pi-rpc.mjs";
import { eventually, makeWorld, PI_ARGS, piCli, piEnv, readEntries, REPO, sessionFileById } from "./setup.mjs";

const FAKE_HOST = join(REPO, "tests/e2e/fake-host.mjs");

let mock;
let world;
let pi;

before(async () => {
	mock = await startMockServer();
	world = makeWorld(mock.url, "bridge");
	pi = new PiRpc({
		cli: piCli(),
		args: PI_ARGS,
		cwd: world.project,
		env: piEnv(world, { PI_EXT_HOST: FAKE_HOST, PI_EXT_PLUGIN: world.project, PI_EXT_LOG: join(world.root, "bridge.log"), PI_EXT_CALL_TIMEOUT_MS: "2000" }),
	});
});

after(async () => {
	await pi?.stop();
	await mock?.close();
	if (world && !process.env.PI_E2E_KEEP) rmSync(world.root, { recursive: true, force: true });
});

test("the plugin's command and tool are registered with pi", async () => {
	const { commands } = await pi.command({ type: "get_commands" });
	const cmd = commands.find((c) => c.name === "fake-cmd");
	assert.ok(cmd, `fake-cmd missing from ${JSON.stringify(commands.map((c) => c.name))}`);
	assert.equal(cmd.source, "extension");
	assert.equal(cmd.description, "Fake command for the bridge test");
});

test("session_start effects reach pi's UI protocol", async () => {
	const notify = await pi.waitFor((e) => e.type === "extension_ui_request" && e.method === "notify", "notify");
	assert.match(notify.message, /^fake host ready in [0-9a-f-]+$/);
	const status = await pi.waitFor((e) => e.type === "extension_ui_request" && e.method === "setStatus", "setStatus");
	assert.equal(status.statusKey, "fake");
	assert.equal(status.statusText, "ready");
});

test("prompts: input transform, injected message, tool call, background effects", async () => {
	await pi.prompt("REWRITE INJECT hello there");
	const state = await pi.command({ type: "get_state" });
	const file = await eventually(() => sessionFileById(world.agentDir, state.sessionId), "the session file");

	// The agent's request carried the registered tool with the plugin's schema.
	const agentCall = mock.requests.find((r) => r.reply.kind === "agent");
	const tool = agentCall.body.tools.find((t) => t.function.name === "echo_tool");
	assert.deepEqual(tool.function.parameters.required, ["text"]);

	const entries = await eventually(() => {
		const all = readEntries(file);
		return all.some((e) => e.type === "custom" && e.customType === "fake:agent_end") ? all : undefined;
	}, "the fake:agent_end entry");

	const user = entries.find((e) => e.type === "message" && e.message.role === "user");
	const userText = JSON.stringify(user.message.content);
	assert.match(userText, /INJECT hello there/);
	assert.doesNotMatch(userText, /REWRITE/, "the input transform was applied");

	const injected = entries.find((e) => e.type === "custom_message" && e.customType === "fake-ref");
	assert.ok(injected, "before_agent_start message persisted as custom_message");
	assert.equal(injected.content, "injected by the fake host");

	const ended = entries.find((e) => e.type === "custom" && e.customType === "fake:agent_end");
	assert.equal(ended.data.n, 1);
	assert.equal(ended.data.hasKey, true, "apiKey answered from pi's registry");
	assert.ok(ended.data.leafId, "context request answered with the leaf id");
	assert.equal(ended.data.completion.model, "mock/mock-cheap");
	assert.deepEqual(Object.keys(JSON.parse(ended.data.completion.text)), ["summary"]);
	assert.deepEqual(ended.data.fallbacks.slice(0, 2), ["mock/mock-main", "mock/mock-main"], "unusable model keys fall back to the session's model when allowed");
	assert.match(ended.data.fallbacks[2], /unavailable: none of modelKeys has credentials in pi/, "and to none by default");

	// The plugin call went through pi's registry with pi's key and a json_schema response_format.
	const pluginCall = mock.requests.find((r) => r.reply.kind === "plugin");
	assert.equal(pluginCall.body.model, "mock-cheap");
	assert.equal(pluginCall.body.response_format.type, "json_schema");
	assert.equal(pluginCall.authorization, "Bearer mock-secret-key");

	const info = await eventually(
		() => readEntries(file).find((e) => e.type === "session_info"),
		"the session_info entry",
	);
	assert.equal(info.name, "Fake session 1");
});

test("a command runs, and a crashed host is restarted on the next call", async () => {
	await pi.command({ type: "prompt", message: "/fake-cmd first" });
	const state = await pi.command({ type: "get_state" });
	const file = sessionFileById(world.agentDir, state.sessionId);
	await eventually(
		() => readEntries(file).find((e) => e.customType === "fake:command" && e.data.args === "first"),
		"fake:command entry",
	);
	const done = await pi.waitFor((e) => e.method === "notify" && e.message === "fake done", "command result notify");
	assert.equal(done.notifyType, "info");

	// The host exits mid-command: the command fails fast with an error, pi keeps going.
	await pi.command({ type: "prompt", message: "/fake-cmd crash" });
	const failed = await pi.waitFor((e) => e.method === "notify" && /fake-cmd: pi-ext-host stopped/.test(e.message ?? ""), "crash notify");
	assert.equal(failed.notifyType, "error");

	await pi.command({ type: "prompt", message: "/fake-cmd again" });
	await eventually(
		() => readEntries(file).find((e) => e.customType === "fake:command" && e.data.args === "again"),
		"fake:command entry after the restart",
	);
});

test("the tool executes through the host and its result lands in the session", async () => {
	await pi.prompt('CALL_TOOL(echo_tool|{"text":"ping-42"})');
	const state = await pi.command({ type: "get_state" });
	const entries = readEntries(sessionFileById(world.agentDir, state.sessionId));
	const result = entries.find((e) => e.type === "message" && e.message.role === "toolResult" && e.message.toolName === "echo_tool");
	assert.ok(result, "toolResult for echo_tool");
	assert.equal(result.message.isError, false);
	assert.equal(result.message.content[0].text, "echo: ping-42");
	assert.deepEqual(result.message.details, { echoed: true });
});

test("a host that never answers cannot hang pi: the event times out and the prompt goes on", async () => {
	const started = Date.now();
	await pi.prompt("HANG and then answer anyway");
	const waited = Date.now() - started;
	assert.ok(waited >= 2000, `before_agent_start waited for its 2 s deadline (took ${waited} ms)`);
	const reply = mock.requests.filter((r) => r.reply.kind === "agent").at(-1);
	assert.match(reply.reply.text, /HANG and then answer anyway/, "the model still got the prompt");
	const log = readFileSync(join(world.root, "bridge.log"), "utf8");
	assert.match(log, /before_agent_start: pi-ext-host did not answer event within 2000 ms/);
});

test("a host that stops leaves no stale status, and once given up every @@ prompt says references are off", async () => {
	const from = pi.events.length;
	// Three more crashes use up the bridge's three restarts (one was used above, the last crash is not restarted).
	for (const n of [1, 2, 3]) {
		const at = pi.events.length;
		await pi.command({ type: "prompt", message: "/fake-cmd crash" });
		await pi.waitFor((e) => e.method === "notify" && /fake-cmd: pi-ext-host stopped/.test(e.message ?? ""), `crash ${n}`, 10_000, at);
	}
	const statuses = pi.events.slice(from).filter((e) => e.method === "setStatus" && e.statusKey === "fake").map((e) => e.statusText ?? null);
	assert.deepEqual(statuses, ["working…", null, "working…", null, "working…", null], "a stopped plugin's status is cleared, never left stale");

	const notices = () => pi.events.filter((e) => e.method === "notify" && /^session-index is off, @@ references are not resolved: /.test(e.message ?? ""));
	await pi.prompt("no reference here");
	await pi.prompt("compare @@alpha with this");
	await pi.prompt("and @@beta too");
	const off = notices();
	assert.equal(off.length, 2, `one notice per @@ prompt: ${JSON.stringify(off)}`);
	assert.match(off[1].message, /gave up after 3 restarts/);
	assert.equal(off[1].notifyType, "warning");
});
