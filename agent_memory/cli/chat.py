"""``agent-memory chat``: talk to the agent with memory, in a terminal or through a pipe.

The same :class:`~agent_memory.agent.rag_agent.RAGAgent` as the demo, with the chat model the
settings name (the offline model unless ``AGENT_MEMORY_CHAT_MODEL=anthropic``). Lines are read
from standard input, so a script drives it as well as a person does::

    printf 'My name is Ann\\n/new\\nWhat is my name?\\n' | agent-memory chat --user ann

Memories are formed from a session when it ends (``/new``, ``/quit``, Ctrl+C at the prompt,
end of input), by the formation worker run in the foreground, so the next session, or the next
``agent-memory chat`` for the same user, remembers. A line that is not a command is one turn; a
command that is wrong (unknown, a bad rating, nothing to rate yet) or an empty line gets one
line saying what to do, and the conversation goes on; so does a command that fails (the
database, or an unexpected error, named by its kind only: ``--debug`` shows its traceback).

Ctrl+C while the agent answers cancels that turn: nothing of it is stored (no message, no
action record; the memories it recalled count as used, as any search does). Once the agent has
started saving the turn, Ctrl+C lets the save finish and says what was saved. A second Ctrl+C
while that save still runs (a database that stopped answering holds it until the driver gives
up) ends the chat at once, as a kill would, and says the save may be incomplete: the turn's
messages are one write (both or neither stored) and its action record is written only after
them (``docs/reliability.md``), so what is stored is never half a message pair, but the action
record or the session's formation job may be missing. Ctrl+C at the prompt leaves as ``/quit``
does.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import sys
import threading
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NoReturn

import typer
from rich.markup import escape

from agent_memory.agent.config import AgentConfig
from agent_memory.cli._app import (
    EXIT,
    checked_id,
    console,
    err_console,
    on_sigint,
    plural,
    run,
    sigint_ends,
    unexpected,
)
from agent_memory.cli._runtime import Runtime, open_runtime
from agent_memory.cli.indexes import what_to_run
from agent_memory.errors import AgentMemoryError, NotFoundError, NotInitialisedError
from agent_memory.formation.rules import extract_rules
from agent_memory.formation.worker import FormationWorker
from agent_memory.memory.conversation import queries
from agent_memory.mongo import _driver
from agent_memory.mongo.indexes import IndexManager
from agent_memory.providers.chat.base import ChatModel
from agent_memory.providers.registry import make_chat_model
from agent_memory.tenancy import Tenant

if TYPE_CHECKING:
    from agent_memory.agent.rag_agent import RAGAgent, TurnResult

__all__ = ["chat", "register"]

PROMPT = "you> "
HELP = """commands:
  /new            start a new session (memories are formed from this one first)
  /feedback N     rate the last answer from 1 (useless) to 5 (right); the memories in its
                  prompt are credited, so ratings change what is recalled next
  /memories       what the agent remembers about you (profile and long-term memories)
  /help           this help
  /quit           leave (Ctrl-D or Ctrl+C at the prompt too)
anything else is a message to the agent; Ctrl+C while it answers cancels that turn."""
#: Formation jobs a session end works through at most (others' due jobs may come first).
MAX_FORMATION_JOBS = 20
_WHOLE_NUMBER = re.compile(r"[+-]?[0-9]{1,9}")
#: Undecodable input bytes arrive as lone surrogates, which no database can store.
_SURROGATE = re.compile("[\ud800-\udfff]")
MEMORIES_SHOWN = 30
#: What /memories says when the offline rules found nothing in what the user said.
OFFLINE_RULES = (
    "the offline rules caught nothing to remember in what you said: they catch only certain "
    "patterns (name, home, work, diet, allergies, health, languages, birthday, pets, family "
    "names); a chat model (AGENT_MEMORY_CHAT_MODEL=anthropic) extracts much more"
)
#: Messages of the session the offline rules read for /memories at most.
RULES_READ = 1000


def _new_session_id() -> str:
    return f"chat-{datetime.now(UTC):%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"


async def read_line(prompt: str) -> str | None:
    """The next line of standard input without its newline, ``None`` at end of input (or
    when standard input cannot be read, said on stderr).

    Read in a daemon thread, so the event loop keeps running the agent's background writes
    meanwhile, and an interrupted chat does not wait at exit for a line nobody types.
    """
    loop = asyncio.get_running_loop()
    done: asyncio.Future[str | None] = loop.create_future()
    problems: list[str] = []

    def deliver(value: str | None) -> None:
        if not done.done():
            done.set_result(value)

    def read() -> None:
        value: str | None = None
        try:
            value = input(prompt)
        except EOFError:
            pass
        except Exception as exc:  # undecodable bytes, a closed stream: end the chat
            problems.append(f"{type(exc).__name__}: {exc}"[:200])
        with contextlib.suppress(RuntimeError):  # the loop closed (Ctrl-C) meanwhile
            loop.call_soon_threadsafe(deliver, value)

    with sigint_ends(done):
        threading.Thread(target=read, name="agent-memory-chat-input", daemon=True).start()
        line = await done
    if problems:
        err_console.print(
            f"[bold red]error:[/] cannot read standard input ({escape(problems[0])}); "
            "ending the chat",
            highlight=False,
        )
    return line


def leave_now(session_id: str) -> NoReturn:
    """End the chat at once, in the middle of a turn's save (a second Ctrl+C): say what may be
    stored, then exit as a kill would, without waiting for the database (closing the
    connection would wait for it too). What the commit guarantees for a cut anywhere is in
    ``docs/reliability.md``; an embedded server this process serves is taken over by any
    process sharing it, as after a kill."""
    console.print()
    console.print(
        "(Ctrl+C again: leaving now, while this turn was still being saved, so its save may be "
        "incomplete. Your message and the answer are stored both or neither, and its action "
        "record only after them; a write already sent may still land. If they were stored, "
        "`agent-memory worker` forms this session's memories when its formation job was "
        "queued too, and continuing the session does otherwise: "
        f"`agent-memory chat --session {session_id}`)",
        highlight=False,
        markup=False,
    )
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(EXIT["interrupted"])


def interruptible(base: type[RAGAgent]) -> type[RAGAgent]:
    """``base`` with a point of no return for the chat's Ctrl+C: a turn cancelled before its
    commit writes nothing; once the commit has started the turn is not cancelled, so it is
    saved whole. Everything runs on one event loop, so ``cancelled`` is set (by the Ctrl+C
    handler) and ``saving`` is read without a race."""

    class ChatAgent(base):  # type: ignore[valid-type, misc]
        saving = False
        cancelled = False

        async def _commit(self, state: Any) -> Any:
            if self.cancelled:  # Ctrl+C came first: the turn ends before any write
                raise asyncio.CancelledError
            self.saving = True
            return await super()._commit(state)

    return ChatAgent


class ChatSession:
    """One user's conversation with the agent, and the slash commands around it."""

    def __init__(self, agent: RAGAgent, user_id: str, session_id: str) -> None:
        self.agent = agent
        self.user_id = user_id
        self.session_id = session_id
        self.tenant = Tenant(agent.config.agent_id, user_id)
        self.last: TurnResult | None = None
        self.turns = 0  # turns in this session, so an empty one forms nothing
        self.said = 0  # turns in this chat
        self.caught = 0  # facts the offline rules caught in this chat's formed sessions

    async def ask(self, text: str) -> None:
        """One turn; Ctrl+C while it runs cancels it (see the module's notes)."""
        agent: Any = self.agent
        agent.saving = agent.cancelled = False
        late = False
        turn = asyncio.create_task(self._turn(text))

        def interrupt() -> None:
            nonlocal late
            if agent.saving and late:  # a second Ctrl+C while the save still runs
                leave_now(self.session_id)
            if agent.saving:  # being saved: it finishes, whole, and says so
                late = True
                console.print()
                console.print(
                    "(Ctrl+C: this turn is being saved, so it is not cancelled; "
                    "Ctrl+C again leaves at once)",
                    highlight=False,
                    markup=False,
                )
            elif not turn.done():
                agent.cancelled = True
                turn.cancel()

        with on_sigint(interrupt):
            try:
                result = await turn
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if not turn.cancelled() or (current is not None and current.cancelling()):
                    raise  # the chat itself is being cancelled, not the turn
                console.print()
                console.print(
                    "[yellow]cancelled (Ctrl+C): this turn was not saved[/] (no message, no "
                    "action record); the chat goes on",
                    highlight=False,
                )
                return
        if result is None:
            return
        self.last = result
        self.turns += 1
        self.said += 1
        console.print(
            f"  [dim]route {result.route.level}; "
            f"{plural(len(result.memory_ids), 'memory', 'memories')} and "
            f"{plural(result.manifest.tokens.get('total', 0), 'token')} in the prompt; "
            f"/feedback 1-5 rates this answer[/]",
            highlight=False,
        )
        if late:
            saved = (
                f"your message, the answer and its action record ({result.action_id})"
                if result.action_id
                else "your message and the answer, but not its action record"
            )
            console.print(
                f"(Ctrl+C came while this turn was being saved, so it was not cancelled: "
                f"saved whole, {saved})",
                highlight=False,
                markup=False,
            )

    async def _turn(self, text: str) -> TurnResult | None:
        """Stream the answer; the turn's result, or ``None`` when it failed (said)."""
        from agent_memory.agent.rag_agent import AnswerDelta

        console.print("[bold]agent:[/] ", end="")
        result: TurnResult | None = None
        try:
            stream = self.agent.stream(self.user_id, self.session_id, text)
            async with contextlib.aclosing(stream) as events:
                async for event in events:
                    if isinstance(event, AnswerDelta):
                        console.print(escape(event.text), end="", highlight=False, soft_wrap=True)
                    else:
                        result = event
        except AgentMemoryError as exc:  # bad input, a provider or the database failing
            console.print()
            console.print(f"[red]not answered:[/] {escape(str(exc))}", highlight=False)
            return None
        except Exception as exc:  # a defect: said in one line, and the chat goes on
            console.print()
            console.print(f"[red]not answered:[/] {escape(unexpected(exc))}", highlight=False)
            return None
        console.print()
        assert result is not None
        return result

    async def command(self, line: str) -> bool:
        """Run a slash command; ``False`` when the chat should end."""
        name, _, argument = line.partition(" ")
        name, argument = name.lower(), argument.strip()
        if name in ("/quit", "/exit"):
            return False
        if name == "/help":
            console.print(HELP, highlight=False)
        elif name == "/new":
            await self.new_session()
        elif name == "/feedback":
            await self.rate(argument)
        elif name == "/memories":
            await self.show_memories()
        else:
            console.print(
                f"unknown command {escape(repr(name[:40]))}; type /help for the commands",
                highlight=False,
            )
        return True

    async def new_session(self) -> None:
        await self.form_memories()
        self.session_id = _new_session_id()
        await self.agent.start_new_session(self.user_id, self.session_id)
        console.print(
            f"new session {self.session_id}: short-term memory is empty, long-term memory kept",
            highlight=False,
            markup=False,
        )

    async def rate(self, argument: str) -> None:
        if not _WHOLE_NUMBER.fullmatch(argument):
            console.print(
                "usage: /feedback N, where N is a whole number from 1 (useless) to 5 (right)"
                + (f"; got {escape(repr(argument[:40]))}" if argument else ""),
                highlight=False,
            )
            return
        rating = int(argument)
        if not 1 <= rating <= 5:
            console.print(f"a rating is from 1 to 5; got {rating}", highlight=False)
            return
        if self.last is None:
            console.print("nothing to rate yet: ask something first", highlight=False)
            return
        if not self.last.action_id:
            console.print(
                "the last answer was not recorded (its action log failed), so it cannot be rated",
                highlight=False,
            )
            return
        feedback = await self.agent.memories.episodic.add_feedback(
            self.tenant, self.last.action_id, rating=rating
        )
        credited = len(feedback.memory_ids)
        console.print(
            f"rated {rating}/5 (action {feedback.action_id}): "
            + (
                f"{feedback.credited:+.2f} credited to the "
                f"{plural(credited, 'memory', 'memories')} in its prompt"
                if credited
                else "no memories were in its prompt, so no memory is credited"
            ),
            highlight=False,
        )

    async def show_memories(self) -> None:
        memories = self.agent.memories
        profile = await memories.profiles.render(self.tenant)
        notes = await memories.long_term.list_memories(self.tenant, limit=MEMORIES_SHOWN)
        await self._offline_rules_note()
        if not profile and not notes:
            console.print(
                f"nothing remembered about {escape(self.user_id)} yet: memories are formed "
                "when a session ends (/new)",
                highlight=False,
            )
            return
        lines = [f"what I remember about {escape(self.user_id)}:"]
        if profile:
            lines += ["profile:", escape(profile)]
        if notes:
            lines.append(f"long-term memories ({len(notes)}, newest first):")
            lines += [
                f"- {escape(m.content)} [dim]({m.memory_type}, importance {m.importance:.2f})[/]"
                for m in notes
            ]
        console.print("\n".join(lines), highlight=False)

    async def _rules_caught(self) -> int:
        """The facts the offline rules catch in this session's messages (0 with a chat
        model, which is not asked until the session is formed)."""
        if not self.agent.chat_model.offline or not self.turns:
            return 0
        messages = await self.agent.memories.conversation.messages_after(
            self.tenant, self.session_id, None, limit=RULES_READ
        )
        return len(extract_rules(messages).facts)

    async def _offline_rules_note(self) -> None:
        """With the offline model: what its rules caught in this session so far (formed when
        it ends), or one line saying they caught nothing in what was said in this chat."""
        if not self.agent.chat_model.offline or not self.said:
            return
        pending = await self._rules_caught()
        if pending:
            console.print(
                f"(the offline rules caught {plural(pending, 'fact')} in this session so far; "
                "they are formed when it ends: /new or /quit)",
                highlight=False,
            )
        elif not self.caught:
            console.print(f"({OFFLINE_RULES})", highlight=False, markup=False)

    async def form_memories(self) -> None:
        """Form the memories of the session now, as a worker would once it went quiet."""
        if self.turns == 0:
            return
        agent = self.agent
        caught = await self._rules_caught()
        self.caught += caught
        await agent.drain()  # the last turn's formation job is scheduled in the background
        before = len(await agent.memories.long_term.list_memories(self.tenant, limit=1000))
        worker = FormationWorker(agent.memories, agent.chat_model, queue=agent.queue)
        for _ in range(MAX_FORMATION_JOBS):
            if not await worker.run_once():
                break
            jobs = await agent.queue.jobs(self.tenant, self.session_id)
            if not any(job.status in ("pending", "running") for job in jobs):
                break
        jobs = await agent.queue.jobs(self.tenant, self.session_id)
        stuck = [job for job in jobs if job.status in ("pending", "running", "dead")]
        after = len(await agent.memories.long_term.list_memories(self.tenant, limit=1000))
        session = escape(self.session_id)
        if stuck:
            console.print(
                f"[yellow]memories of session {session} are not formed yet "
                f"({escape(stuck[-1].last_error or stuck[-1].status)}); `agent-memory worker` "
                "forms them later[/]",
                highlight=False,
            )
        elif after > before:
            console.print(
                f"memories formed from session {session}: {after - before} new "
                + ("long-term memory" if after - before == 1 else "long-term memories"),
                highlight=False,
            )
        else:
            nothing_caught = not caught and agent.chat_model.offline
            offline_note = " (the offline rules caught nothing in it)" if nothing_caught else ""
            console.print(
                f"nothing new to remember from session {session}{offline_note}", highlight=False
            )
        self.turns = 0


async def _prepare(rt: Runtime) -> None:
    """Indexes: created on the embedded server (a sandbox), checked anywhere else."""
    manager = IndexManager(rt.connection, rt.embedder.signature)
    if rt.connection.capabilities.embedded:
        await manager.setup()
        return
    # A search index whose state cannot be read (M0 and Flex refuse to list them) is no
    # reason to refuse a chat: the searches themselves say when an index is not serving.
    problems = [state for state in await manager.validate() if state.state != "unknown"]
    if problems:
        raise NotInitialisedError(what_to_run(problems))


async def _messages_held(agent: RAGAgent, tenant: Tenant, session_id: str) -> int | None:
    """How many messages the tenant's session holds; ``None`` when there is no such session."""
    conversation = agent.memories.conversation
    try:
        await conversation.get_session(tenant, session_id)
    except NotFoundError:
        return None
    # Counted, not the session's counter, which writes not awaited keep (it may lag).
    return await _driver.count(conversation.messages, queries.scope(tenant, session_id))


async def _chat(user_id: str, agent_id: str, session_id: str | None) -> None:
    # The agent pulls in LangGraph: imported when a chat starts, so `--help` stays quick.
    from agent_memory.agent.rag_agent import RAGAgent

    async with open_runtime() as rt:
        await _prepare(rt)
        model: ChatModel = make_chat_model(rt.settings)
        config = AgentConfig(agent_id, formation_debounce_s=0.0, run_formation_worker=False)
        try:
            async with interruptible(RAGAgent)(
                rt.connection, rt.embedder, model, config=config
            ) as agent:
                session = ChatSession(agent, user_id, session_id or _new_session_id())
                held = None
                if session_id is not None:
                    held = await _messages_held(agent, session.tenant, session_id)
                await agent.start_new_session(user_id, session.session_id)
                label = "offline: quotes what it recalls" if model.offline else model.model
                where = (
                    f"continuing session {escape(session.session_id)} "
                    f"({plural(held, 'message')} so far)"
                    if held is not None
                    else f"session {escape(session.session_id)}"
                )
                console.print(
                    f"chatting as {escape(user_id)} with agent {escape(agent_id)}, {where}; "
                    f"chat model {escape(label)}; /help for commands, /quit or Ctrl-D to leave",
                    highlight=False,
                )
                await _loop(session)
                try:
                    await session.form_memories()
                except AgentMemoryError as exc:  # the messages are stored; a worker forms them
                    console.print(
                        "[yellow]memories of this session are not formed "
                        f"({escape(str(exc))}); `agent-memory worker` forms them later[/]",
                        highlight=False,
                    )
                except Exception as exc:  # a defect: one line, not a traceback at exit
                    console.print(
                        f"[yellow]memories of this session are not formed ({unexpected(exc)}); "
                        "its messages are stored, `agent-memory worker` tries again[/]",
                        highlight=False,
                    )
        finally:
            await model.aclose()


async def _loop(session: ChatSession) -> None:
    while True:
        try:
            line = await read_line(PROMPT)
        except KeyboardInterrupt:  # Ctrl+C at the prompt: leave as /quit does
            console.print("\n(Ctrl+C: leaving, as with /quit)")
            return
        if line is None:
            console.print()
            return
        text = line.strip()
        if not text:
            console.print("(empty message: type something, or /help for the commands)")
            continue
        if _SURROGATE.search(text):
            console.print("(that line has bytes that are not valid text; send it as UTF-8)")
            continue
        if text.startswith("/"):
            try:
                if not await session.command(text):
                    return
            except AgentMemoryError as exc:  # the chat goes on; the user may try again
                console.print(
                    f"[red]{escape(text.split()[0])} failed:[/] {escape(str(exc))}",
                    highlight=False,
                )
            except Exception as exc:  # a defect: one line, and the conversation goes on
                console.print(
                    f"[red]{escape(text.split()[0])} failed:[/] {unexpected(exc)}",
                    highlight=False,
                )
            continue
        await session.ask(text)


def chat(
    user: str = typer.Option("me", "--user", help="Who is talking.", callback=checked_id("user")),
    agent: str = typer.Option(
        "chat",
        "--agent",
        help="The agent id (memories are per agent and user).",
        callback=checked_id("agent"),
    ),
    session: str | None = typer.Option(
        None,
        "--session",
        help="Continue this session (default: a new one).",
        callback=checked_id("session"),
    ),
) -> None:
    """Talk to the agent with memory; /help lists the commands."""
    if sys.stdin.isatty():
        with contextlib.suppress(ImportError):
            import readline  # noqa: F401 - line editing and history for input()
    run(lambda: _chat(user, agent, session))


def register(app: typer.Typer) -> None:
    app.command("chat")(chat)
