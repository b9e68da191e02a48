// Generated from crates/pi-ext-abi/src/protocol.rs by `npm run protocol`: do not edit.

/** Version of the JSON documents (`v` of every call). */
export const PROTOCOL_VERSION = 1;

/** Every `Action` type, for hosts that perform them all. */
export const ACTIONS = ["select", "switchSession", "newSession", "insertText", "command"] as const;

/** The events a plugin may subscribe to. */
export const EVENTS = ["session_start", "input", "before_agent_start", "agent_end", "session_shutdown"] as const;

/** How a host's completion error starts when no model may be used. */
export const UNAVAILABLE = "unavailable: ";

/** How a host's completion error starts when every usable model may cost more than `maxCostUsd`. */
export const OVER_CAP = "over cap: ";

export type JsonValue = number | string | boolean | Array<JsonValue> | { [key in string]?: JsonValue } | null;

/**
 * pi's `ExtensionContext`, reduced to plain data.
 */
export type SessionContext = { 
/**
 * Absolute path of the session's JSONL file; `None` for ephemeral sessions.
 */
sessionFile?: string | null, sessionId?: string | null, 
/**
 * The directory holding this project's session files.
 */
sessionDir?: string | null, 
/**
 * Current leaf entry id; `None` means the last entry in file order (pi's default).
 */
leafId?: string | null, cwd: string, 
/**
 * pi's agent directory (`~/.pi/agent` or `PI_CODING_AGENT_DIR`).
 */
agentDir: string, hasUi: boolean, 
/**
 * The model pi is using, as `provider/id`, when known.
 */
model?: string | null, 
/**
 * Since 1.1: the [`Action`] types (`select`, `newSession`, …) this host performs; empty on 1.0 hosts.
 */
actions?: Array<string>, };

/**
 * An event delivered to [`crate::Plugin::on_event`].
 */
export type EventCall = { v: number, 
/**
 * pi's event name, e.g. `before_agent_start`.
 */
event: string, 
/**
 * pi's event object, e.g. `{prompt, systemPrompt}`.
 */
payload: JsonValue, ctx: SessionContext, };

/**
 * Result of the `input` event (pi's `{action, text}`).
 */
export type InputResult = { "action": "continue" } | { "action": "transform", text: string, } | { "action": "handled" };

/**
 * A message injected by `before_agent_start`; pi persists it as a `custom_message` entry.
 */
export type CustomMessage = { customType: string, content: string, display: boolean, details: JsonValue, };

/**
 * Result of `before_agent_start` (pi's `{message?, systemPrompt?}`).
 */
export type BeforeAgentStartResult = { message?: CustomMessage | null, systemPrompt?: string | null, };

/**
 * A command the plugin registers (pi's `pi.registerCommand(name, {description})`).
 */
export type CommandSpec = { name: string, description: string, };

/**
 * A tool the plugin registers (pi's `pi.registerTool`).
 */
export type ToolSpec = { name: string, label: string, description: string, 
/**
 * JSON schema of the parameters object.
 */
parameters: JsonValue, promptSnippet?: string | null, promptGuidelines?: Array<string>, };

/**
 * Everything a plugin registers, returned by [`crate::Plugin::registrations`].
 */
export type Registrations = { 
/**
 * Events the plugin wants delivered (names from [`EVENTS`]).
 */
events: Array<string>, commands: Array<CommandSpec>, tools: Array<ToolSpec>, 
/**
 * Every problem the plugin found in the config object it was handed
 * (`key: message`); the host, which read the file, names it.
 */
configProblems?: Array<string>, };

/**
 * A tool invocation.
 */
export type ToolCall = { v: number, tool: string, toolCallId: string, params: JsonValue, ctx: SessionContext, };

/**
 * One content part of a tool result (pi's `{type: "text", text}`).
 */
export type ContentPart = { "type": "text", text: string, };

/**
 * A tool result (pi's `{content, details, isError}`).
 */
export type ToolResult = { content: Array<ContentPart>, details: JsonValue, isError: boolean, };

/**
 * A command invocation (`/name args`).
 */
export type CommandCall = { v: number, command: string, args: string, ctx: SessionContext, };

/**
 * Outcome of a command; the plugin also reports through Host callbacks.
 */
export type CommandResult = { ok: boolean, message?: string | null, details: JsonValue, 
/**
 * Since 1.1: what the host does next, in order, once the command returned.
 */
actions?: Array<Action>, };

/**
 * Since 1.1: a session control the host performs for a command (pi's
 * `ctx.ui.select`, `ctx.switchSession`, `ctx.newSession`, `ctx.ui.pasteToEditor`).
 */
export type Action = { "type": "select", title: string, options: Array<SelectOption>, } | { "type": "switchSession", sessionFile: string, } | { "type": "newSession", parentSession?: string | null, message?: CustomMessage | null, } | { "type": "insertText", text: string, } | { "type": "command", command: string, args: string, };

/**
 * One choice of [`Action::Select`].
 */
export type SelectOption = { label: string, actions: Array<Action>, };

/**
 * State of background work after [`crate::Plugin::flush`] or `shutdown`.
 */
export type FlushReport = { 
/**
 * Background jobs still running or queued.
 */
pending: number, 
/**
 * True when nothing is pending.
 */
idle: boolean, };

/**
 * One chat message of a [`CompletionRequest`].
 */
export type ChatMessage = { 
/**
 * `user` or `assistant`.
 */
role: string, content: string, };

/**
 * A model completion the plugin asks the host to run ([`crate::Host::complete`]).
 */
export type CompletionRequest = { 
/**
 * `provider/id`; `None` lets the host choose its cheapest suitable model.
 */
model?: string | null, 
/**
 * Since 1.1: every acceptable `provider/id`, in order of preference. When
 * none is usable, [`CompletionRequest::fallback`] says what the host may do.
 */
candidates?: Array<string>, 
/**
 * Since 1.2: what the host may use when no candidate is usable; absent
 * means [`ModelFallback::Offline`] (a plugin never spends on a model the
 * user did not choose).
 */
fallback?: ModelFallback | null, system: string, messages: Array<ChatMessage>, maxTokens: number, 
/**
 * When set, the answer must be a JSON object matching this schema.
 */
jsonSchema?: JsonValue | null, timeoutMs: number, 
/**
 * Since 1.3: the most this call may cost in USD, at the host's price for
 * the model it picks, counting every byte of `system`, `messages` and
 * `json_schema` as an input token and all of `max_tokens` as output. The
 * host picks no model whose worst case is higher; when none fits it
 * fails with an error starting [`OVER_CAP`]. Absent: no limit (no daily
 * cap is set).
 */
maxCostUsd?: number | null, };

/**
 * What a host may answer with when none of a [`CompletionRequest`]'s models is usable.
 */
export type ModelFallback = "offline" | "cheapest" | "session";

/**
 * Token usage of a completion.
 */
export type Usage = { inputTokens: number, outputTokens: number, costUsd?: number | null, };

/**
 * The host's answer to a [`CompletionRequest`].
 */
export type CompletionResponse = { text: string, 
/**
 * The model that answered, as `provider/id`.
 */
model: string, usage: Usage, 
/**
 * Since 1.1: why the host used `model`: `configured` (requested), `cheapest`
 * (its registry's cheapest capable model) or `session` (the session's model).
 */
choice?: string | null, };
