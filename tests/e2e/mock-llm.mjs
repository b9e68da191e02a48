// A mock OpenAI-compatible chat-completions server on 127.0.0.1 (node:http only).
//
// It answers two kinds of callers with the real wire format (SSE when `stream` is set):
// - pi's agent loop (requests that carry `tools`): plain text, or a `query_session`
//   tool call when the last user message holds `QUERY_SESSION(<session>|<question>)`,
//   then a text answer quoting the tool result;
// - the plugin's own model calls (no `tools`; usually a json_schema
//   `response_format`): a JSON object generated from the requested schema, with
//   string fields filled from the conversation so names, summaries and citations
//   are plausible.
import { createServer } from "node:http";

const QUERY_RE = /QUERY_SESSION\(([^|)]*)\|([^)]*)\)/;
const CALL_RE = /CALL_TOOL\(([a-z_]+)\|(\{.*?\})\)/;
const ENTRY_ID_RE = /\b[0-9a-f]{8}\b/g;
const TOPIC_RE = /TOPIC:([A-Za-z0-9-]+)/;

function textOf(content) {
	if (typeof content === "string") return content;
	if (Array.isArray(content)) return content.map((part) => part?.text ?? "").join("");
	return "";
}

function lastOf(messages, role) {
	for (let i = messages.length - 1; i >= 0; i--) if (messages[i].role === role) return messages[i];
	return undefined;
}

/** Build a value matching `schema`, using `hints` (topic, entry ids, raw text) for strings. */
export function valueFor(schema, hints, key = "") {
	if (!schema || typeof schema !== "object") return null;
	if (Array.isArray(schema.enum) && schema.enum.length) return schema.enum[0];
	if (schema.const !== undefined) return schema.const;
	const alternatives = schema.anyOf ?? schema.oneOf;
	if (Array.isArray(alternatives)) {
		const pick = alternatives.find((s) => s?.type !== "null") ?? alternatives[0];
		return valueFor(pick, hints, key);
	}
	let type = schema.type;
	if (Array.isArray(type)) type = type.find((t) => t !== "null") ?? type[0];
	if (!type && schema.properties) type = "object";
	switch (type) {
		case "object": {
			const out = {};
			for (const [name, sub] of Object.entries(schema.properties ?? {})) out[name] = valueFor(sub, hints, name);
			return out;
		}
		case "array": {
			const n = Math.max(schema.minItems ?? 1, Math.min(schema.maxItems ?? 2, 2));
			return Array.from({ length: n }, (_, i) => valueFor(schema.items ?? { type: "string" }, hints, `${key}#${i}`));
		}
		case "integer":
		case "number":
			return Math.max(schema.minimum ?? 1, Math.min(schema.maximum ?? 1, 1));
		case "boolean":
			return true;
		case "null":
			return null;
		default:
			return clampString(stringFor(key, hints), schema);
	}
}

function clampString(s, schema) {
	let out = s;
	if (schema.maxLength !== undefined && out.length > schema.maxLength) out = out.slice(0, schema.maxLength);
	while (schema.minLength !== undefined && out.length < schema.minLength) out += " detail";
	return out;
}

function stringFor(key, hints) {
	const k = key.toLowerCase();
	const index = Number(k.split("#")[1] ?? 0);
	const id = hints.ids[index % Math.max(1, hints.ids.length)] ?? "00000000";
	if (/(^|_)(entry)?ids?$|entryid|cite|citation|source|ref/.test(k.split("#")[0])) return id;
	if (/name|title/.test(k)) return `${hints.topic} session`;
	if (/tag|keyword/.test(k)) return `${hints.topic}${index ? `-${index}` : ""}`;
	if (/answer/.test(k)) return `The ${hints.topic} session decided to use the mock plan [${id}].`;
	if (/summary|description|desc/.test(k)) return `Worked on the ${hints.topic} topic: mock summary of the conversation.`;
	return `${hints.topic} ${k || "value"}`;
}

function hintsFrom(messages) {
	const text = messages.map((m) => textOf(m.content)).join("\n");
	return {
		topic: TOPIC_RE.exec(text)?.[1] ?? "mock",
		// Ids shown as [abcd1234] (how excerpts cite entries) first, then any id-like token.
		ids: [...new Set([...[...text.matchAll(/\[([0-9a-f]{8})\]/g)].map((m) => m[1]), ...(text.match(ENTRY_ID_RE) ?? [])])],
		text,
	};
}

/** Decide the reply for one chat-completions request body. */
export function reply(body) {
	const messages = Array.isArray(body.messages) ? body.messages : [];
	const schema = body.response_format?.json_schema?.schema;
	if (!Array.isArray(body.tools) || body.tools.length === 0) {
		const hints = hintsFrom(messages);
		const value = schema ? valueFor(schema, hints) : valueFor(inferSchema(hints.text), hints);
		return { kind: "plugin", text: JSON.stringify(value) };
	}
	const last = messages[messages.length - 1];
	if (last?.role === "tool") {
		return { kind: "agent", text: `Tool result received: ${textOf(last.content).slice(0, 400)}` };
	}
	// Markers may sit in the prompt or in a message an extension injected after it.
	const sinceAssistant = messages.slice(messages.findLastIndex((m) => m.role === "assistant") + 1);
	const user = sinceAssistant.filter((m) => m.role === "user").map((m) => textOf(m.content)).join("\n");
	const tools = new Set(body.tools.map((t) => t?.function?.name));
	const query = QUERY_RE.exec(user);
	if (query && tools.has("query_session")) {
		const args = { session: query[1].trim(), question: query[2].trim() };
		return { kind: "agent", toolCall: { id: `call_${Date.now()}`, name: "query_session", arguments: JSON.stringify(args) } };
	}
	const call = CALL_RE.exec(user);
	if (call && tools.has(call[1])) {
		return { kind: "agent", toolCall: { id: `call_${Date.now()}`, name: call[1], arguments: call[2] } };
	}
	return { kind: "agent", text: `Mock reply to: ${textOf(lastOf(messages, "user")?.content).slice(0, 80)}` };
}

/** When a plugin call carries no response_format, the schema is usually spelled out in the system prompt. */
function inferSchema(text) {
	const match = /(\{"type":"object"[\s\S]*\})\s*$/m.exec(text);
	if (match) {
		try {
			return JSON.parse(match[1]);
		} catch {
			// fall through
		}
	}
	return { type: "object", properties: { name: {}, description: {}, summary: {}, tags: { type: "array" } } };
}

function sseChunks(body, decided) {
	const base = { id: `chatcmpl-${Date.now()}`, object: "chat.completion.chunk", created: Math.floor(Date.now() / 1000), model: body.model };
	const chunk = (delta, finish = null, extra = {}) => ({ ...base, choices: [{ index: 0, delta, finish_reason: finish }], ...extra });
	const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };
	if (decided.toolCall) {
		const { id, name, arguments: args } = decided.toolCall;
		return [
			chunk({ role: "assistant", content: null, tool_calls: [{ index: 0, id, type: "function", function: { name, arguments: "" } }] }),
			chunk({ tool_calls: [{ index: 0, function: { arguments: args } }] }),
			chunk({}, "tool_calls"),
			{ ...base, choices: [], usage },
		];
	}
	const text = decided.text;
	const half = Math.ceil(text.length / 2);
	return [
		chunk({ role: "assistant", content: "" }),
		chunk({ content: text.slice(0, half) }),
		chunk({ content: text.slice(half) }),
		chunk({}, "stop"),
		{ ...base, choices: [], usage },
	];
}

function completion(body, decided) {
	const message = decided.toolCall
		? { role: "assistant", content: null, tool_calls: [{ id: decided.toolCall.id, type: "function", function: { name: decided.toolCall.name, arguments: decided.toolCall.arguments } }] }
		: { role: "assistant", content: decided.text };
	return {
		id: `chatcmpl-${Date.now()}`,
		object: "chat.completion",
		created: Math.floor(Date.now() / 1000),
		model: body.model,
		choices: [{ index: 0, message, finish_reason: decided.toolCall ? "tool_calls" : "stop" }],
		usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
	};
}

/**
 * Start the server; resolves to {url, requests, close, pluginDelayMs}. `requests` records every call;
 * setting `pluginDelayMs` delays the answers to the plugin's own calls (a slow cheap model),
 * `pluginFailStatus` fails them with that HTTP status.
 */
export function startMockServer() {
	const requests = [];
	const control = { pluginDelayMs: 0, pluginFailStatus: 0 };
	const server = createServer((req, res) => {
		let raw = "";
		req.on("data", (c) => (raw += c));
		req.on("end", () => {
			if (req.method === "GET" && req.url?.endsWith("/models")) {
				res.writeHead(200, { "content-type": "application/json" });
				res.end(JSON.stringify({ object: "list", data: [{ id: "mock-main", object: "model" }, { id: "mock-cheap", object: "model" }] }));
				return;
			}
			if (req.method !== "POST" || !req.url?.endsWith("/chat/completions")) {
				res.writeHead(404, { "content-type": "application/json" });
				res.end(JSON.stringify({ error: { message: `no route ${req.method} ${req.url}` } }));
				return;
			}
			let body;
			try {
				body = JSON.parse(raw);
			} catch {
				res.writeHead(400, { "content-type": "application/json" });
				res.end(JSON.stringify({ error: { message: "invalid JSON body" } }));
				return;
			}
			const decided = reply(body);
			requests.push({ body, reply: decided, authorization: req.headers.authorization });
			if (decided.kind === "plugin" && control.pluginFailStatus) {
				res.writeHead(control.pluginFailStatus, { "content-type": "application/json" });
				res.end(JSON.stringify({ error: { message: `mock failure ${control.pluginFailStatus}`, type: "server_error" } }));
				return;
			}
			const delay = decided.kind === "plugin" ? control.pluginDelayMs : 0;
			setTimeout(() => respond(res, body, decided), delay);
		});
	});
	function respond(res, body, decided) {
		if (body.stream) {
			res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
			for (const c of sseChunks(body, decided)) res.write(`data: ${JSON.stringify(c)}\n\n`);
			res.end("data: [DONE]\n\n");
		} else {
			res.writeHead(200, { "content-type": "application/json" });
			res.end(JSON.stringify(completion(body, decided)));
		}
	}
	return new Promise((resolve, reject) => {
		server.once("error", reject);
		server.listen(0, "127.0.0.1", () => {
			const { port } = server.address();
			resolve(
				Object.assign(control, {
					url: `http://127.0.0.1:${port}/v1`,
					requests,
					close: () => new Promise((r) => server.close(() => r())),
				}),
			);
		});
	});
}
