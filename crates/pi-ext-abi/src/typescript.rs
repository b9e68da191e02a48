//! `bridge/protocol.ts`: the [`crate::protocol`] documents as TypeScript types, for the pi bridge.
//!
//! Generated from the Rust types (ts-rs derives them in test builds only), so the bridge cannot
//! drift from what the plugin reads and writes. The test fails when the checked-in file differs;
//! `npm run protocol` (`UPDATE_PROTOCOL_TS=1 cargo test -p pi-ext-abi -p pi-ext-host --lib
//! typescript`) writes it again, with pi-ext-host's `bridge/serve-protocol.ts`.

use std::path::PathBuf;

use ts_rs::TS;

use crate::protocol::*;

/// `export type Name = …;` with the Rust doc comment as JSDoc.
fn declaration<T: TS>() -> String {
    let docs = T::docs().unwrap_or_default();
    format!("{docs}export {}\n", T::decl())
}

fn generated() -> String {
    let actions: Vec<String> = ACTIONS.iter().map(|a| format!("\"{a}\"")).collect();
    let events: Vec<String> = EVENTS.iter().map(|e| format!("\"{e}\"")).collect();
    let header = format!(
        "// Generated from crates/pi-ext-abi/src/protocol.rs by `npm run protocol`: do not edit.\n\
         \n\
         /** Version of the JSON documents (`v` of every call). */\n\
         export const PROTOCOL_VERSION = {PROTOCOL_VERSION};\n\
         \n\
         /** Every `Action` type, for hosts that perform them all. */\n\
         export const ACTIONS = [{}] as const;\n\
         \n\
         /** The events a plugin may subscribe to. */\n\
         export const EVENTS = [{}] as const;\n\
         \n\
         /** How a host's completion error starts when no model may be used. */\n\
         export const UNAVAILABLE = {UNAVAILABLE:?};\n\
         \n\
         /** How a host's completion error starts when every usable model may cost more than `maxCostUsd`. */\n\
         export const OVER_CAP = {OVER_CAP:?};\n",
        actions.join(", "),
        events.join(", "),
    );
    let types = [
        declaration::<serde_json::Value>(),
        declaration::<SessionContext>(),
        declaration::<EventCall>(),
        declaration::<InputResult>(),
        declaration::<CustomMessage>(),
        declaration::<BeforeAgentStartResult>(),
        declaration::<CommandSpec>(),
        declaration::<ToolSpec>(),
        declaration::<Registrations>(),
        declaration::<ToolCall>(),
        declaration::<ContentPart>(),
        declaration::<ToolResult>(),
        declaration::<CommandCall>(),
        declaration::<CommandResult>(),
        declaration::<Action>(),
        declaration::<SelectOption>(),
        declaration::<FlushReport>(),
        declaration::<ChatMessage>(),
        declaration::<CompletionRequest>(),
        declaration::<ModelFallback>(),
        declaration::<Usage>(),
        declaration::<CompletionResponse>(),
    ];
    format!("{header}\n{}", types.join("\n"))
}

fn checked_in() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../bridge/protocol.ts")
}

#[test]
fn typescript_protocol_types_match_the_rust_ones() {
    let path = checked_in();
    let fresh = generated();
    if std::env::var_os("UPDATE_PROTOCOL_TS").is_some() {
        std::fs::write(&path, &fresh).expect("write bridge/protocol.ts");
        return;
    }
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        current == fresh,
        "{} is not what crates/pi-ext-abi/src/protocol.rs generates: run `npm run protocol`",
        path.display()
    );
}
