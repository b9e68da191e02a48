//! The library's exported root module and the FFI adapter around
//! [`SessionIndexPlugin`].
//!
//! Every function reachable from the host goes through
//! [`pi_ext_abi::catch_panic`]: a panic unwinding into abi_stable's guard
//! would exit the host process.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use abi_stable::export_root_module;
use abi_stable::prefix_type::PrefixTypeTrait;
use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RResult, RStr, RString};
use pi_ext_abi::{catch_panic, HostBox, Plugin, PluginBox, PluginMod, PluginModRef, Plugin_TO};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::plugin::host::FfiHost;
use crate::plugin::router::SessionIndexPlugin;
use crate::plugin::state::Services;

#[export_root_module]
pub fn get_library() -> PluginModRef {
    PluginMod {
        plugin_id,
        instantiate,
    }
    .leak_into_prefix()
}

extern "C" fn plugin_id() -> RString {
    RString::from(concat!(
        env!("CARGO_PKG_NAME"),
        "@",
        env!("CARGO_PKG_VERSION")
    ))
}

extern "C" fn instantiate(
    host: HostBox,
    plugin_dir: RStr<'_>,
    config_json: RStr<'_>,
) -> RResult<PluginBox, RString> {
    catch_panic("instantiate", || {
        let host: crate::plugin::host::Host = Arc::new(FfiHost { inner: host });
        crate::plugin::logging::forward_to(host.clone());
        let services = Services::new(
            host,
            PathBuf::from(plugin_dir.as_str()),
            config_json.as_str(),
        );
        let plugin = FfiPlugin {
            inner: SessionIndexPlugin::new(services),
        };
        Ok(Plugin_TO::from_value(plugin, TD_Opaque))
    })
}

struct FfiPlugin {
    inner: SessionIndexPlugin,
}

fn parse<T: DeserializeOwned>(what: &str, json: RStr<'_>) -> Result<T, String> {
    serde_json::from_str(json.as_str()).map_err(|e| format!("invalid {what} document: {e}"))
}

fn render<T: Serialize>(value: &T) -> Result<RString, String> {
    serde_json::to_string(value)
        .map(RString::from)
        .map_err(|e| e.to_string())
}

fn report_or_error(what: &str, result: RResult<RString, RString>) -> RString {
    match result {
        RResult::ROk(text) => text,
        RResult::RErr(message) => RString::from(
            serde_json::json!({"pending": 0, "idle": false, "error": format!("{what}: {message}")})
                .to_string(),
        ),
    }
}

impl Plugin for FfiPlugin {
    fn registrations(&self) -> RString {
        let result = catch_panic("registrations", || render(&self.inner.registrations()));
        result.unwrap_or_else(|_| RString::from("{\"events\":[],\"commands\":[],\"tools\":[]}"))
    }

    fn on_event(&self, call_json: RStr<'_>) -> RResult<RString, RString> {
        catch_panic("event handler", || {
            render(&self.inner.on_event(parse("event", call_json)?)?)
        })
    }

    fn call_tool(&self, call_json: RStr<'_>) -> RResult<RString, RString> {
        catch_panic("tool", || {
            render(&self.inner.call_tool(parse("tool call", call_json)?)?)
        })
    }

    fn run_command(&self, call_json: RStr<'_>) -> RResult<RString, RString> {
        catch_panic("command", || {
            render(&self.inner.run_command(parse("command call", call_json)?)?)
        })
    }

    fn request(&self, method: RStr<'_>, payload_json: RStr<'_>) -> RResult<RString, RString> {
        catch_panic("request", || {
            render(
                &self
                    .inner
                    .request(method.as_str(), parse("request", payload_json)?)?,
            )
        })
    }

    fn flush(&self, timeout_ms: u64) -> RString {
        let result = catch_panic("flush", || {
            render(&self.inner.flush(Duration::from_millis(timeout_ms)))
        });
        report_or_error("flush", result)
    }

    fn shutdown(&self, timeout_ms: u64) -> RString {
        let result = catch_panic("shutdown", || {
            render(&self.inner.shutdown(Duration::from_millis(timeout_ms)))
        });
        report_or_error("shutdown", result)
    }
}
