mod corruption;
mod deleted_text;
mod secrets;
