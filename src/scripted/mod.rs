//! The scripted OpenAI-compatible model server: a real HTTP server on
//! loopback that answers from a scenario file. It serves `--demo` and is the
//! tests' model. It knows nothing of the agent's internals.
