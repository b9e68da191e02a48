// Regenerates the parity goldens from the real pi (tools/pi-ref, pinned 0.73.1).
//
//   node tests/parity/gen-golden.mjs            (from the repo root)
//
// For every fixture of ../shared/fixtures/pi-sessions/{real,generated}/ (or
// /work/shared/...) and of tests/fixtures/sessions/ (not divergent/: pi hangs
// or differs there by design, see tests/session_malformed.rs), it writes
// tests/parity/golden/<set>/<file>.json with what pi computes through
// SessionManager.open / getBranch / getSessionName / buildSessionContext /
// convertToLlm / serializeConversation, for the default leaf and every other
// leaf, plus what SessionManager.list reports. pi may rewrite a file it opens
// (migrations, headerless files), so it only ever sees temporary copies.
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const dist = join(repo, "tools/pi-ref/node_modules/@mariozechner/pi-coding-agent/dist");
const pkg = JSON.parse(readFileSync(join(dist, "../package.json"), "utf8"));
const { SessionManager, loadEntriesFromFile } = await import(join(dist, "core/session-manager.js"));
const { convertToLlm } = await import(join(dist, "core/messages.js"));
const { serializeConversation } = await import(join(dist, "core/compaction/utils.js"));

const shared = [join(repo, "../shared"), "/work/shared"].find((d) => existsSync(join(d, "fixtures/pi-sessions")));
const sets = [["own", join(repo, "tests/fixtures/sessions")]];
if (shared) {
  sets.push(["real", join(shared, "fixtures/pi-sessions/real")]);
  sets.push(["generated", join(shared, "fixtures/pi-sessions/generated")]);
} else {
  console.warn("shared fixtures not found; only own fixtures regenerated");
}

// Lone surrogates (a 2000-unit cut inside an emoji) become U+FFFD once written as UTF-8.
const wellFormed = (s) => (typeof s.toWellFormed === "function" ? s.toWellFormed() : s);
const MAX_LEAVES = 20;

function view(sm, randomIds = false) {
  const branch = sm.getBranch();
  const ctx = sm.buildSessionContext();
  // Random ids (v1 migration) are replaced by positions so goldens are stable.
  return {
    leafId: randomIds ? null : sm.getLeafId(),
    branchIds: branch.map((e, i) => (randomIds ? `#${i}` : e.id)),
    contextRoles: ctx.messages.map((m) => m.role),
    serialized: wellFormed(serializeConversation(convertToLlm(ctx.messages))),
  };
}

async function golden(file) {
  const tmp = mkdtempSync(join(tmpdir(), "pi-golden-"));
  try {
    const copy = join(tmp, basename(file));
    copyFileSync(file, copy);
    const raw = loadEntriesFromFile(copy);
    if (raw.length === 0) {
      // pi would start a fresh session over it: not a pi session.
      return { pi: pkg.version, notASession: true };
    }
    const listed = (await SessionManager.list("/nonexistent", tmp)).find((s) => s.path === copy);
    const sm = SessionManager.open(copy, tmp);
    const header = sm.getHeader();
    const entries = sm.getEntries();
    const v1 = (raw[0].version ?? 1) < 2;
    const out = {
      pi: pkg.version,
      sessionId: sm.getSessionId(),
      headerVersion: header?.version ?? null,
      entryCount: entries.length,
      // v1 files get random ids from pi: compare shapes, not ids.
      randomIds: v1,
      sessionName: sm.getSessionName() ?? null,
      default: view(sm, v1),
      leaves: [],
      list: listed
        ? {
            id: listed.id ?? null,
            name: listed.name ?? null,
            firstMessage: listed.firstMessage,
            messageCount: listed.messageCount,
            cwd: listed.cwd,
            parentSession: listed.parentSessionPath ?? null,
            modifiedMs: listed.modified.getTime(),
          }
        : null,
    };
    if (!v1) {
      const parents = new Set(entries.map((e) => e.parentId));
      const leaves = entries.filter((e) => !parents.has(e.id)).map((e) => e.id);
      for (const leaf of leaves.slice(0, MAX_LEAVES)) {
        sm.branch(leaf);
        out.leaves.push(view(sm));
      }
    }
    return out;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

// `--print FILE...`: print the goldens of arbitrary (held-out) sessions as
// JSON lines instead of writing the fixtures' goldens.
if (process.argv[2] === "--print") {
  for (const file of process.argv.slice(3)) {
    try {
      console.log(JSON.stringify({ file: resolve(file), ...(await golden(resolve(file))) }));
    } catch (e) {
      // pi itself throws on some damaged input (e.g. a message entry without a message).
      console.log(JSON.stringify({ file: resolve(file), piError: String(e) }));
    }
  }
  process.exit(0);
}

let written = 0;
for (const [set, dir] of sets) {
  if (!existsSync(dir)) continue;
  const outDir = join(repo, "tests/parity/golden", set);
  mkdirSync(outDir, { recursive: true });
  for (const name of readdirSync(dir).filter((f) => f.endsWith(".jsonl")).sort()) {
    const g = await golden(join(dir, name));
    writeFileSync(join(outDir, `${name}.json`), `${JSON.stringify(g, null, 2)}\n`);
    written++;
  }
}
console.log(`wrote ${written} goldens (pi ${pkg.version})`);
