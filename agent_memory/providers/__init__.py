"""The model providers: chat models, embedders and rerankers, each with a fake, an offline
and a live kind, made by name in :mod:`agent_memory.providers.registry`."""
