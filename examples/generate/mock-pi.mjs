// The machinery shared by the session generators (examples/generate and
// tests/fixtures/search-eval): a local mock of the OpenAI chat-completions API
// that streams canned assistant turns, an agent directory pointing pi at it,
// and the real pi (tools/pi-ref, 0.73.1) driven over its RPC mode.

import { spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";

// A turn is { text?, tools?: [{ name, args }] }: the text streams as the
// assistant's content, then each tool call, then the usage pi records.
function streamTurn(res, turn, served, requestBytes) {
  const sse = (chunk) => res.write(`data: ${JSON.stringify(chunk)}\n\n`);
  const base = { id: `chatcmpl-${served}`, object: "chat.completion.chunk", created: 1795310000 + served, model: "mock-1" };
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  if (turn.text) {
    sse({ ...base, choices: [{ index: 0, delta: { role: "assistant", content: turn.text }, finish_reason: null }] });
  }
  (turn.tools ?? []).forEach((call, index) => {
    const tool_calls = [
      { index, id: `call_${served}_${index}`, type: "function", function: { name: call.name, arguments: JSON.stringify(call.args) } },
    ];
    sse({ ...base, choices: [{ index: 0, delta: { tool_calls }, finish_reason: null }] });
  });
  const input = 200 + Math.floor(requestBytes / 4);
  const output = 20 + Math.floor(JSON.stringify(turn).length / 4);
  sse({ ...base, choices: [{ index: 0, delta: {}, finish_reason: turn.tools ? "tool_calls" : "stop" }] });
  sse({ ...base, choices: [], usage: { prompt_tokens: input, completion_tokens: output, total_tokens: input + output } });
  res.write("data: [DONE]\n\n");
  res.end();
}

// Serves `nextTurn(requestBody)` for every request, on a loopback port.
export function startMockServer(nextTurn) {
  let served = 0;
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      served += 1;
      streamTurn(res, nextTurn(body), served, body.length);
    });
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

// An agent directory whose only provider is the mock ("mock/mock-1").
export function writeMockAgentDir(agentDir, server, settings = {}) {
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
  fs.writeFileSync(
    path.join(agentDir, "settings.json"),
    JSON.stringify({ defaultProvider: "mock", defaultModel: "mock-1", ...settings }),
  );
}

// pi in RPC mode. `send(command)` writes one RPC command; `waitFor(match)`
// resolves with the first later event `match` accepts; `onEvent` sees every
// event. `nodeArgs` go before pi's script (e.g. `--import` a preload).
export function startPi({ piBin, agentDir, sessionDir, cwd, nodeArgs = [], env = {}, onEvent = () => {} }) {
  const child = spawn(
    process.execPath,
    [...nodeArgs, piBin, "--mode", "rpc", "--provider", "mock", "--model", "mock-1", "--session-dir", sessionDir],
    { cwd, env: { ...process.env, PI_CODING_AGENT_DIR: agentDir, PI_SKIP_VERSION_CHECK: "1", ...env }, stdio: ["pipe", "pipe", "inherit"] },
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
      onEvent(event);
      for (const w of [...waiters]) {
        if (w.match(event)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(event);
        }
      }
    }
  });
  const waitFor = (match, ms = 60000) =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("timed out waiting for pi")), ms);
      waiters.push({ match, resolve: (e) => (clearTimeout(timer), resolve(e)) });
    });
  const send = (command) => child.stdin.write(JSON.stringify(command) + "\n");
  const exit = () => {
    child.stdin.end();
    return new Promise((resolve) => child.on("exit", resolve));
  };
  return { child, send, waitFor, exit };
}
