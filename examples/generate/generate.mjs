// Regenerates the bundled example sessions with the REAL pi (tools/pi-ref,
// pinned 0.73.1) driven over its RPC mode against a scripted local mock of
// the OpenAI chat-completions API. pi runs its real tools (read, write, edit,
// bash) in a scratch copy of a small project, so every entry is exactly what
// pi writes; only the assistant's words are canned.
//
//   npm ci --prefix tools/pi-ref
//   node examples/generate/generate.mjs
//
// Output: examples/agent/sessions/--home-user-demo--/*.jsonl (the scratch
// project path is rewritten to /home/user/demo so the files are stable).

import { spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { SCRIPTS, PROJECT_FILES } from "./scripts.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "../..");
const piBin = path.join(repo, "tools/pi-ref/node_modules/@mariozechner/pi-coding-agent/dist/cli.js");
const outDir = path.join(repo, "examples/agent/sessions/--home-user-demo--");
const DEMO_CWD = "/home/user/demo";

// ---- mock OpenAI chat completions (streaming) ----
let queue = [];
let served = 0;

function sse(res, chunk) {
  res.write(`data: ${JSON.stringify(chunk)}\n\n`);
}

function startServer() {
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      const turn = queue.shift() ?? { text: "Done." };
      served += 1;
      const id = `chatcmpl-${served}`;
      const base = { id, object: "chat.completion.chunk", created: 1795310000 + served, model: "mock-1" };
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      if (turn.text) {
        sse(res, { ...base, choices: [{ index: 0, delta: { role: "assistant", content: turn.text }, finish_reason: null }] });
      }
      (turn.tools ?? []).forEach((call, index) => {
        const tool_calls = [
          { index, id: `call_${served}_${index}`, type: "function", function: { name: call.name, arguments: JSON.stringify(call.args) } },
        ];
        sse(res, { ...base, choices: [{ index: 0, delta: { tool_calls }, finish_reason: null }] });
      });
      const input = 200 + Math.floor(body.length / 4);
      const output = 20 + Math.floor(JSON.stringify(turn).length / 4);
      sse(res, { ...base, choices: [{ index: 0, delta: {}, finish_reason: turn.tools ? "tool_calls" : "stop" }] });
      sse(res, { ...base, choices: [], usage: { prompt_tokens: input, completion_tokens: output, total_tokens: input + output } });
      res.write("data: [DONE]\n\n");
      res.end();
    });
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

// ---- pi over RPC ----
function startPi(agentDir, sessionDir, cwd) {
  const child = spawn(
    process.execPath,
    [piBin, "--mode", "rpc", "--provider", "mock", "--model", "mock-1", "--session-dir", sessionDir],
    { cwd, env: { ...process.env, PI_CODING_AGENT_DIR: agentDir, PI_SKIP_VERSION_CHECK: "1" }, stdio: ["pipe", "pipe", "inherit"] },
  );
  let buffer = "";
  const waiters = [];
  child.stdout.on("data", (data) => {
    buffer += data.toString("utf8");
    let nl;
    while ((nl = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, nl).replace(/\r$/, "");
      buffer = buffer.slice(nl + 1);
      if (!line.trim()) continue;
      let event;
      try {
        event = JSON.parse(line);
      } catch {
        continue;
      }
      for (const w of [...waiters]) {
        if (w.match(event)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(event);
        }
      }
    }
  });
  const waitFor = (match, ms = 30000) =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("timed out waiting for pi")), ms);
      waiters.push({ match, resolve: (e) => (clearTimeout(timer), resolve(e)) });
    });
  const send = (command) => child.stdin.write(JSON.stringify(command) + "\n");
  return { child, send, waitFor };
}

async function runScript(script, server, scratch) {
  const agentDir = path.join(scratch, "agent");
  const cwd = path.join(scratch, "demo");
  const sessionDir = path.join(scratch, "sessions", script.slug);
  fs.rmSync(cwd, { recursive: true, force: true });
  for (const [file, text] of Object.entries(PROJECT_FILES)) {
    fs.mkdirSync(path.dirname(path.join(cwd, file)), { recursive: true });
    fs.writeFileSync(path.join(cwd, file), text);
  }
  fs.mkdirSync(sessionDir, { recursive: true });
  const pi = startPi(agentDir, sessionDir, cwd);
  for (const step of script.steps) {
    if (step.name) {
      pi.send({ id: "n", type: "set_session_name", name: step.name });
      await pi.waitFor((e) => e.type === "response" && e.id === "n");
      continue;
    }
    queue = [...step.turns];
    const end = pi.waitFor((e) => e.type === "agent_end");
    pi.send({ type: "prompt", message: step.user });
    await end;
    if (queue.length) throw new Error(`${script.slug}: ${queue.length} scripted turns unused`);
  }
  pi.child.stdin.end();
  await new Promise((resolve) => pi.child.on("exit", resolve));
  const [file] = fs.readdirSync(sessionDir).filter((f) => f.endsWith(".jsonl"));
  const text = fs.readFileSync(path.join(sessionDir, file), "utf8").split(cwd).join(DEMO_CWD);
  fs.writeFileSync(path.join(outDir, file), text);
  console.log(`${script.slug}: ${file} (${text.split("\n").length - 1} lines)`);
}

const server = await startServer();
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "si-examples-"));
const agentDir = path.join(scratch, "agent");
fs.mkdirSync(agentDir, { recursive: true });
fs.writeFileSync(
  path.join(agentDir, "models.json"),
  JSON.stringify({
    providers: {
      mock: {
        baseUrl: `http://127.0.0.1:${server.address().port}/v1`,
        api: "openai-completions",
        apiKey: "mock-key",
        models: [{ id: "mock-1", name: "Mock 1", contextWindow: 128000, maxTokens: 4096 }],
      },
    },
  }),
);
fs.writeFileSync(path.join(agentDir, "settings.json"), JSON.stringify({ defaultProvider: "mock", defaultModel: "mock-1" }));
fs.mkdirSync(outDir, { recursive: true });
for (const f of fs.readdirSync(outDir)) if (f.endsWith(".jsonl")) fs.rmSync(path.join(outDir, f));
try {
  for (const script of SCRIPTS) await runScript(script, server, scratch);
} finally {
  server.close();
  fs.rmSync(scratch, { recursive: true, force: true });
}
