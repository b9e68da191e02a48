/**
 * One pi session runtime's connection to the plugin: the `pi-ext-host serve` process, what the
 * plugin registered, and the pi context its effects and model calls go to.
 *
 * pi → plugin: `event`, `tool` and `command` calls (documents from `protocol.ts`, generated from
 * crates/pi-ext-abi). plugin → pi: the host's notifications (status line, notices, custom entries,
 * session name, log) and blocking requests (`context`, `apiKey`, `complete`, `waitForIdle`), served
 * through pi's own API; a command's actions once the command has returned.
 */
import { appendFileSync } from "node:fs";
import type { ExtensionAPI, ExtensionCommandContext, ExtensionContext } from "@mariozechner/pi-coding-agent";
import { getAgentDir, VERSION } from "@mariozechner/pi-coding-agent";
import { referenceProvider } from "./autocomplete.js";
import { continuationRenderer, CONTINUATION_TYPE } from "./continuation.js";
import { buildState } from "./native.mjs";
import { errorText, HostClient } from "./host-client.js";
import { apiKey, complete, modelKey } from "./models.js";
import {
	ACTIONS,
	type Action,
	type BeforeAgentStartResult,
	type CommandCall,
	type CommandResult,
	type CompletionRequest,
	type CustomMessage,
	type EventCall,
	type InputResult,
	type JsonValue,
	PROTOCOL_VERSION,
	type Registrations,
	type SessionContext,
	type ToolCall,
	type ToolResult,
} from "./protocol.js";
import type { ApiKeyReply, HostRequest, IdleReply, Notification } from "./serve-protocol.js";

/** PI_EXT_CALL_TIMEOUT_MS caps every call deadline below (tests use it to prove pi never hangs). */
const cap = (ms: number) => Math.min(ms, Number(process.env.PI_EXT_CALL_TIMEOUT_MS) || ms);

/** Deadlines (ms) for each kind of request: pi must never hang on the host. */
const TIMEOUTS = {
	init: 20_000,
	event: cap(10_000),
	completion: 2_000,
	beforeAgentStart: cap(30_000),
	/** Finding the unsure `@@` references of a prompt (it resolves them). */
	references: cap(5_000),
	tool: cap(180_000),
	command: cap(300_000),
	shutdown: Number(process.env.PI_EXT_SHUTDOWN_MS ?? 5_000),
};

/** Appends to PI_EXT_LOG, when set; never throws (logging must never break pi). */
export function log(level: string, message: string): void {
	const file = process.env.PI_EXT_LOG;
	if (!file) return;
	try {
		appendFileSync(file, `${new Date().toISOString()} ${level} ${message}\n`);
	} catch {
		// Logging must never break pi.
	}
}

/** How to start the host: `pi-ext-host serve` with the plugin's directory, library and config. */
export interface HostCommand {
	command: string;
	args: string[];
}

/**
 * An unsure `@@` reference of a prompt, to settle in pi's selector (`references.questions`, whose
 * documents are `Question` and `Pick` in src/features/references/choose.rs).
 */
interface ReferenceQuestion {
	reference: string;
	title: string;
	options: { label: string; sessionId: string }[];
	skip: string;
	cancel: string;
}

/** The user's answer for one reference: a session, or `null` (send without it). */
interface ReferencePick {
	reference: string;
	sessionId: string | null;
}

/** The command running now: its context (`waitForIdle` goes through it) and the notices it showed. */
interface RunningCommand {
	ctx: ExtensionCommandContext;
	notices: Set<string>;
}

/** pi-ext-abi `SessionContext` from pi's context. */
function sessionContext(ctx: ExtensionContext | undefined): SessionContext {
	const base = { cwd: process.cwd(), agentDir: getAgentDir(), hasUi: false, actions: [...ACTIONS] };
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
		actions: [...ACTIONS],
	};
}

function notifyLevel(level: unknown): "info" | "warning" | "error" {
	return level === "warning" || level === "error" ? level : "info";
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The status-line key of the build's progress (the plugin's own key, so its status replaces it). */
const STATUS_KEY = "session-index";

export class PluginBridge {
	/** The context of the latest pi callback: effects and model calls go through it. */
	private current: ExtensionContext | undefined;
	private command: RunningCommand | undefined;
	/** Why the plugin is off for this runtime (it did not start). */
	private startupError: string | undefined;
	/** Why the last call to the host failed (cleared by the next success): the plugin is down. */
	private lastFailure: string | undefined;
	/** Status keys the plugin set: cleared when its process stops, so no stale text stays. */
	private readonly statusKeys = new Set<string>();
	private registrations: Registrations | undefined;
	/** The host process, from `start` on. */
	private host: HostClient | undefined;
	/** A source checkout's build runs in the background: its percentage, while it runs. */
	private buildPercent: number | undefined;
	/** pi ended this runtime (session_shutdown): a build that finishes later starts nothing here. */
	private closed = false;
	/** The answers to the last prompt's reference questions, for its `before_agent_start`. */
	private picks: ReferencePick[] = [];

	constructor(private readonly pi: ExtensionAPI) {}

	/** Whether the plugin runs (it started and registered itself). */
	get on(): boolean {
		return this.registrations !== undefined;
	}

	/** Why the plugin is off, or undefined. */
	get offReason(): string | undefined {
		return this.startupError;
	}

	/**
	 * Start the host and register the plugin's tools and commands with pi. A failure keeps the
	 * plugin off for this runtime (pi works normally) and is remembered as the reason.
	 */
	async start(start: HostCommand): Promise<boolean> {
		this.host = new HostClient({
			command: start.command,
			args: start.args,
			log,
			onExit: () => this.clearStatus(),
			onStart: (client) => this.init(client),
			onNotification: (notification) => this.apply(notification),
			onRequest: (request) => this.answer(request),
		});
		try {
			await this.host.ensureStarted();
			this.registerWithPi();
			return true;
		} catch (err) {
			this.fail(errorText(err));
			return false;
		}
	}

	/** The plugin cannot run in this runtime (its native parts are missing or did not start). */
	fail(reason: string): void {
		this.startupError = reason;
		log("error", `session-index is off: ${reason}`);
	}

	/**
	 * A source checkout's build runs in the background (native.mjs `startBuild`): show its
	 * progress in the status line, then start the plugin with what `located` finds once it is
	 * done, or say in one line why it failed. pi is usable all along.
	 */
	followBuild(root: string, located: () => HostCommand | string): void {
		const started = Date.now();
		this.buildPercent = 0;
		const timer = setInterval(() => {
			const state = buildState(root);
			if (this.closed) return clearInterval(timer);
			if (state.running) {
				this.buildPercent = state.percent;
				return this.showBuild();
			}
			clearInterval(timer);
			this.buildPercent = undefined;
			this.current?.ui.setStatus(STATUS_KEY, undefined);
			const parts = state.ok ? located() : (state.error ?? "the build stopped without an outcome");
			if (typeof parts === "string") {
				this.fail(parts);
				this.current?.ui.notify(`session-index is off: ${parts}`, "error");
			} else {
				void this.turnOn(parts, Math.round((Date.now() - started) / 1000));
			}
		}, 500);
		timer.unref();
	}

	private showBuild(): void {
		if (this.buildPercent !== undefined) this.current?.ui.setStatus(STATUS_KEY, `session-index: building ${this.buildPercent}%…`);
	}

	/** The build is done: start the plugin in this runtime, as if it had been there at pi's start. */
	private async turnOn(parts: HostCommand, seconds: number): Promise<void> {
		const ctx = this.current;
		if (!(await this.start(parts))) {
			ctx?.ui.notify(`session-index is off: ${this.startupError}`, "error");
			return;
		}
		if (!ctx || this.closed) return;
		ctx.ui.notify(`session-index is on (its native parts were built in ${seconds} s)`, "info");
		await this.event("session_start", { reason: "startup" }, ctx);
		if (ctx.hasUI) this.completeReferences(ctx);
	}

	private async init(client: HostClient): Promise<void> {
		const params = { ctx: sessionContext(this.current), canComplete: true, client: `session-index bridge (pi ${VERSION})` };
		const result = await client.send<{ registrations?: Registrations }>("init", params, TIMEOUTS.init);
		this.registrations ??= result?.registrations;
	}

	// ---- pi's events ---------------------------------------------------------------------------

	async sessionStart(event: { reason: string; previousSessionFile?: string }, ctx: ExtensionContext): Promise<void> {
		this.current = ctx;
		if (this.startupError && ctx.hasUI) ctx.ui.notify(`session-index is off: ${this.startupError}`, "warning");
		this.showBuild();
		await this.event("session_start", { reason: event.reason, previousSessionFile: event.previousSessionFile }, ctx);
		if (ctx.hasUI && this.on) this.completeReferences(ctx);
	}

	async input(event: { text: string; source: string }, ctx: ExtensionContext) {
		// Images stay in pi: the plugin works on text.
		const result = await this.event<InputResult>("input", { text: event.text, source: event.source }, ctx);
		if (result?.action === "handled") return { action: "handled" as const };
		const transformed = result?.action === "transform" && typeof result.text === "string" ? result.text : undefined;
		const text = transformed ?? event.text;
		if (!(await this.settleReferences(text, ctx))) {
			// Cancelled: nothing is sent and the prompt goes back to the editor.
			ctx.ui.setEditorText(text);
			return { action: "handled" as const };
		}
		return transformed === undefined ? undefined : { action: "transform" as const, text: transformed };
	}

	/**
	 * Before a prompt is sent, let the user settle each unsure `@@` reference (several sessions
	 * match, or none while some names are close) in pi's selector: a session, "send without it",
	 * or cancel (returns false). Only where someone can answer (pi's TUI, an RPC client) and the
	 * prompt starts an agent run; a prompt whose references all resolve is asked nothing.
	 */
	private async settleReferences(text: string, ctx: ExtensionContext): Promise<boolean> {
		this.picks = [];
		if (!this.on || !ctx.hasUI || !ctx.isIdle() || !text.includes("@@")) return true;
		let questions: ReferenceQuestion[] = [];
		try {
			const started = performance.now();
			const request = { method: "references.questions", payload: { prompt: text } };
			const answer = await this.connected().request<{ questions?: ReferenceQuestion[] }>("request", request, TIMEOUTS.references);
			questions = answer?.questions ?? [];
			log("debug", `references.questions: ${questions.length} in ${(performance.now() - started).toFixed(1)} ms`);
		} catch (err) {
			log("warn", `references.questions: ${errorText(err)}`);
			return true;
		}
		for (const q of questions) {
			const choice = await ctx.ui.select(q.title, [...q.options.map((o) => o.label), q.skip, q.cancel]);
			if (choice === undefined || choice === q.cancel) return false;
			const picked = q.options.find((o) => o.label === choice);
			this.picks.push({ reference: q.reference, sessionId: picked?.sessionId ?? null });
		}
		return true;
	}

	async beforeAgentStart(event: { prompt: string; systemPrompt: string }, ctx: ExtensionContext) {
		const payload = { prompt: event.prompt, systemPrompt: event.systemPrompt, referencePicks: this.picks as unknown as JsonValue };
		this.picks = [];
		const result = await this.event<BeforeAgentStartResult>("before_agent_start", payload, ctx, TIMEOUTS.beforeAgentStart);
		const down = this.startupError ?? this.lastFailure;
		if (event.prompt.includes("@@")) {
			if (this.buildPercent !== undefined) {
				ctx.ui.notify(`session-index is still being built (${this.buildPercent}%): @@ references are not resolved yet`, "warning");
			} else if (down) {
				ctx.ui.notify(`session-index is off, @@ references are not resolved: ${down}`, "warning");
			}
		}
		if (!result || (!result.message && !result.systemPrompt)) return undefined;
		const message = result.message;
		return {
			message: message
				? { customType: message.customType, content: message.content, display: message.display ?? false, details: message.details }
				: undefined,
			systemPrompt: result.systemPrompt ?? undefined,
		};
	}

	/** The plugin reads the session file itself, so agent_end's messages are not copied over the pipe. */
	async agentEnd(ctx: ExtensionContext): Promise<void> {
		await this.event("agent_end", {}, ctx);
	}

	/** Gives background work (e.g. indexing) its deadline, then stops the process. */
	async sessionShutdown(event: { reason: string }, ctx: ExtensionContext): Promise<void> {
		await this.event("session_shutdown", { reason: event.reason }, ctx);
		this.closed = true;
		await this.host?.close(TIMEOUTS.shutdown);
	}

	/** One event to the plugin, when it subscribed; a failure is logged and remembered, never thrown. */
	private async event<R>(event: string, payload: JsonValue, ctx: ExtensionContext, timeoutMs = TIMEOUTS.event): Promise<R | null> {
		this.current = ctx;
		if (!this.host || !this.registrations?.events.includes(event)) return null;
		try {
			const call: EventCall = { v: PROTOCOL_VERSION, event, payload, ctx: sessionContext(ctx) };
			const result = await this.host.request<R>("event", call, timeoutMs);
			this.lastFailure = undefined;
			return result;
		} catch (err) {
			this.lastFailure = errorText(err);
			log("warn", `${event}: ${this.lastFailure}`);
			return null;
		}
	}

	/** `@@` completion in the editor (a no-op outside the interactive TUI). */
	private completeReferences(ctx: ExtensionContext): void {
		const host = this.host;
		if (!host) return;
		ctx.ui.addAutocompleteProvider((current) =>
			referenceProvider(current, (prefix) =>
				host.request("request", { method: "references.complete", payload: { prefix, limit: 20, cwd: ctx.cwd } }, TIMEOUTS.completion),
			),
		);
	}

	// ---- the plugin's tools and commands in pi ---------------------------------------------------

	private registerWithPi(): void {
		this.pi.registerMessageRenderer(CONTINUATION_TYPE, continuationRenderer);
		for (const tool of this.registrations?.tools ?? []) {
			this.pi.registerTool({
				name: tool.name,
				label: tool.label,
				description: tool.description,
				parameters: tool.parameters as any,
				promptSnippet: tool.promptSnippet ?? undefined,
				promptGuidelines: tool.promptGuidelines,
				execute: (toolCallId, params, signal, _onUpdate, ctx) => this.runTool(tool.name, toolCallId, params, signal, ctx),
			});
		}
		for (const command of this.registrations?.commands ?? []) {
			this.pi.registerCommand(command.name, {
				description: command.description,
				handler: (args, ctx) => this.runCommand(command.name, args ?? "", ctx),
			});
		}
	}

	private async runTool(name: string, toolCallId: string, params: unknown, signal: AbortSignal | undefined, ctx: ExtensionContext) {
		this.current = ctx;
		const call: ToolCall = { v: PROTOCOL_VERSION, tool: name, toolCallId, params: params as JsonValue, ctx: sessionContext(ctx) };
		const pending = this.connected().request<ToolResult | null>("tool", call, TIMEOUTS.tool);
		const aborted = new Promise<never>((_, reject) => {
			signal?.addEventListener("abort", () => reject(new Error(`${name} aborted`)), { once: true });
		});
		const result = await Promise.race([pending, aborted]);
		const content = result?.content ?? [];
		// pi marks a tool result as an error only when execute throws.
		if (result?.isError) throw new Error(content.map((part) => part.text).join("\n") || `${name} failed`);
		return { content, details: result?.details ?? {} };
	}

	/** Run a plugin command, show its outcome once, then perform its actions. */
	private async runCommand(name: string, args: string, ctx: ExtensionCommandContext): Promise<void> {
		this.current = ctx;
		const running: RunningCommand = { ctx, notices: new Set() };
		this.command = running;
		let actions: Action[] = [];
		try {
			const call: CommandCall = { v: PROTOCOL_VERSION, command: name, args, ctx: sessionContext(ctx) };
			const result = await this.connected().request<CommandResult | null>("command", call, TIMEOUTS.command);
			// Plugins may report the outcome themselves (session-index does); show it once.
			const message = result?.message ?? "";
			if (message && !running.notices.has(message)) ctx.ui.notify(message, result?.ok ? "info" : "error");
			actions = result?.actions ?? [];
		} catch (err) {
			ctx.ui.notify(`/${name}: ${errorText(err)}`, "error");
		} finally {
			if (this.command === running) this.command = undefined;
		}
		await this.perform(actions, ctx);
	}

	/**
	 * A command's actions, in order. Switching or starting a session replaces
	 * this extension instance (its ctx goes stale), so such an action ends the list.
	 */
	private async perform(actions: Action[], ctx: ExtensionCommandContext): Promise<void> {
		for (const action of actions) {
			switch (action.type) {
				case "select": {
					const choice = await ctx.ui.select(action.title, action.options.map((o) => o.label));
					const picked = action.options.find((o) => o.label === choice);
					if (picked) await this.perform(picked.actions, ctx);
					break;
				}
				case "insertText":
					ctx.ui.pasteToEditor(action.text);
					break;
				case "command":
					await this.runCommand(action.command, action.args, ctx);
					break;
				case "switchSession":
					await ctx.switchSession(action.sessionFile);
					return;
				case "newSession": {
					const first = action.message;
					await ctx.newSession({ parentSession: action.parentSession ?? undefined, setup: first ? (sm) => firstMessage(sm, first) : undefined });
					return;
				}
				default:
					log("warn", `unknown action from the plugin: ${JSON.stringify((action as { type?: unknown }).type)}`);
			}
		}
	}

	// ---- the host's notifications and requests --------------------------------------------------

	private apply(notification: Notification): void {
		switch (notification.method) {
			case "setStatus": {
				const { key, text } = notification.params;
				this.statusKeys.add(key);
				this.current?.ui.setStatus(key, text ?? undefined);
				break;
			}
			case "notify": {
				const { text, level } = notification.params;
				this.command?.notices.add(text);
				this.current?.ui.notify(text, notifyLevel(level));
				break;
			}
			case "appendEntry":
				this.pi.appendEntry(notification.params.customType, notification.params.data);
				break;
			case "setSessionName":
				this.pi.setSessionName(notification.params.name);
				break;
			case "log": {
				const { level, target, message } = notification.params;
				log(level, `[${target}] ${message}`);
				break;
			}
			default:
				log("warn", `unknown notification from pi-ext-host: ${(notification as { method?: unknown }).method}`);
		}
	}

	private async answer(request: HostRequest): Promise<unknown> {
		switch (request.method) {
			case "context":
				return sessionContext(this.current);
			case "apiKey": {
				const key = this.current ? await apiKey(this.current, request.params.provider) : null;
				return { key } satisfies ApiKeyReply;
			}
			case "complete":
				if (!this.current) throw new Error("pi has no session context yet");
				return complete(this.current, request.params);
			case "waitForIdle":
				return { idle: await this.waitForIdle(request.params.timeoutMs ?? 0) } satisfies IdleReply;
			default:
				throw new Error(`unknown host request '${(request as { method?: unknown }).method}'`);
		}
	}

	private async waitForIdle(timeoutMs: number): Promise<boolean> {
		const command = this.command?.ctx;
		if (command) {
			let timer: NodeJS.Timeout | undefined;
			const late = new Promise<boolean>((resolve) => {
				timer = setTimeout(() => resolve(false), timeoutMs);
			});
			const done = command.waitForIdle().then(() => true);
			return Promise.race([done, late]).finally(() => clearTimeout(timer));
		}
		const deadline = Date.now() + timeoutMs;
		while (this.current && !this.current.isIdle()) {
			if (Date.now() >= deadline) return false;
			await sleep(100);
		}
		return true;
	}

	/** The host of a started plugin (tools and commands exist only once it started). */
	private connected(): HostClient {
		if (!this.host) throw new Error("session-index has not started");
		return this.host;
	}

	private clearStatus(): void {
		for (const key of this.statusKeys) this.current?.ui.setStatus(key, undefined);
		this.statusKeys.clear();
	}
}

/** The first entry of a session a `newSession` action starts. */
function firstMessage(sm: { appendCustomMessageEntry: (...args: any[]) => string }, message: CustomMessage): Promise<void> {
	sm.appendCustomMessageEntry(message.customType, message.content, message.display ?? true, message.details);
	return Promise.resolve();
}
