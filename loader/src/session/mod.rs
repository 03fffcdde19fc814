//! The session store: pi's JSONL session format, version 3.
