/**
 * pi extension that runs a pi-ext-abi plugin (session-index by default)
 * through `pi-ext-host serve` (plugin-bridge.ts says what crosses over).
 *
 * The host, library and config are found by native.mjs: the prebuilt platform
 * package, a source checkout's own build, or the manual layout. A source
 * checkout without a build is built in the background: pi is usable at once,
 * the status line shows the build's progress, and session-index turns on when
 * it is done. Environment overrides: PI_EXT_HOST (host binary), PI_EXT_PLUGIN
 * (plugin directory), PI_EXT_CONFIG / PI_EXT_LIB (config file / library).
 * Also PI_EXT_LOG (append the bridge's and the plugin's log to this file),
 * PI_EXT_SHUTDOWN_MS (background-work deadline at session end),
 * PI_EXT_CALL_TIMEOUT_MS (cap on every call's deadline).
 */
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import { getAgentDir } from "@mariozechner/pi-coding-agent";
// Plain JavaScript: the npm install script and the CLI launcher run the same file.
import { buildCommand, locate, startBuild } from "./native.mjs";
import { type HostCommand, log, PluginBridge } from "./plugin-bridge.js";

/** `pi-ext-host serve` for what native.mjs found, or why nothing can run. */
function hostCommand(): HostCommand | string {
	const native = locate(getAgentDir());
	if (native.missing) return native.missing;
	if (native.needsBuild) return `the native parts are not built; to build them: ${buildCommand(native.root)}`;
	const args = ["serve", "--plugin", native.plugin];
	if (native.config) args.push("--config", native.config);
	if (native.lib) args.push("--lib", native.lib);
	log("info", `native parts: ${native.from}${native.package ? ` (${native.package})` : ""}: ${native.host}`);
	return { command: native.host, args };
}

export default async function sessionIndexBridge(pi: ExtensionAPI) {
	const bridge = new PluginBridge(pi);
	pi.on("session_start", (event, ctx) => bridge.sessionStart(event, ctx));
	pi.on("input", (event, ctx) => bridge.input(event, ctx));
	pi.on("before_agent_start", (event, ctx) => bridge.beforeAgentStart(event, ctx));
	pi.on("agent_end", (_event, ctx) => bridge.agentEnd(ctx));
	pi.on("session_shutdown", (event, ctx) => bridge.sessionShutdown(event, ctx));

	const native = locate(getAgentDir());
	if (native.needsBuild && native.root) {
		// Never waits for cargo: the build runs detached (it outlives pi) and turns the plugin on.
		startBuild(native.root);
		bridge.followBuild(native.root, hostCommand);
		return;
	}
	const parts = hostCommand();
	if (typeof parts === "string") bridge.fail(parts);
	else await bridge.start(parts);
}
