"""Episodic memory: what the agent did, how it went, and what users said about it.

- ``memory.py``: :class:`EpisodicMemory`, the store's API.
- ``records.py``: the stored shapes (actions) and the checks on their values.
- ``feedback.py``: ratings, and the credit they pass to the memories a reply used.
- ``retention.py``: old actions folded into daily tallies, and success rates.
"""

from agent_memory.memory.episodic.feedback import Feedback
from agent_memory.memory.episodic.memory import EpisodicMemory
from agent_memory.memory.episodic.records import Action, EpisodicConfig, SimilarAction
from agent_memory.memory.episodic.retention import RetentionReport, SuccessRates

__all__ = [
    "Action",
    "EpisodicConfig",
    "EpisodicMemory",
    "Feedback",
    "RetentionReport",
    "SimilarAction",
    "SuccessRates",
]
