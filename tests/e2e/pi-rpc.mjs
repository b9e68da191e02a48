// Drives the real pi in `--mode rpc` (JSON lines on stdin/stdout, see pi's docs/rpc.md).
import { spawn } from "node:child_process";
import { StringDecoder } from "node:string_decoder";

export class PiRpc {
	/**
	 * @param {{cli: string, args: string[], cwd: string, env: NodeJS.ProcessEnv}} options
	 */
	constructor({ cli, args, cwd, env }) {
		this.events = [];
		this.stderr = "";
		this.waiters = [];
		this.nextId = 1;
		this.child = spawn(process.execPath, [cli, "--mode", "rpc", ...args], { cwd, env, stdio: ["pipe", "pipe", "pipe"] });
		this.exit = undefined;
		this.exited = new Promise((resolve) =>
			this.child.once("exit", (code, signal) => {
				this.exit = { code, signal };
				// Nothing more will arrive: fail every waiter now instead of at its deadline.
				for (const w of this.waiters) {
					clearTimeout(w.timer);
					w.reject(new Error(`pi exited (${JSON.stringify(this.exit)}) while waiting for ${w.what}\n--- pi stderr ---\n${this.stderr.slice(-3000)}`));
				}
				this.waiters = [];
				resolve(this.exit);
			}),
		);
		const decoder = new StringDecoder("utf8");
		let buffer = "";
		this.child.stdout.on("data", (chunk) => {
			buffer += decoder.write(chunk);
			let nl = buffer.indexOf("\n");
			while (nl !== -1) {
				const line = buffer.slice(0, nl).replace(/\r$/, "");
				buffer = buffer.slice(nl + 1);
				if (line.trim()) this.onLine(line);
				nl = buffer.indexOf("\n");
			}
		});
		this.child.stderr.on("data", (c) => {
			this.stderr += c.toString();
		});
	}

	onLine(line) {
		let msg;
		try {
			msg = JSON.parse(line);
		} catch {
			this.events.push({ type: "non_json", line });
			return;
		}
		this.events.push(msg);
		this.waiters = this.waiters.filter((w) => {
			if (!w.match(msg)) return true;
			clearTimeout(w.timer);
			w.resolve(msg);
			return false;
		});
	}

	/** Resolve with the first event (from index `from` on) matching `match`. */
	waitFor(match, what, timeoutMs = 60_000, from = 0) {
		const seen = this.events.slice(from).find(match);
		if (seen) return Promise.resolve(seen);
		if (this.exit) return Promise.reject(new Error(`pi already exited (${JSON.stringify(this.exit)}); wanted ${what}\n${this.stderr.slice(-3000)}`));
		return new Promise((resolve, reject) => {
			const timer = setTimeout(() => {
				this.waiters = this.waiters.filter((w) => w.timer !== timer);
				reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}\n--- pi stderr ---\n${this.stderr.slice(-3000)}`));
			}, timeoutMs);
			this.waiters.push({ match, resolve, reject, timer, what });
		});
	}

	/** Send a command and wait for its response; throws when pi reports failure. */
	async command(cmd, timeoutMs = 60_000) {
		const id = `t${this.nextId++}`;
		this.child.stdin.write(`${JSON.stringify({ ...cmd, id })}\n`);
		const response = await this.waitFor((m) => m.type === "response" && m.id === id, `response to ${cmd.type}`, timeoutMs);
		if (!response.success) throw new Error(`pi rejected ${cmd.type}: ${response.error}`);
		return response.data;
	}

	/** Send a prompt and wait until the agent run it started has ended. */
	async prompt(message, timeoutMs = 90_000) {
		const from = this.events.length;
		await this.command({ type: "prompt", message }, timeoutMs);
		return this.waitFor((m) => m.type === "agent_end", `agent_end after "${message.slice(0, 60)}"`, timeoutMs, from);
	}

	uiRequests(method) {
		return this.events.filter((e) => e.type === "extension_ui_request" && (!method || e.method === method));
	}

	/** Close stdin (pi shuts down, emitting session_shutdown) and wait for the exit. */
	async stop(timeoutMs = 30_000) {
		this.child.stdin.end();
		const timer = setTimeout(() => this.child.kill("SIGKILL"), timeoutMs);
		const result = await this.exited;
		clearTimeout(timer);
		return result;
	}
}
