#!/usr/bin/env node
// Baseline for the reader bench: pi 0.73.1 (tools/pi-ref) reading one session
// file the way pi does before a model call or a summary:
//   SessionManager.open(file) → getBranch() → buildSessionContext()
//   → convertToLlm(messages) → serializeConversation(...)
//
// Usage: node [--max-old-space-size=MB] bench/pi_reader.mjs FILE [--dump OUT]
// Prints one JSON line: ok, secs (open through serialize, module loading
// excluded), openSecs, cpuSecs (process.cpuUsage over the same work: all
// threads, GC included), peakRssKb (process.resourceUsage().maxRSS, KiB),
// baselineRssKb (peak before opening), branchLen, messages, serializedBytes.
// With --dump, the serialized text is written to OUT after timing.

import { writeFileSync } from "node:fs";
import { performance } from "node:perf_hooks";

const piEntry = new URL(
  "../tools/pi-ref/node_modules/@mariozechner/pi-coding-agent/dist/index.js",
  import.meta.url,
);
const { SessionManager, convertToLlm, serializeConversation } = await import(piEntry.href);

const args = process.argv.slice(2);
const file = args[0];
const dumpAt = args.indexOf("--dump");
const dump = dumpAt >= 0 ? args[dumpAt + 1] : undefined;
if (!file) {
  console.error("usage: pi_reader.mjs FILE [--dump OUT]");
  process.exit(2);
}

const baselineRssKb = process.resourceUsage().maxRSS;
let result;
try {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const sm = SessionManager.open(file);
  const t1 = performance.now();
  const branch = sm.getBranch();
  const ctx = sm.buildSessionContext();
  const text = serializeConversation(convertToLlm(ctx.messages));
  const t2 = performance.now();
  const cpu = process.cpuUsage(cpu0);
  result = {
    ok: true,
    secs: (t2 - t0) / 1000,
    openSecs: (t1 - t0) / 1000,
    cpuSecs: (cpu.user + cpu.system) / 1e6,
    peakRssKb: process.resourceUsage().maxRSS,
    baselineRssKb,
    branchLen: branch.length,
    messages: ctx.messages.length,
    serializedBytes: Buffer.byteLength(text, "utf8"),
  };
  if (dump) writeFileSync(dump, text);
} catch (e) {
  const code = e && e.code ? `${e.code}: ` : "";
  result = {
    ok: false,
    error: `${code}${String((e && e.message) || e).slice(0, 300)}`,
    peakRssKb: process.resourceUsage().maxRSS,
    baselineRssKb,
  };
}
process.stdout.write(`${JSON.stringify(result)}\n`);
