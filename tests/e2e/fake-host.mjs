#!/usr/bin/env node
// A scripted stand-in for `pi-ext-host serve` that speaks the same protocol
// (crates/pi-ext-host/SERVE.md). It lets the bridge test exercise every effect,
// host request, crash and restart path inside the real pi, independent of what
// the session-index plugin implements today.
import { StringDecoder } from "node:string_decoder";

const send = (msg) => process.stdout.write(`${JSON.stringify(msg)}\n`);
const pending = new Map();
let nextId = 1;
let agentEnds = 0;

function hostRequest(method, params) {
	const id = `h${nextId++}`;
	send({ id, method, params });
	return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
}

const registrations = {
	events: ["session_start", "input", "before_agent_start", "agent_end", "session_shutdown"],
	commands: [{ name: "fake-cmd", description: "Fake command for the bridge test" }],
	tools: [
		{
			name: "echo_tool",
			label: "Echo",
			description: "Echo the text back",
			parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
			promptSnippet: "echo_tool: echo text",
		},
	],
};

async function handle(method, params) {
	switch (method) {
		case "init":
			return { plugin: "fake@0.0.0", protocol: 1, registrations };
		case "event":
			return event(params);
		case "tool":
			return { content: [{ type: "text", text: `echo: ${params.params.text}` }], details: { echoed: true }, isError: false };
		case "command":
			if (params.args === "crash") {
				send({ method: "setStatus", params: { key: "fake", text: "working…" } }); // killed mid-work
				process.exit(3);
			}
			send({ method: "appendEntry", params: { customType: "fake:command", data: { args: params.args, idle: (await hostRequest("waitForIdle", { timeoutMs: 1000 })).idle } } });
			return { ok: true, message: "fake done", details: {} };
		case "flush":
		case "shutdown":
			return { pending: 0, idle: true };
		default:
			throw new Error(`unknown method '${method}'`);
	}
}

async function event(call) {
	switch (call.event) {
		case "session_start":
			send({ method: "notify", params: { text: `fake host ready in ${call.ctx.sessionId}`, level: "info" } });
			send({ method: "setStatus", params: { key: "fake", text: "ready" } });
			return null;
		case "input":
			return call.payload.text.startsWith("REWRITE ") ? { action: "transform", text: call.payload.text.slice(8) } : { action: "continue" };
		case "before_agent_start":
			if (call.payload.prompt.includes("HANG")) return new Promise(() => {}); // never answers
			if (!call.payload.prompt.includes("INJECT")) return null;
			return { message: { customType: "fake-ref", content: "injected by the fake host", display: false, details: { ok: 1 } } };
		case "agent_end": {
			agentEnds++;
			const ctx = await hostRequest("context", {});
			const key = await hostRequest("apiKey", { provider: "mock" });
			let completion;
			try {
				completion = await hostRequest("complete", {
					model: "mock/mock-cheap",
					system: "Summarize.",
					messages: [{ role: "user", content: "TOPIC:fake summarize this" }],
					maxTokens: 100,
					jsonSchema: { type: "object", properties: { summary: { type: "string" } }, required: ["summary"] },
					timeoutMs: 10000,
				});
			} catch (err) {
				completion = { error: err.message };
			}
			// A built-in model without credentials, and one pi does not know: both fall back to the session's
			// model when the request allows it, and to nothing without a fallback (the plugin goes offline).
			const fallbacks = [];
			for (const [model, fallback] of [["anthropic/claude-haiku-4-5", "session"], ["nope/unknown", "session"], ["nope/unknown", undefined]]) {
				const request = { model, fallback, system: "s", messages: [{ role: "user", content: "hi" }], maxTokens: 10, timeoutMs: 10000 };
				const r = await hostRequest("complete", request).catch((e) => ({ error: e.message }));
				fallbacks.push(r.model ?? r.error);
			}
			send({ method: "appendEntry", params: { customType: "fake:agent_end", data: { n: agentEnds, leafId: ctx.leafId ?? null, hasKey: !!key.key, completion, fallbacks } } });
			send({ method: "setSessionName", params: { name: `Fake session ${agentEnds}` } });
			send({ method: "log", params: { level: "info", target: "fake", message: `agent_end ${agentEnds}` } });
			return null;
		}
		default:
			return null;
	}
}

const decoder = new StringDecoder("utf8");
let buffer = "";
process.stdin.on("data", (chunk) => {
	buffer += decoder.write(chunk);
	let nl = buffer.indexOf("\n");
	while (nl !== -1) {
		const line = buffer.slice(0, nl);
		buffer = buffer.slice(nl + 1);
		nl = buffer.indexOf("\n");
		if (!line.trim()) continue;
		const msg = JSON.parse(line);
		if (msg.method === undefined) {
			const p = pending.get(msg.id);
			pending.delete(msg.id);
			if (p) msg.error ? p.reject(new Error(msg.error.message)) : p.resolve(msg.result);
			continue;
		}
		handle(msg.method, msg.params ?? {}).then(
			(result) => {
				send({ id: msg.id, result: result ?? null });
				if (msg.method === "shutdown") process.exit(0);
			},
			(err) => send({ id: msg.id, error: { message: err.message } }),
		);
	}
});
process.stdin.on("end", () => process.exit(0));
