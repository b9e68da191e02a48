/**
 * How pi's TUI shows the first message of a session started by `/continue`: one line,
 * `Continued from "<title>" (<id>, <day>)` (the plugin's `details.headline`); expanded
 * (ctrl+o), the context it carries too. The model reads the whole message either way.
 */
import type { MessageRenderer } from "@mariozechner/pi-coding-agent";
import { Text } from "@mariozechner/pi-tui";

/** The custom type of a continuation's first message (src/features/references/mod.rs). */
export const CONTINUATION_TYPE = "session-continuation";

export const continuationRenderer: MessageRenderer = (message, { expanded }, theme) => {
	const details = message.details as { headline?: unknown } | undefined;
	const headline = typeof details?.headline === "string" ? details.headline : "Continued from an earlier session";
	let text = `${theme.fg("accent", "↳")} ${headline}`;
	if (expanded) {
		const content = typeof message.content === "string" ? message.content : message.content.map((c) => ("text" in c ? c.text : "")).join("\n");
		text += `\n\n${theme.fg("dim", content)}`;
	}
	return new Text(text, 1, 0);
};
