//! `@@` resolution over the store's rows, and its precision in prompts.

mod catalog;
mod precision;
