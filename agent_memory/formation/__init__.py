"""Durable, debounced memory formation (seed 001): after a burst of messages goes quiet, a
background worker extracts the user's profile, notes and facts from the session and stores
them, consolidated.

>>> queue = FormationQueue(connection, debounce_seconds=30)           # doctest: +SKIP
>>> await queue.setup()                                               # doctest: +SKIP
>>> await queue.schedule(tenant, session_id)      # after each turn   # doctest: +SKIP
>>> worker = FormationWorker(memories, chat_model, queue=queue)       # doctest: +SKIP
>>> worker.start()                                                    # doctest: +SKIP
>>> await worker.aclose()                                             # doctest: +SKIP

Modules: :mod:`.queue` (the jobs, their state machine and idempotency), :mod:`.extraction`
(the structured output and the model call), :mod:`.rules` (the offline extractor),
:mod:`.worker` (applying extractions).
"""

from __future__ import annotations

from agent_memory.formation.extraction import Extraction, Fact, Note, extract, extraction_model
from agent_memory.formation.queue import FormationQueue, Job
from agent_memory.formation.rules import extract_rules
from agent_memory.formation.worker import FormationWorker

__all__ = [
    "Extraction",
    "Fact",
    "FormationQueue",
    "FormationWorker",
    "Job",
    "Note",
    "extract",
    "extract_rules",
    "extraction_model",
]
