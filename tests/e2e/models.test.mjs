// The bridge's model choice (bridge/models.ts `pickModel`) against pi's real model registry:
// a request's `maxCostUsd` (the room left under the plugin's daily cap) rules out every model
// whose worst case is dearer, and when that leaves none the error starts with OVER_CAP.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { test } from "node:test";
import { nodeDir, REPO } from "./setup.mjs";

const require = createRequire(join(nodeDir(), "node_modules/@mariozechner/pi-coding-agent/package.json"));
const { createJiti } = require("jiti");
// As pi's extension loader does, the bridge's imports of pi's packages resolve to pi's own copies.
const modules = join(nodeDir(), "node_modules/@mariozechner");
const jiti = createJiti(import.meta.url, { alias: { "@mariozechner/pi-ai": join(modules, "pi-ai/dist/index.js") } });
const { AuthStorage, ModelRegistry } = await import(pathToFileURL(join(modules, "pi-coding-agent/dist/index.js")).href);
const { pickModel } = await jiti.import(join(REPO, "bridge/models.ts"));
const { OVER_CAP, UNAVAILABLE } = await jiti.import(join(REPO, "bridge/protocol.ts"));

/** pi's registry from a models.json with priced mock models (USD per million tokens). */
function registry() {
	const dir = mkdtempSync(join(tmpdir(), "si-models-"));
	const cost = (input, output) => ({ input, output, cacheRead: 0, cacheWrite: 0 });
	const model = (id, price) => ({ id, name: id, contextWindow: 128000, maxTokens: 4096, cost: price });
	const models = {
		providers: {
			mock: {
				baseUrl: "http://127.0.0.1:9/v1",
				api: "openai-completions",
				apiKey: "mock-secret-key",
				models: [model("mock-main", cost(3, 15)), model("mock-cheap", cost(0.5, 2))],
			},
		},
	};
	writeFileSync(join(dir, "models.json"), JSON.stringify(models));
	const found = ModelRegistry.create(AuthStorage.inMemory(), join(dir, "models.json"));
	rmSync(dir, { recursive: true, force: true });
	return found;
}

const modelRegistry = registry();
const ctx = { modelRegistry, model: modelRegistry.find("mock", "mock-main") };
// 10,000 bytes in, 1,000 tokens out: mock-main's worst case is $0.045, mock-cheap's $0.007.
const ask = (extra) => ({ system: "", messages: [{ role: "user", content: "x".repeat(9_998) }], maxTokens: 1000, timeoutMs: 1000, ...extra });
const picked = (request) => `${pickModel(ctx, request).model.provider}/${pickModel(ctx, request).model.id}`;

test("without a limit the first configured model answers", () => {
	assert.equal(picked(ask({ model: "mock/mock-main", candidates: ["mock/mock-cheap"] })), "mock/mock-main");
});

test("a model whose worst case passes maxCostUsd is passed over for the next one that fits", () => {
	const request = ask({ model: "mock/mock-main", candidates: ["mock/mock-cheap"], maxCostUsd: 0.01 });
	assert.equal(picked(request), "mock/mock-cheap");
	assert.equal(picked({ ...request, maxCostUsd: 0.045 }), "mock/mock-main", "a worst case equal to the limit fits");
});

test("when no model fits, the error starts with OVER_CAP and names the first model it left out", () => {
	const request = ask({ model: "mock/mock-main", candidates: ["mock/mock-cheap"], maxCostUsd: 0.001 });
	assert.throws(() => pickModel(ctx, request), (e) => e.message.startsWith(OVER_CAP) && /mock\/mock-main may cost up to \$0\.0450/.test(e.message));
});

test("the cheapest and session fallbacks are held to the limit too", () => {
	const unknown = { model: "nope/unknown" };
	assert.equal(picked(ask({ ...unknown, fallback: "cheapest", maxCostUsd: 0.01 })), "mock/mock-cheap");
	assert.throws(() => pickModel(ctx, ask({ ...unknown, fallback: "session", maxCostUsd: 0.001 })), (e) => e.message.startsWith(OVER_CAP));
	assert.throws(() => pickModel(ctx, ask({ ...unknown, maxCostUsd: 0.001 })), (e) => e.message.startsWith(UNAVAILABLE), "no fallback: unavailable, as before");
});

test("the worst case counts what is sent with a schema: its instructions and the schema as the output format", () => {
	const jsonSchema = { type: "object", properties: { title: { type: "string" } } };
	// Enough for the messages, the schema once and 40 bytes more at mock-main's price: less than
	// the instructions the bridge appends to the system prompt, so mock-main no longer fits.
	const schemaBytes = JSON.stringify(jsonSchema).length;
	const maxCostUsd = ((9_998 + schemaBytes + 40) * 3 + 1000 * 15) / 1_000_000;
	const request = ask({ model: "mock/mock-main", candidates: ["mock/mock-cheap"], jsonSchema, maxCostUsd });
	assert.equal(picked(request), "mock/mock-cheap");
	assert.equal(picked({ ...request, jsonSchema: undefined }), "mock/mock-main", "without a schema it fits");
});
