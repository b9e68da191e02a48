//! Redaction of secret-looking strings before any text goes to a model.
