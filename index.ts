/**
 * The pi extension of this package (`pi.extensions` in package.json): the bridge in `bridge/`, which runs
 * the session-index plugin through `pi-ext-host serve`.
 *
 * This entry sits at the package root because pi names a package's extension after where its entry file
 * is: a root `index.ts` shows as the package's own name ("session-index") in pi's [Extensions] list,
 * while `bridge/index.ts` would show as "session-index:bridge" (npm, git) or "bridge" (a local path).
 */
export { default } from "./bridge/index.js";
