//! The session reader: parity with pi, malformed files, views.

mod malformed;
mod parity;
mod views;
