"""The local API server: OpenAI-compatible endpoints and SpecChat's own event stream, over the
engine's one job queue (no Qt)."""
