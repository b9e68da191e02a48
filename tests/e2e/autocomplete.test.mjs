// The bridge's `@@` editor completion (bridge/autocomplete.ts),
// loaded through jiti exactly as pi loads extension code.
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { join } from "node:path";
import { test } from "node:test";
import { nodeDir, REPO } from "./setup.mjs";

const require = createRequire(join(nodeDir(), "node_modules/@mariozechner/pi-coding-agent/package.json"));
const { createJiti } = require("jiti");
const jiti = createJiti(import.meta.url);
const { referenceProvider, referenceToken } = await jiti.import(join(REPO, "bridge/autocomplete.ts"));

const pis = {
	calls: 0,
	async getSuggestions() {
		this.calls++;
		return { items: [{ value: "pi", label: "pi" }], prefix: "" };
	},
	applyCompletion: (lines, cursorLine, cursorCol) => ({ lines, cursorLine, cursorCol }),
};
const signal = new AbortController().signal;

test("the @@ token is found only at a word start", () => {
	assert.equal(referenceToken("see @@auth"), "auth");
	assert.equal(referenceToken("@@"), "");
	assert.equal(referenceToken('(@@"Auth re'), '"Auth re');
	assert.equal(referenceToken("mail a@@b"), undefined);
	assert.equal(referenceToken("see @@auth done"), undefined);
});

test("candidates become @@ items shown by their titles; names with spaces are quoted", async () => {
	const asked = [];
	const provider = referenceProvider(pis, async (prefix) => {
		asked.push(prefix);
		return { candidates: [
			{ id: "01a2aaaa-0000", title: "Auth refactor", activeDay: "2026-11-20", reference: "auth-refactor" },
			{ id: "01a2bbbb-0000", title: "Fix the cron job", activeDay: "2026-11-21", reference: "Two words" },
			{ id: "01a2cccc-0000", reference: "01a2cccc" },
		] };
	});
	const result = await provider.getSuggestions(["fix @@au"], 0, 8, { signal });
	assert.deepEqual(asked, ["au"]);
	assert.equal(result.prefix, "@@au");
	assert.deepEqual(result.items.map((i) => i.value), ["@@auth-refactor", '@@"Two words"', "@@01a2cccc"]);
	assert.equal(result.items[0].description, "Auth refactor · 2026-11-20");
	assert.equal(result.items[1].description, "Fix the cron job · 2026-11-21");
	assert.equal(result.items[2].description, "01a2cccc");
});

test("no @@, no candidates or a failing plugin: pi's own completion answers", async () => {
	const before = pis.calls;
	const failing = referenceProvider(pis, async () => { throw new Error("pi-ext-host is down"); });
	const empty = referenceProvider(pis, async () => ({ candidates: [] }));
	const never = referenceProvider(pis, async () => assert.fail("not asked without @@"));
	for (const [provider, line] of [[failing, "@@x"], [empty, "@@x"], [never, "plain /path"]]) {
		const result = await provider.getSuggestions([line], 0, line.length, { signal });
		assert.equal(result.items[0].value, "pi");
	}
	assert.equal(pis.calls - before, 3);
});
