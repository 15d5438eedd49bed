"""Fitting a conversation into a token budget, rendering it as prompt text, and the prompt
that folds overflow into the running summary. Pure functions: nothing here talks to the database.

Budgets count what the prompt will contain: a message costs the estimated tokens of its
rendered line (``User: ...``) plus one for the line break, the summary its section plus one for
the blank line after it. Token estimates are subadditive, so a window whose costs add up to at
most the budget renders to text whose estimate is at most the budget too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from agent_memory._data_blocks import block, transcript
from agent_memory._tokens import estimate_tokens
from agent_memory.memory.conversation.records import ConversationMessage, Session
from agent_memory.providers.chat.base import ChatRequest, Message, SystemPart

__all__ = [
    "SUMMARY_HEADING",
    "TRUNCATION_MARKER",
    "ConversationContext",
    "fit_summary",
    "fit_window",
    "line_cost",
    "merge_extractive",
    "overflow",
    "render_context",
    "render_line",
    "render_messages",
    "summary_cost",
    "summary_request",
    "truncate_to_tokens",
]

SUMMARY_HEADING = "Summary of earlier conversation: "
TRUNCATION_MARKER = " …[truncated]"


def render_line(message: ConversationMessage) -> str:
    if message.role == "user":
        return f"User: {message.content}"
    if message.role == "assistant":
        return f"Assistant: {message.content}"
    name = message.tool.name if message.tool else "?"
    return f"Tool {name}: {message.content}"


def _role_label(message: ConversationMessage) -> str:
    if message.role in ("user", "assistant"):
        return message.role
    return f"tool {message.tool.name if message.tool else '?'}"


def render_messages(messages: Sequence[ConversationMessage]) -> str:
    return "\n".join(render_line(message) for message in messages)


def line_cost(message: ConversationMessage) -> int:
    """Tokens a message takes in rendered text, counting its line break. Estimates are
    subadditive, so the sum of costs bounds the estimate of the joined text."""
    return estimate_tokens(render_line(message)) + 1


@dataclass(frozen=True, slots=True)
class ConversationContext:
    """The short-term memory of one session, ready for a prompt.

    ``omitted`` counts messages that are neither covered by the summary nor in ``messages``
    (counted up to a cap); ``needs_summary`` says a :meth:`ConversationMemory.refresh_summary`
    is due. ``tokens`` is the estimate of :meth:`render`.
    """

    session: Session
    summary: str
    messages: tuple[ConversationMessage, ...]
    tokens: int
    omitted: int = 0
    needs_summary: bool = False

    def render(self) -> str:
        return render_context(self.summary, self.messages)


def render_context(summary: str, messages: Sequence[ConversationMessage]) -> str:
    """Prompt text: the summary section, a blank line, then one line per message."""
    parts = []
    if summary:
        parts.append(SUMMARY_HEADING + summary)
    if messages:
        parts.append(render_messages(messages))
    return "\n\n".join(parts)


def truncate_to_tokens(text: str, max_tokens: int, *, prefix: str = "") -> str | None:
    """The longest head of ``text`` that, with ``prefix`` and the truncation marker, costs at
    most ``max_tokens``; ``None`` when not even one character fits."""

    def cost(length: int) -> int:
        return estimate_tokens(prefix + text[:length] + TRUNCATION_MARKER)

    if cost(1) > max_tokens:
        return None
    low, high = 1, len(text)
    while low < high:  # cost grows with length: the largest length that still fits
        middle = (low + high + 1) // 2
        if cost(middle) <= max_tokens:
            low = middle
        else:
            high = middle - 1
    return text[:low] + TRUNCATION_MARKER


def summary_cost(summary: str) -> int:
    """Tokens the summary section takes, counting the blank line after it."""
    return estimate_tokens(SUMMARY_HEADING + summary) + 1 if summary else 0


def fit_summary(summary: str, max_tokens: int) -> str:
    """The summary, cut so that its section costs at most ``max_tokens`` ('' if none fits)."""
    if summary_cost(summary) <= max_tokens:
        return summary
    return truncate_to_tokens(summary, max_tokens - 1, prefix=SUMMARY_HEADING) or ""


def fit_window(
    newest_first: Sequence[ConversationMessage], max_tokens: int
) -> list[ConversationMessage]:
    """The newest messages whose rendered lines fit ``max_tokens``, in chronological order.

    The window is contiguous: the first message that does not fit ends it, so the model never
    sees a later message without the ones between. When even the newest message is larger than
    the budget, the window is a truncated view of it (its head with a marker), so a session
    with a huge last message still shows where the conversation stands.
    """
    chosen: list[ConversationMessage] = []
    used = 0
    for message in newest_first:
        cost = line_cost(message)
        if used + cost <= max_tokens:
            chosen.append(message)
            used += cost
            continue
        if not chosen:
            head = render_line(replace(message, content=""))
            cut = truncate_to_tokens(message.content, max_tokens - 1, prefix=head)
            if cut is not None:
                chosen.append(replace(message, content=cut, truncated=True))
        break
    chosen.reverse()
    return chosen


_SUMMARY_INSTRUCTION = (
    "You keep the running summary of a conversation between a user and an AI assistant. "
    "Fold the new messages into the existing summary and reply with the updated summary only. "
    "Be faithful and compact: keep names, facts about the user, preferences, decisions, "
    "commitments and open questions; drop greetings and filler; never add anything the "
    "messages do not say. Write in the conversation's language, in at most {words} words."
)


def summary_request(
    previous: str,
    messages: Sequence[ConversationMessage],
    *,
    max_tokens: int,
    instruct: bool = True,
) -> ChatRequest:
    """The chat request that folds ``messages`` into ``previous``. ``instruct=False`` leaves
    the instruction out, for extractive models that would quote it as context."""
    # Stored text goes in data blocks through the one neutraliser; each message is an entry
    # of its stored role, so no message can pose as another (see _data_blocks.transcript).
    entries = [(_role_label(m), m.content) for m in messages]
    body = (
        f"Existing summary:\n{block('summary', previous or '(none yet)')}\n\n"
        "New messages, oldest first (each starts with its role in brackets; its further lines "
        f"are indented):\n{block('transcript', transcript(entries))}\n\n"
        # The last line doubles as the question an extractive (offline) model answers.
        "What did the user say about names, places, what they prefer or like, plans, "
        "decisions and open questions?"
    )
    return ChatRequest(
        messages=(Message.user(body),),
        system=(SystemPart(_SUMMARY_INSTRUCTION.format(words=max(20, max_tokens * 3 // 4))),)
        if instruct
        else (),
        max_tokens=max_tokens,
    )


def merge_extractive(previous: str, reply: str, *, max_tokens: int) -> str:
    """An extractive (offline) model's reply quotes only the new messages: add its lines to
    the previous summary's (each line once), dropping the oldest beyond ``max_tokens``."""
    lines: list[str] = []
    for text in (previous, reply):
        lines += [line for line in text.splitlines() if line.strip() and line not in lines]
    kept: list[str] = []
    used = 0
    for line in reversed(lines):
        used += estimate_tokens(line) + 1
        if used > max_tokens:
            break
        kept.append(line)
    return "\n".join(reversed(kept))


def overflow(
    newest_first: Sequence[ConversationMessage],
    after_summary: Sequence[ConversationMessage],
    *,
    window_tokens: int,
) -> list[ConversationMessage]:
    """Messages newer than the summary but older than the window ``newest_first`` gives
    (fitted to ``window_tokens``): what fell out of the window and is not summarised yet."""
    window = fit_window(newest_first, window_tokens)
    if not window:
        return []
    start = window[0].seq
    return [message for message in after_summary if message.seq < start]
