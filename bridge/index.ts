/**
 * pi extension that runs a pi-ext-abi plugin (session-index by default)
 * through `pi-ext-host serve` (see plugin-bridge.ts for what crosses over).
 *
 * The host, library and config are found by native.mjs (this package's own
 * build, a prebuilt platform package, or the manual layout); a source checkout
 * is built once on first load. Environment overrides: PI_EXT_HOST (host
 * binary), PI_EXT_PLUGIN (plugin directory), PI_EXT_CONFIG / PI_EXT_LIB
 * (config file / library). Also PI_EXT_LOG (append the bridge's and the
 * plugin's log to this file), PI_EXT_SHUTDOWN_MS (background-work deadline at
 * session end), PI_EXT_CALL_TIMEOUT_MS (cap on every call's deadline).
 */
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import { getAgentDir } from "@mariozechner/pi-coding-agent";
import { errorText } from "./host-client.js";
// Plain JavaScript: the npm install script runs the same file.
import { build, locate } from "./native.mjs";
import { PluginBridge } from "./plugin-bridge.js";

export default async function sessionIndexBridge(pi: ExtensionAPI) {
	// The package's native parts (native.mjs): a source checkout builds them once, here.
	let native = locate(getAgentDir());
	let buildError: string | undefined;
	if (!native.built) {
		try {
			await build(native.root);
			native = locate(getAgentDir());
		} catch (err) {
			buildError = errorText(err);
		}
	}
	const args = ["serve", "--plugin", native.plugin];
	if (native.config) args.push("--config", native.config);
	if (native.lib) args.push("--lib", native.lib);

	const bridge = new PluginBridge(pi, { command: native.host, args });
	if (buildError) bridge.fail(buildError);
	else await bridge.start();

	pi.on("session_start", (event, ctx) => bridge.sessionStart(event, ctx));
	pi.on("input", (event, ctx) => bridge.input(event, ctx));
	pi.on("before_agent_start", (event, ctx) => bridge.beforeAgentStart(event, ctx));
	pi.on("agent_end", (_event, ctx) => bridge.agentEnd(ctx));
	pi.on("session_shutdown", (event, ctx) => bridge.sessionShutdown(event, ctx));
}
