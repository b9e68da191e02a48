// pi 0.73.1's /resume path, timed: SessionManager.listAll() (every session
// loaded and parsed) then the selector's filter (filterAndSortSessions,
// relevance mode) for each query. Agent dir from PI_CODING_AGENT_DIR.
// Usage: node pi_resume.mjs <pi-coding-agent dist dir> <queries.json>
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [dist, queriesFile] = process.argv.slice(2);
const { SessionManager } = await import(pathToFileURL(`${dist}/core/session-manager.js`).href);
const { filterAndSortSessions } = await import(
  pathToFileURL(`${dist}/modes/interactive/components/session-selector-search.js`).href
);
const queries = JSON.parse(readFileSync(queriesFile, "utf8"));
const t0 = performance.now();
const sessions = await SessionManager.listAll();
const listMs = performance.now() - t0;
const queryMs = [];
for (const q of queries) {
  const t = performance.now();
  filterAndSortSessions(sessions, q, "relevance", "all");
  queryMs.push(performance.now() - t);
}
console.log(JSON.stringify({ sessions: sessions.length, listMs, queryMs, peakRssKb: process.resourceUsage().maxRSS }));
