//! Model providers (OpenAI-compatible, Anthropic, Gemini, host-served) and the
//! offline extractive model, behind one interface returning validated JSON.
pub mod extractive;
