//! Model providers over loopback, and the spending ledger shared by processes.

mod ledger;
mod providers;
