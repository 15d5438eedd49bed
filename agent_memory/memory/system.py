"""All four memories over one connection, and forgetting a user everywhere at once.

>>> memories = MemorySystem.from_settings(connection, embedder, chat_model=chat)  # doctest: +SKIP
>>> await memories.long_term.store(tenant, "Prefers short answers")      # doctest: +SKIP
>>> erased = await memories.forget_user(tenant)                          # doctest: +SKIP
>>> erased                                                               # doctest: +SKIP
{'memories': 12, 'profiles': 1, 'sessions': 3, 'messages': 40, ...}
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from agent_memory._log import get_logger
from agent_memory.config import Settings
from agent_memory.memory.conversation.memory import ConversationMemory
from agent_memory.memory.conversation.records import ConversationConfig
from agent_memory.memory.episodic.memory import EpisodicMemory
from agent_memory.memory.episodic.records import EpisodicConfig
from agent_memory.memory.knowledge.base import KnowledgeBase, KnowledgeConfig
from agent_memory.memory.long_term.decay import DecayConfig, DecayJob
from agent_memory.memory.long_term.memory import LongTermMemory
from agent_memory.memory.long_term.profile import DEFAULT_SCHEMAS, MemorySchema, ProfileMemory
from agent_memory.memory.long_term.records import LongTermConfig
from agent_memory.memory.working.memory import WorkingMemory
from agent_memory.memory.working.tasks import WorkingConfig
from agent_memory.mongo.connection import Connection
from agent_memory.providers.chat.base import ChatModel
from agent_memory.providers.embedders.base import Embedder
from agent_memory.providers.rerankers.base import Reranker
from agent_memory.tenancy import Tenant, check_tenant

__all__ = ["Forgetter", "MemorySystem"]

logger = get_logger(__name__)

#: Something else that holds a user's data (agent state, queues) and can erase it.
Forgetter = Callable[[Tenant], Awaitable[dict[str, int]]]


class MemorySystem:
    """The conversation, long-term (with profiles), working and episodic memories and the
    knowledge base.

    None of them opens a connection; they share ``connection`` and the providers. Other
    holders of user data (the agent's checkpointer, job queues) register a forgetter so
    :meth:`forget_user` erases everything of a user in one call.
    """

    def __init__(
        self,
        connection: Connection,
        embedder: Embedder,
        *,
        chat_model: ChatModel | None = None,
        long_term_config: LongTermConfig | None = None,
        schemas: tuple[MemorySchema, ...] = DEFAULT_SCHEMAS,
        decay_config: DecayConfig | None = None,
        conversation_config: ConversationConfig | None = None,
        working_config: WorkingConfig | None = None,
        episodic_config: EpisodicConfig | None = None,
        knowledge_config: KnowledgeConfig | None = None,
        reranker: Reranker | None = None,
    ) -> None:
        self.connection = connection
        self.conversation = ConversationMemory(
            connection, chat_model=chat_model, config=conversation_config
        )
        self.long_term = LongTermMemory(
            connection, embedder, config=long_term_config, judge=chat_model, reranker=reranker
        )
        self.profiles = ProfileMemory(connection, self.long_term, schemas=schemas)
        self.working = WorkingMemory(connection, config=working_config)
        self.episodic = EpisodicMemory(connection, embedder, config=episodic_config)
        self.knowledge = KnowledgeBase(connection, embedder, config=knowledge_config)
        self.decay = DecayJob(connection, config=decay_config)
        self._forgetters: list[Forgetter] = [
            self.long_term.forget_user,
            self.profiles.forget_user,
            self.conversation.forget_user,
            self.working.forget_user,
            self.episodic.forget_user,
            self.knowledge.forget_user,
        ]

    @classmethod
    def from_settings(
        cls,
        connection: Connection,
        embedder: Embedder,
        settings: Settings | None = None,
        *,
        chat_model: ChatModel | None = None,
        reranker: Reranker | None = None,
        long_term_config: LongTermConfig | None = None,
        schemas: tuple[MemorySchema, ...] = DEFAULT_SCHEMAS,
        decay_config: DecayConfig | None = None,
        conversation_config: ConversationConfig | None = None,
        working_config: WorkingConfig | None = None,
        episodic_config: EpisodicConfig | None = None,
        knowledge_config: KnowledgeConfig | None = None,
    ) -> MemorySystem:
        """The memories with the decay and retention the settings ask for
        (``AGENT_MEMORY_DECAY_*``, ``AGENT_MEMORY_SESSION_RETENTION_*``,
        ``AGENT_MEMORY_ACTION_RETENTION_DAYS``).

        ``settings`` defaults to those ``connection`` was opened with (by default read from
        the environment by :func:`~agent_memory.mongo.connection.connect`). A config passed
        here replaces, whole, the one the settings would make.
        """
        s = settings if settings is not None else connection.settings
        return cls(
            connection,
            embedder,
            chat_model=chat_model,
            reranker=reranker,
            long_term_config=long_term_config,
            schemas=schemas,
            decay_config=decay_config
            or DecayConfig(
                factor=s.decay_factor,
                inactive_days=s.decay_inactive_days,
                floor=s.decay_floor,
                period_days=s.decay_period_days,
            ),
            conversation_config=conversation_config
            or ConversationConfig(
                retention_days=s.session_retention_days, retention_mode=s.session_retention_mode
            ),
            working_config=working_config,
            episodic_config=episodic_config
            or EpisodicConfig(retention_days=s.action_retention_days),
            knowledge_config=knowledge_config,
        )

    def register_forgetter(self, forgetter: Forgetter) -> None:
        """Include another store of user data in :meth:`forget_user`."""
        self._forgetters.append(forgetter)

    async def forget_user(self, tenant: Tenant) -> dict[str, int]:
        """Erase everything of ``tenant`` in every memory; returns what was erased, per
        collection. Stores are erased one after another, so an error names the one that
        failed and a rerun finishes the job (erasing what is already gone is a no-op)."""
        tenant = check_tenant(tenant)
        erased: dict[str, int] = {}
        for forgetter in self._forgetters:
            for collection, count in (await forgetter(tenant)).items():
                erased[collection] = erased.get(collection, 0) + count
        logger.info("user_forgotten", agent_id=tenant.agent_id, erased=sum(erased.values()))
        return erased

    async def aclose(self) -> None:
        """Wait for writes the memories did not make their callers wait for."""
        for store in (self.long_term, self.conversation, self.episodic):
            close = getattr(store, "aclose", None)
            if close is not None:
                await close()
