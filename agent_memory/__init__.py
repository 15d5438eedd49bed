"""agent_memory: memory for AI agents, stored in MongoDB."""

__version__ = "0.1.0"
