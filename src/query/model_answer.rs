//! The model answer: placeholder until the providers land.

use super::{Prepared, QueryAnswer, QueryError};
use crate::app::App;

/// `Ok(None)`: no model is available and the offline answer should be used.
pub fn answer(app: &App, _prepared: &Prepared, _question: &str) -> Result<Option<QueryAnswer>, QueryError> {
    if app.config.offline_fallback {
        Ok(None)
    } else {
        Err(QueryError::ModelUnavailable("no model is available and offlineFallback is off".into()))
    }
}
