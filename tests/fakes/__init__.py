"""Fakes for tests. ``tests.fakes.fault_server``: a local LLM server speaking the OpenAI and
Anthropic wire formats, with scripted faults. Import from that module directly (this package
imports nothing, so ``python -m tests.fakes.fault_server`` runs without a double import)."""
