mod corruption;
mod deleted_text;
mod freshness;
mod secrets;
