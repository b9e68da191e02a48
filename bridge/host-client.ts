/**
 * Client side of the `pi-ext-host serve` JSON-lines protocol (see
 * crates/pi-ext-host/SERVE.md): owns the host process, correlates request ids,
 * answers the host's own requests, and restarts the process when it dies.
 *
 * Every request has a deadline so pi never waits forever on the host.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { StringDecoder } from "node:string_decoder";
import type { HostRequest, Notification } from "./serve-protocol.js";

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Answers the host's blocking requests (`apiKey`, `complete`, `waitForIdle`, `context`). */
export type HostRequestHandler = (request: HostRequest) => Promise<unknown>;
/** Receives the host's fire-and-forget notifications (`setStatus`, `notify`, `appendEntry`, `setSessionName`, `log`). */
export type HostNotificationHandler = (notification: Notification) => void;

export interface HostClientOptions {
	command: string;
	args: string[];
	env?: NodeJS.ProcessEnv;
	onRequest: HostRequestHandler;
	onNotification: HostNotificationHandler;
	/** Diagnostics from the client itself and the host's stderr. */
	log: (level: string, message: string) => void;
	/** Called when the process stops unexpectedly (not after `close`). */
	onExit?: () => void;
	/** Called after every (re)start, before any queued request is sent; usually sends `init`. */
	onStart: (client: HostClient) => Promise<void>;
	/** Restarts allowed over the client's lifetime; after that the client stays down. */
	maxRestarts?: number;
}

interface Pending {
	resolve: (value: any) => void;
	reject: (error: Error) => void;
	timer: NodeJS.Timeout;
	method: string;
}

export class HostError extends Error {}

export class HostClient {
	private child: ChildProcess | undefined;
	private pending = new Map<number, Pending>();
	private nextId = 1;
	private restarts = 0;
	private starting: Promise<void> | undefined;
	private closed = false;
	/** The host's last stderr line: a start-up failure is explained there (one line). */
	private lastStderr = "";
	private readonly maxRestarts: number;

	constructor(private readonly options: HostClientOptions) {
		this.maxRestarts = options.maxRestarts ?? 3;
	}

	/** Start the process (if needed) and run `onStart`. Safe to call repeatedly. */
	ensureStarted(): Promise<void> {
		if (this.closed) return Promise.reject(new HostError("pi-ext-host client is closed"));
		if (this.child && !this.starting) return Promise.resolve();
		if (!this.starting) {
			this.starting = this.start().finally(() => {
				this.starting = undefined;
			});
		}
		return this.starting;
	}

	private async start(): Promise<void> {
		const { command, args, env } = this.options;
		const child = spawn(command, args, { env: env ?? process.env, stdio: ["pipe", "pipe", "pipe"] });
		this.child = child;
		const spawnError = new Promise<never>((_, reject) => {
			child.once("error", (err) => reject(new HostError(`cannot start ${command}: ${err.message}`)));
		});
		spawnError.catch(() => {});
		child.on("exit", (code, signal) => this.onExit(child, code, signal));
		child.stdin?.on("error", () => {}); // EPIPE after a crash surfaces through `exit`
		attachLines(child.stdout!, (line) => this.onLine(line));
		attachLines(child.stderr!, (line) => {
			if (line.trim()) this.lastStderr = line.trim();
			this.options.log("host", line);
		});
		// The host answers `init` only once the plugin is loaded, so a failing
		// spawn or load shows up here as an error or an early exit.
		await Promise.race([this.options.onStart(this), spawnError]);
	}

	private onExit(child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
		if (this.child !== child) return;
		this.child = undefined;
		const why = signal ? `signal ${signal}` : `exit code ${code}`;
		const detail = this.lastStderr ? ` (${this.lastStderr})` : "";
		for (const [id, p] of this.pending) {
			clearTimeout(p.timer);
			p.reject(new HostError(`pi-ext-host stopped (${why}) during ${p.method}${detail}`));
			this.pending.delete(id);
		}
		if (!this.closed) {
			this.options.log("warn", `pi-ext-host stopped (${why})`);
			this.options.onExit?.();
		}
	}

	private onLine(line: string): void {
		if (!line.trim()) return;
		let msg: any;
		try {
			msg = JSON.parse(line);
		} catch {
			this.options.log("warn", `pi-ext-host wrote a non-protocol line: ${line.slice(0, 200)}`);
			return;
		}
		if (typeof msg?.method === "string") {
			if (msg.id === undefined || msg.id === null) {
				try {
					this.options.onNotification({ ...msg, params: msg.params ?? {} } as Notification);
				} catch (err) {
					this.options.log("warn", `applying ${msg.method} failed: ${errorText(err)}`);
				}
			} else {
				void this.answer(msg.id, { method: msg.method, params: msg.params ?? {} } as HostRequest);
			}
			return;
		}
		const pending = typeof msg?.id === "number" ? this.pending.get(msg.id) : undefined;
		if (!pending) return; // a reply that arrives after its deadline
		this.pending.delete(msg.id);
		clearTimeout(pending.timer);
		if (msg.error) pending.reject(new HostError(String(msg.error.message ?? "pi-ext-host error")));
		else pending.resolve(msg.result ?? null);
	}

	private async answer(id: Json, request: HostRequest): Promise<void> {
		let reply: Record<string, unknown>;
		try {
			reply = { id, result: (await this.options.onRequest(request)) ?? null };
		} catch (err) {
			reply = { id, error: { message: errorText(err) } };
		}
		this.write(reply);
	}

	private write(message: unknown): boolean {
		const stdin = this.child?.stdin;
		if (!stdin || stdin.destroyed) return false;
		stdin.write(`${JSON.stringify(message)}\n`);
		return true;
	}

	/** Send a request without restarting (used by `onStart` for `init`). */
	send<R = unknown>(method: string, params: unknown, timeoutMs: number): Promise<R> {
		return new Promise((resolve, reject) => {
			const id = this.nextId++;
			const timer = setTimeout(() => {
				this.pending.delete(id);
				reject(new HostError(`pi-ext-host did not answer ${method} within ${timeoutMs} ms`));
			}, timeoutMs);
			this.pending.set(id, { resolve, reject, timer, method });
			if (!this.write({ id, method, params })) {
				clearTimeout(timer);
				this.pending.delete(id);
				reject(new HostError(`pi-ext-host is not running (${method})`));
			}
		});
	}

	/** Send a request, (re)starting the host first when it is down and restarts remain. */
	async request<R = unknown>(method: string, params: unknown, timeoutMs: number): Promise<R> {
		if (!this.child && !this.starting) {
			if (this.restarts >= this.maxRestarts) {
				throw new HostError(`pi-ext-host is down (gave up after ${this.restarts} restarts)`);
			}
			this.restarts++;
			this.options.log("info", `starting pi-ext-host (restart ${this.restarts}/${this.maxRestarts})`);
		}
		await this.ensureStarted();
		return this.send<R>(method, params, timeoutMs);
	}

	get running(): boolean {
		return this.child !== undefined;
	}

	/** Ask the host to shut down within `timeoutMs`, then make sure it is gone. */
	async close(timeoutMs: number): Promise<void> {
		if (this.closed) return;
		const child = this.child;
		try {
			if (child) await this.send("shutdown", { timeoutMs }, timeoutMs + 2000);
		} catch (err) {
			this.options.log("warn", `shutdown: ${errorText(err)}`);
		}
		this.closed = true;
		if (child && child.exitCode === null) {
			child.stdin?.end();
			const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
			const timer = setTimeout(() => child.kill("SIGKILL"), 2000);
			await exited;
			clearTimeout(timer);
		}
	}
}

/** LF-only line framing (JSON strings may contain U+2028, which readline would split on). */
function attachLines(stream: NodeJS.ReadableStream, onLine: (line: string) => void): void {
	const decoder = new StringDecoder("utf8");
	let buffer = "";
	stream.on("data", (chunk: Buffer | string) => {
		buffer += typeof chunk === "string" ? chunk : decoder.write(chunk);
		let nl = buffer.indexOf("\n");
		while (nl !== -1) {
			const line = buffer.slice(0, nl);
			buffer = buffer.slice(nl + 1);
			onLine(line.endsWith("\r") ? line.slice(0, -1) : line);
			nl = buffer.indexOf("\n");
		}
	});
	stream.on("end", () => {
		buffer += decoder.end();
		if (buffer) onLine(buffer);
		buffer = "";
	});
}

export function errorText(err: unknown): string {
	return err instanceof Error ? err.message : String(err);
}
