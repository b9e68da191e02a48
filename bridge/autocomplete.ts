/**
 * `@@` completion in pi's editor: when the text before the cursor ends in
 * `@@prefix`, ask the plugin (`references.complete`) for matching sessions;
 * everything else goes to pi's own provider. Any failure or a slow answer
 * falls back to pi's provider, so the editor never waits on the plugin.
 */
import type { AutocompleteItem, AutocompleteProvider, AutocompleteSuggestions } from "@mariozechner/pi-tui";

/** pi-ext-abi catalog `Candidate` (the fields used here). */
export interface Candidate {
	id: string;
	/** How the session is shown: its name, else its first message's title. */
	title?: string;
	/** The day it was last active (YYYY-MM-DD). */
	activeDay?: string;
	reference: string;
}

export type CompleteRequest = (prefix: string) => Promise<{ candidates?: Candidate[] } | null>;

/** The `@@` token ending the text before the cursor (the part after `@@`), if any. */
export function referenceToken(textBeforeCursor: string): string | undefined {
	const match = /(?:^|[\s(])@@("[^"]*|[^\s@"]*)$/.exec(textBeforeCursor);
	return match?.[1];
}

export function toItem(candidate: Candidate): AutocompleteItem {
	const reference = /\s/.test(candidate.reference) ? `"${candidate.reference}"` : candidate.reference;
	const title = candidate.title || candidate.id.slice(0, 8);
	return { value: `@@${reference}`, label: `@@${reference}`, description: [title, candidate.activeDay].filter(Boolean).join(" · ") };
}

export function referenceProvider(current: AutocompleteProvider, complete: CompleteRequest): AutocompleteProvider {
	return {
		async getSuggestions(lines, cursorLine, cursorCol, options): Promise<AutocompleteSuggestions | null> {
			const token = referenceToken((lines[cursorLine] ?? "").slice(0, cursorCol));
			if (token !== undefined) {
				try {
					const answer = await complete(token.replace(/^"/, ""));
					const items = (answer?.candidates ?? []).map(toItem);
					if (!options.signal.aborted && items.length > 0) return { items, prefix: `@@${token}` };
				} catch {
					// The plugin is optional here: fall through to pi's completion.
				}
			}
			return current.getSuggestions(lines, cursorLine, cursorCol, options);
		},
		applyCompletion(lines, cursorLine, cursorCol, item, prefix) {
			return current.applyCompletion(lines, cursorLine, cursorCol, item, prefix);
		},
		shouldTriggerFileCompletion(lines, cursorLine, cursorCol) {
			return current.shouldTriggerFileCompletion?.(lines, cursorLine, cursorCol) ?? true;
		},
	};
}
