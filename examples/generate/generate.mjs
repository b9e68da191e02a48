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

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { startMockServer, startPi, writeMockAgentDir } from "./mock-pi.mjs";
import { SCRIPTS, PROJECT_FILES } from "./scripts.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "../..");
const piBin = path.join(repo, "tools/pi-ref/node_modules/@mariozechner/pi-coding-agent/dist/cli.js");
const outDir = path.join(repo, "examples/agent/sessions/--home-user-demo--");
const DEMO_CWD = "/home/user/demo";

// The mock model answers each request with the next canned turn of the
// current prompt ("Done." once they run out).
let queue = [];

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
  const pi = startPi({ piBin, agentDir, sessionDir, cwd });
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
  await pi.exit();
  const [file] = fs.readdirSync(sessionDir).filter((f) => f.endsWith(".jsonl"));
  const text = fs.readFileSync(path.join(sessionDir, file), "utf8").split(cwd).join(DEMO_CWD);
  fs.writeFileSync(path.join(outDir, file), text);
  console.log(`${script.slug}: ${file} (${text.split("\n").length - 1} lines)`);
}

const server = await startMockServer(() => queue.shift() ?? { text: "Done." });
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "si-examples-"));
writeMockAgentDir(path.join(scratch, "agent"), server);
fs.mkdirSync(outDir, { recursive: true });
for (const f of fs.readdirSync(outDir)) if (f.endsWith(".jsonl")) fs.rmSync(path.join(outDir, f));
try {
  for (const script of SCRIPTS) await runScript(script, server, scratch);
} finally {
  server.close();
  fs.rmSync(scratch, { recursive: true, force: true });
}
