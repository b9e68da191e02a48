/**
 * pi extension that runs a pi-ext-abi plugin (session-index by default)
 * through `pi-ext-host serve`.
 *
 * pi → plugin: session_start, input, before_agent_start, agent_end and
 * session_shutdown, plus the plugin's tools and commands, registered with the
 * schemas the plugin reports at `init`.
 * plugin → pi: status line, notifications, custom entries and the session name
 * through pi's own API; model calls and API keys through pi's model registry;
 * a command's actions (ABI 1.1: selector, switching or starting a session,
 * editor text, another command) once the command has returned.
 *
 * The host, library and config are found by native.mjs (this package's own
 * build, a prebuilt platform package, or the manual layout); a source checkout
 * is built once on first load. Environment overrides: PI_EXT_HOST (host
 * binary), PI_EXT_PLUGIN (plugin directory), PI_EXT_CONFIG / PI_EXT_LIB
 * (config file / library). Also PI_EXT_LOG
 * (append the bridge's and the plugin's log to this file), PI_EXT_SHUTDOWN_MS
 * (background-work deadline at session end), PI_EXT_CALL_TIMEOUT_MS (cap on
 * every call's deadline).
 */
import { appendFileSync } from "node:fs";
import type { ExtensionAPI, ExtensionCommandContext, ExtensionContext } from "@mariozechner/pi-coding-agent";
import { getAgentDir, VERSION } from "@mariozechner/pi-coding-agent";
import { errorText, HostClient } from "./host-client.js";
import { referenceProvider } from "./autocomplete.js";
import { apiKey, type CompletionRequest, complete, modelKey } from "./models.js";
// Plain JavaScript: the npm install script runs the same file.
import { build, locate } from "./native.mjs";

/** PI_EXT_CALL_TIMEOUT_MS caps every call deadline below (tests use it to prove pi never hangs). */
const cap = (ms: number) => Math.min(ms, Number(process.env.PI_EXT_CALL_TIMEOUT_MS) || ms);

/** Deadlines (ms) for each kind of request: pi must never hang on the host. */
const TIMEOUTS = {
	init: 20_000,
	event: cap(10_000),
	completion: 2_000,
	beforeAgentStart: cap(30_000),
	tool: cap(180_000),
	command: cap(300_000),
	shutdown: Number(process.env.PI_EXT_SHUTDOWN_MS ?? 5_000),
};

interface ToolSpec {
	name: string;
	label: string;
	description: string;
	parameters: Record<string, unknown>;
	promptSnippet?: string;
	promptGuidelines?: string[];
}
interface Registrations {
	events: string[];
	commands: { name: string; description: string }[];
	tools: ToolSpec[];
}

function log(level: string, message: string): void {
	const file = process.env.PI_EXT_LOG;
	if (!file) return;
	try {
		appendFileSync(file, `${new Date().toISOString()} ${level} ${message}\n`);
	} catch {
		// Logging must never break pi.
	}
}

/** The pi-ext-abi 1.1 action types this bridge performs (see `perform`). */
const ACTIONS = ["select", "switchSession", "newSession", "insertText", "command"];

/** pi-ext-abi `SessionContext` from pi's context. */
function sessionContext(ctx: ExtensionContext | undefined): Record<string, unknown> {
	const base = { cwd: process.cwd(), agentDir: getAgentDir(), hasUi: false, actions: ACTIONS };
	if (!ctx) return base;
	const sm = ctx.sessionManager;
	return {
		sessionFile: sm.getSessionFile(),
		sessionId: sm.getSessionId(),
		sessionDir: sm.getSessionDir(),
		leafId: sm.getLeafId() ?? undefined,
		cwd: ctx.cwd,
		agentDir: getAgentDir(),
		hasUi: ctx.hasUI,
		model: modelKey(ctx.model),
		actions: ACTIONS,
	};
}

function notifyLevel(level: string): "info" | "warning" | "error" {
	return level === "warning" || level === "error" ? level : "info";
}

export default async function piBridge(pi: ExtensionAPI) {
	let startupError: string | undefined;
	// The package's native parts (native.mjs): a source checkout builds them once, here.
	let native = locate(getAgentDir());
	if (!native.built) {
		try {
			await build(native.root);
			native = locate(getAgentDir());
		} catch (err) {
			startupError = errorText(err);
		}
	}
	const args = ["serve", "--plugin", native.plugin];
	if (native.config) args.push("--config", native.config);
	if (native.lib) args.push("--lib", native.lib);

	/** The context of the latest pi callback: effects and model calls go through it. */
	let current: ExtensionContext | undefined;
	let commandCtx: ExtensionCommandContext | undefined;
	/** Notices the plugin showed while a command ran: its result message is not shown a second time. */
	let commandNotices: Set<string> | undefined;
	/** Why the last call to the host failed (cleared by the next success): the plugin is down. */
	let lastFailure: string | undefined;
	/** Status keys the plugin set: cleared when its process stops, so no stale text stays. */
	const statusKeys = new Set<string>();

	const host = new HostClient({
		command: native.host,
		args,
		log,
		onExit: () => {
			for (const key of statusKeys) current?.ui.setStatus(key, undefined);
			statusKeys.clear();
		},
		onStart: async (client) => {
			const params = { ctx: sessionContext(current), canComplete: true, client: `session-index bridge (pi ${VERSION})` };
			const result = await client.send("init", params, TIMEOUTS.init);
			registrations ??= result?.registrations;
		},
		onNotification: (method, params) => {
			switch (method) {
				case "setStatus":
					statusKeys.add(String(params.key));
					current?.ui.setStatus(String(params.key), params.text ?? undefined);
					break;
				case "notify":
					commandNotices?.add(String(params.text));
					current?.ui.notify(String(params.text), notifyLevel(String(params.level)));
					break;
				case "appendEntry":
					pi.appendEntry(String(params.customType), params.data);
					break;
				case "setSessionName":
					pi.setSessionName(String(params.name));
					break;
				case "log":
					log(String(params.level), `[${params.target}] ${params.message}`);
					break;
				default:
					log("warn", `unknown notification from pi-ext-host: ${method}`);
			}
		},
		onRequest: async (method, params) => {
			switch (method) {
				case "context":
					return sessionContext(current);
				case "apiKey":
					if (!current) return { key: null };
					return { key: await apiKey(current, String(params.provider)) };
				case "complete":
					if (!current) throw new Error("pi has no session context yet");
					return complete(current, params as CompletionRequest);
				case "waitForIdle":
					return { idle: await waitForIdle(Number(params.timeoutMs ?? 0)) };
				default:
					throw new Error(`unknown host request '${method}'`);
			}
		},
	});

	async function waitForIdle(timeoutMs: number): Promise<boolean> {
		const deadline = Date.now() + timeoutMs;
		if (commandCtx) {
			let timer: NodeJS.Timeout | undefined;
			const late = new Promise<boolean>((resolve) => {
				timer = setTimeout(() => resolve(false), timeoutMs);
			});
			const done = commandCtx.waitForIdle().then(() => true);
			return Promise.race([done, late]).finally(() => clearTimeout(timer));
		}
		while (current && !current.isIdle()) {
			if (Date.now() >= deadline) return false;
			await new Promise((resolve) => setTimeout(resolve, 100));
		}
		return true;
	}

	let registrations: Registrations | undefined;
	try {
		if (startupError) throw new Error(startupError);
		await host.ensureStarted();
	} catch (err) {
		startupError = errorText(err);
		log("error", `pi-ext-host did not start: ${startupError}`);
	}

	const subscribed = new Set(registrations?.events ?? []);

	async function send(event: string, payload: unknown, ctx: ExtensionContext, timeoutMs = TIMEOUTS.event) {
		current = ctx;
		if (!subscribed.has(event)) return null;
		try {
			const result = await host.request("event", { v: 1, event, payload, ctx: sessionContext(ctx) }, timeoutMs);
			lastFailure = undefined;
			return result;
		} catch (err) {
			lastFailure = errorText(err);
			log("warn", `${event}: ${lastFailure}`);
			return null;
		}
	}

	pi.on("session_start", async (event, ctx) => {
		current = ctx;
		if (startupError && ctx.hasUI) {
			ctx.ui.notify(`session-index is off: ${startupError}`, "warning");
		}
		await send("session_start", { reason: event.reason, previousSessionFile: event.previousSessionFile }, ctx);
		if (ctx.hasUI && !startupError) {
			// `@@` completion in the editor (a no-op outside the interactive TUI).
			ctx.ui.addAutocompleteProvider((pis) =>
				referenceProvider(pis, (prefix) =>
					host.request("request", { method: "references.complete", payload: { prefix, limit: 20, cwd: ctx.cwd } }, TIMEOUTS.completion),
				),
			);
		}
	});

	pi.on("input", async (event, ctx) => {
		// Images stay in pi: the plugin works on text.
		const result = await send("input", { text: event.text, source: event.source }, ctx);
		if (result?.action === "transform" && typeof result.text === "string") {
			return { action: "transform", text: result.text };
		}
		if (result?.action === "handled") return { action: "handled" };
		return undefined;
	});

	pi.on("before_agent_start", async (event, ctx) => {
		const payload = { prompt: event.prompt, systemPrompt: event.systemPrompt };
		const result = await send("before_agent_start", payload, ctx, TIMEOUTS.beforeAgentStart);
		const down = startupError ?? lastFailure;
		if (down && event.prompt.includes("@@")) {
			ctx.ui.notify(`session-index is off, @@ references are not resolved: ${down}`, "warning");
		}
		if (!result || (!result.message && !result.systemPrompt)) return undefined;
		return {
			message: result.message
				? {
						customType: result.message.customType,
						content: result.message.content,
						display: result.message.display ?? false,
						details: result.message.details,
					}
				: undefined,
			systemPrompt: result.systemPrompt ?? undefined,
		};
	});

	// The plugin reads the session file itself, so agent_end's messages are not copied over the pipe.
	pi.on("agent_end", async (_event, ctx) => {
		await send("agent_end", {}, ctx);
	});

	pi.on("session_shutdown", async (event, ctx) => {
		await send("session_shutdown", { reason: event.reason }, ctx);
		// Gives background work (e.g. indexing) its deadline, then stops the process.
		await host.close(TIMEOUTS.shutdown);
	});

	for (const tool of registrations?.tools ?? []) {
		pi.registerTool({
			name: tool.name,
			label: tool.label,
			description: tool.description,
			parameters: tool.parameters as any,
			promptSnippet: tool.promptSnippet,
			promptGuidelines: tool.promptGuidelines,
			async execute(toolCallId, params, signal, _onUpdate, ctx) {
				current = ctx;
				const call = { v: 1, tool: tool.name, toolCallId, params, ctx: sessionContext(ctx) };
				const pending = host.request("tool", call, TIMEOUTS.tool);
				const aborted = new Promise<never>((_, reject) => {
					signal?.addEventListener("abort", () => reject(new Error(`${tool.name} aborted`)), { once: true });
				});
				const result = await Promise.race([pending, aborted]);
				const text = (result?.content ?? []).map((part: { text?: string }) => part.text ?? "").join("\n");
				// pi marks a tool result as an error only when execute throws.
				if (result?.isError) throw new Error(text || `${tool.name} failed`);
				return { content: result?.content ?? [], details: result?.details ?? {} };
			},
		});
	}

	/** Run a plugin command, show its outcome once, then perform its actions. */
	async function runCommand(name: string, commandArgs: string, ctx: ExtensionCommandContext): Promise<void> {
		current = ctx;
		commandCtx = ctx;
		const notices = new Set<string>();
		commandNotices = notices;
		let actions: unknown[] = [];
		try {
			const call = { v: 1, command: name, args: commandArgs, ctx: sessionContext(ctx) };
			const result = await host.request("command", call, TIMEOUTS.command);
			// Plugins may report the outcome themselves (session-index does); show it once.
			const message = result?.message ? String(result.message) : "";
			if (message && !notices.has(message)) ctx.ui.notify(message, result.ok ? "info" : "error");
			actions = Array.isArray(result?.actions) ? result.actions : [];
		} catch (err) {
			ctx.ui.notify(`/${name}: ${errorText(err)}`, "error");
		} finally {
			commandCtx = undefined;
			if (commandNotices === notices) commandNotices = undefined;
		}
		await perform(actions, ctx);
	}

	/**
	 * A command's actions, in order. Switching or starting a session replaces
	 * this extension instance (its ctx goes stale), so such an action ends the list.
	 */
	async function perform(actions: any[], ctx: ExtensionCommandContext): Promise<void> {
		for (const action of actions) {
			switch (action?.type) {
				case "select": {
					const options: any[] = Array.isArray(action.options) ? action.options : [];
					const choice = await ctx.ui.select(String(action.title), options.map((o) => String(o.label)));
					const picked = options.find((o) => String(o.label) === choice);
					if (picked) await perform(Array.isArray(picked.actions) ? picked.actions : [], ctx);
					break;
				}
				case "insertText":
					ctx.ui.pasteToEditor(String(action.text));
					break;
				case "command":
					await runCommand(String(action.command), String(action.args ?? ""), ctx);
					break;
				case "switchSession":
					await ctx.switchSession(String(action.sessionFile));
					return;
				case "newSession": {
					const m = action.message;
					const setup = m
						? async (sm: { appendCustomMessageEntry: (...args: any[]) => string }) => {
								sm.appendCustomMessageEntry(String(m.customType), String(m.content), m.display ?? true, m.details);
							}
						: undefined;
					await ctx.newSession({ parentSession: action.parentSession ?? undefined, setup });
					return;
				}
				default:
					log("warn", `unknown action from the plugin: ${JSON.stringify(action?.type)}`);
			}
		}
	}

	for (const command of registrations?.commands ?? []) {
		pi.registerCommand(command.name, {
			description: command.description,
			handler: (commandArgs, ctx) => runCommand(command.name, commandArgs ?? "", ctx),
		});
	}
}
