/**
 * Serves the plugin's model calls (`complete`) and API-key lookups (`apiKey`)
 * through pi's own model registry, so the providers, API keys and logins a
 * user already configured in pi work for the plugin's cheap model.
 */
import { completeSimple } from "@mariozechner/pi-ai";
import type { ExtensionContext } from "@mariozechner/pi-coding-agent";
import { type CompletionRequest, type CompletionResponse, type JsonValue, OVER_CAP, UNAVAILABLE } from "./protocol.js";

/** Why the bridge picked the model (CompletionResponse.choice). */
type Choice = "configured" | "cheapest" | "session";

export function modelKey(model: { provider: string; id: string } | undefined): string | undefined {
	return model ? `${model.provider}/${model.id}` : undefined;
}

/** Typical indexing call: about ten input tokens per output token. */
const priceOf = (m: { cost: { input: number; output: number } }) => m.cost.input * 10 + m.cost.output;

type PiModel = NonNullable<ExtensionContext["model"]>;

/** What `complete` appends to the system prompt for a request with a JSON schema: providers
 * without a structured-output switch still get the contract in words. */
function schemaInstructions(request: CompletionRequest): string {
	if (!request.jsonSchema) return "";
	return `\n\nAnswer with one JSON object (no prose, no code fence) matching this JSON schema:\n${JSON.stringify(request.jsonSchema)}`;
}

/** The most `request` can cost on `model` at pi's price: every byte sent an input token (no
 * tokenizer makes more tokens than bytes) and all of `maxTokens` as output. The bytes sent are the
 * system prompt with its schema instructions, the messages, and the schema once more where the
 * API takes it as a structured-output switch. */
function worstCaseUsd(model: PiModel, request: CompletionRequest): number {
	const sent = [
		request.system,
		schemaInstructions(request),
		request.jsonSchema ? JSON.stringify(request.jsonSchema) : "",
		...request.messages.map((m) => m.content),
	];
	const bytes = sent.map((text) => Buffer.byteLength(text)).reduce((a, b) => a + b, 0);
	return (bytes * model.cost.input + request.maxTokens * model.cost.output) / 1_000_000;
}

/** Whether `model` may answer `request` within its `maxCostUsd` (the room left under the plugin's daily cap). */
const withinLimit = (model: PiModel, request: CompletionRequest) =>
	request.maxCostUsd == null || worstCaseUsd(model, request) <= request.maxCostUsd;

/** The cheapest model in pi's registry with credentials (text input, a context of
 * at least 16k tokens, a known price: an all-zero price is unknown, not free). */
function cheapest(ctx: ExtensionContext) {
	return ctx.modelRegistry
		.getAvailable()
		.filter((m) => m.input.includes("text") && m.contextWindow >= 16_000 && priceOf(m) > 0)
		.sort((a, b) => priceOf(a) - priceOf(b))[0];
}

/**
 * The first requested `provider/id` pi knows and has credentials for; else what
 * the request's `fallback` allows: nothing (`offline`, the default: the error
 * starts with UNAVAILABLE and names the cheapest logged-in model, so the plugin
 * can say how to choose it), the cheapest model with credentials (`cheapest`),
 * or that else the session's current model (`session`). A model whose worst case
 * passes the request's `maxCostUsd` is never picked; when that leaves none, the
 * error starts with OVER_CAP. The response names the model that answered and why,
 * so the plugin records the truth.
 */
export function pickModel(ctx: ExtensionContext, request: CompletionRequest) {
	const registry = ctx.modelRegistry;
	// The first usable model left out for its cost, to name in the OVER_CAP error.
	let overLimit: PiModel | undefined;
	const fits = (model: PiModel) => {
		if (withinLimit(model, request)) return true;
		overLimit ??= model;
		return false;
	};
	for (const wanted of [request.model, ...(request.candidates ?? [])]) {
		const slash = wanted?.indexOf("/") ?? -1;
		if (!wanted || slash <= 0) continue;
		const found = registry.find(wanted.slice(0, slash), wanted.slice(slash + 1));
		if (found && (found === ctx.model || registry.hasConfiguredAuth(found)) && fits(found)) return { model: found, choice: "configured" as Choice };
	}
	const fallback = request.fallback ?? "offline";
	const cheap = cheapest(ctx);
	if (fallback !== "offline") {
		if (cheap && fits(cheap)) return { model: cheap, choice: "cheapest" as Choice };
		if (!cheap && fallback === "session" && ctx.model && fits(ctx.model)) return { model: ctx.model, choice: "session" as Choice };
	}
	if (overLimit) {
		throw new Error(`${OVER_CAP}${modelKey(overLimit)} may cost up to $${worstCaseUsd(overLimit, request).toFixed(4)}, more than the $${request.maxCostUsd?.toFixed(4)} left under the daily cap`);
	}
	if (fallback === "offline") {
		const hint = cheap ? `; the cheapest logged-in model in pi is ${modelKey(cheap)}` : "";
		throw new Error(`${UNAVAILABLE}none of modelKeys has credentials in pi${hint}`);
	}
	throw new Error(`${UNAVAILABLE}none of modelKeys has credentials in pi, nor any priced model`);
}

export async function complete(ctx: ExtensionContext, request: CompletionRequest): Promise<CompletionResponse> {
	const { model, choice } = pickModel(ctx, request);
	if (!model) throw new Error(`no model available in pi for ${request.model ?? "the plugin"}`);
	// Every error names the model tried first (`provider/id: …`): the plugin records it.
	const auth = await ctx.modelRegistry.getApiKeyAndHeaders(model);
	if (!auth.ok) throw new Error(`${modelKey(model)}: no credentials: ${auth.error}`);

	const systemPrompt = request.system + schemaInstructions(request);
	const now = Date.now();
	const messages = request.messages.map((m) =>
		m.role === "assistant"
			? {
					role: "assistant" as const,
					content: [{ type: "text" as const, text: m.content }],
					api: model.api,
					provider: model.provider,
					model: model.id,
					usage: {
						input: 0,
						output: 0,
						cacheRead: 0,
						cacheWrite: 0,
						totalTokens: 0,
						cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
					},
					stopReason: "stop" as const,
					timestamp: now,
				}
			: { role: "user" as const, content: m.content, timestamp: now },
	);

	const controller = new AbortController();
	const timer = setTimeout(() => controller.abort(), Math.max(1000, request.timeoutMs));
	try {
		const response = await completeSimple(
			model,
			{ systemPrompt, messages },
			{
				apiKey: auth.apiKey,
				headers: auth.headers,
				maxTokens: request.maxTokens,
				signal: controller.signal,
				timeoutMs: request.timeoutMs,
				maxRetries: 1,
				onPayload: request.jsonSchema ? (payload) => withJsonSchema(model.api, payload, request.jsonSchema!) : undefined,
			},
		);
		if (response.stopReason === "error" || response.stopReason === "aborted") {
			throw new Error(`${modelKey(model)}: ${response.errorMessage ?? response.stopReason}`);
		}
		const text = response.content
			.filter((c): c is { type: "text"; text: string } => c.type === "text")
			.map((c) => c.text)
			.join("");
		return {
			text,
			model: modelKey(model)!,
			usage: {
				inputTokens: response.usage?.input ?? 0,
				outputTokens: response.usage?.output ?? 0,
				costUsd: response.usage?.cost?.total,
			},
			choice,
		};
	} catch (err) {
		const message = err instanceof Error ? err.message : String(err);
		throw new Error(message.startsWith(`${modelKey(model)}: `) ? message : `${modelKey(model)}: ${message}`);
	} finally {
		clearTimeout(timer);
	}
}

/** Ask OpenAI-style APIs for schema-constrained output; other APIs keep the payload. */
function withJsonSchema(api: string, payload: unknown, schema: JsonValue): unknown {
	if (!payload || typeof payload !== "object") return undefined;
	const format = { name: "result", schema, strict: false };
	if (api === "openai-completions") {
		return { ...(payload as object), response_format: { type: "json_schema", json_schema: format } };
	}
	if (api === "openai-responses" || api === "azure-openai-responses") {
		return { ...(payload as object), text: { format: { type: "json_schema", ...format } } };
	}
	return undefined;
}

export async function apiKey(ctx: ExtensionContext, provider: string): Promise<string | null> {
	return (await ctx.modelRegistry.getApiKeyForProvider(provider)) ?? null;
}
