// Generated from crates/pi-ext-host/src/serve/messages.rs by `npm run protocol`: do not edit.

import type { CompletionRequest, JsonValue } from "./protocol.js";

/**
 * A fire-and-forget line `{"method", "params"}`, applied by the bridge through pi's API.
 */
export type Notification = { "method": "setStatus", "params": { key: string, text: string | null, } } | { "method": "notify", "params": { text: string, level: string, } } | { "method": "appendEntry", "params": { customType: string, data: JsonValue, } } | { "method": "setSessionName", "params": { name: string, } } | { "method": "log", "params": { level: string, target: string, message: string, } };

/**
 * A blocking call of the plugin, `{"id", "method", "params"}`; the bridge answers it by `id`.
 */
export type HostRequest = { "method": "context", "params": Record<string, never> } | { "method": "apiKey", "params": { provider: string, } } | { "method": "complete", "params": CompletionRequest } | { "method": "waitForIdle", "params": { timeoutMs: number, } };

/**
 * The reply to [`HostRequest::ApiKey`]: no key when pi has none.
 */
export type ApiKeyReply = { key: string | null, };

/**
 * The reply to [`HostRequest::WaitForIdle`]: whether pi became idle in time.
 */
export type IdleReply = { idle: boolean, };
