// Prints, as JSON, the names pi's interactive [Extensions] list shows for the installed packages'
// extensions: pi resolves them (DefaultPackageManager, as at start-up) and names them with its own
// InteractiveMode code (getCompactExtensionLabels). Nothing is loaded or started.
//
//   node tests/e2e/extension-labels.mjs <pi-coding-agent package dir>
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const pi = await import(pathToFileURL(join(process.argv[2], "dist/index.js")).href);
const cwd = process.cwd();
const agentDir = pi.getAgentDir();
const packages = new pi.DefaultPackageManager({ cwd, agentDir, settingsManager: pi.SettingsManager.create(cwd, agentDir) });
const { extensions } = await packages.resolve();
const loaded = extensions
	.filter((e) => e.enabled)
	.map((e) => ({ path: e.path, sourceInfo: { path: e.path, ...e.metadata } }));
const mode = Object.create(pi.InteractiveMode.prototype);
console.log(JSON.stringify(mode.getCompactExtensionLabels(loaded)));
