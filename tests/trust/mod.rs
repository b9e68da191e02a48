mod secrets;
