// Shared set-up for the end-to-end tests: the pi install, a throw-away agent
// dir whose only provider is the mock server, and helpers to read what pi wrote.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const PI_VERSION = "0.73.1";
export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
/** The package's pi extension entry (package.json `pi.extensions`), which loads bridge/index.ts. */
export const BRIDGE = join(REPO, "index.ts");

/** Directory holding node_modules/@mariozechner/pi-coding-agent (installed by run.mjs). */
export function nodeDir() {
	return process.env.PI_E2E_NODE_DIR ? resolve(process.env.PI_E2E_NODE_DIR) : join(REPO, "target/e2e-node");
}

export function piPackageDir(dir = nodeDir()) {
	return join(dir, "node_modules/@mariozechner/pi-coding-agent");
}

export function piCli() {
	return join(piPackageDir(), "dist/cli.js");
}

export function installedPiVersion(dir = nodeDir()) {
	try {
		return JSON.parse(readFileSync(join(piPackageDir(dir), "package.json"), "utf8")).version;
	} catch {
		return undefined;
	}
}

/** A fresh temp tree: agent dir (models.json → mock server) and a project dir for pi's cwd. */
export function makeWorld(mockUrl, name) {
	const root = mkdtempSync(join(tmpdir(), `pi-e2e-${name}-`));
	const agentDir = join(root, "agent");
	const project = join(root, "project");
	mkdirSync(agentDir, { recursive: true });
	mkdirSync(project, { recursive: true });
	writeMockModels(agentDir, mockUrl);
	return { root, agentDir, project };
}

/** pi's models.json in `agentDir`: the mock server is pi's only provider (models mock-main, mock-cheap). */
export function writeMockModels(agentDir, mockUrl) {
	const models = {
		providers: {
			mock: {
				baseUrl: mockUrl,
				api: "openai-completions",
				apiKey: "mock-secret-key",
				compat: { supportsDeveloperRole: false, supportsReasoningEffort: false, supportsStore: false },
				models: [
					{ id: "mock-main", name: "Mock main", contextWindow: 128000, maxTokens: 4096 },
					{ id: "mock-cheap", name: "Mock cheap", contextWindow: 128000, maxTokens: 4096 },
				],
			},
		},
	};
	writeFileSync(join(agentDir, "models.json"), JSON.stringify(models, null, 2));
}

/** Environment for pi: isolated agent dir, no network at start-up, no telemetry. */
export function piEnv(world, extra = {}) {
	return {
		...process.env,
		PI_CODING_AGENT_DIR: world.agentDir,
		PI_OFFLINE: "1",
		PI_SKIP_VERSION_CHECK: "1",
		PI_TELEMETRY: "0",
		...extra,
	};
}

export const PI_ARGS = ["--provider", "mock", "--model", "mock-main", "-e", BRIDGE];

/** Every JSONL entry of every session file pi wrote under the agent dir. */
export function sessionFiles(agentDir) {
	const root = join(agentDir, "sessions");
	const out = [];
	const walk = (dir) => {
		if (!existsSync(dir)) return;
		for (const e of readdirSync(dir, { withFileTypes: true })) {
			const p = join(dir, e.name);
			if (e.isDirectory()) walk(p);
			else if (e.name.endsWith(".jsonl")) out.push(p);
		}
	};
	walk(root);
	return out;
}

export function readEntries(file) {
	return readFileSync(file, "utf8")
		.split("\n")
		.filter((l) => l.trim())
		.map((l) => JSON.parse(l));
}

/** The session file whose header id is `sessionId`. */
export function sessionFileById(agentDir, sessionId) {
	return sessionFiles(agentDir).find((f) => readEntries(f)[0]?.id === sessionId);
}

/** Poll `fn` until it returns a truthy value. */
export async function eventually(fn, what, timeoutMs = 30_000, everyMs = 200) {
	const deadline = Date.now() + timeoutMs;
	let last;
	while (Date.now() < deadline) {
		try {
			last = await fn();
			if (last) return last;
		} catch (err) {
			last = err;
		}
		await new Promise((r) => setTimeout(r, everyMs));
	}
	throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last instanceof Error ? `: ${last.message}` : ""}`);
}
