"""``agent-memory feedback``: rate an action from the command line (as the feedback API does)."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

import typer

from agent_memory.checks import check_text
from agent_memory.cli._app import checked_id, console, plural, reflowed, run
from agent_memory.cli._runtime import open_runtime
from agent_memory.errors import InvalidInputError, NotFoundError
from agent_memory.memory.episodic.records import EpisodicConfig, check_rating


def _checked_correction(value: str | None) -> str | None:
    """The correction as the feedback API accepts it (not blank, not too long), else a usage
    error (exit 2) before anything is opened."""
    if value is None:
        return None
    limit = EpisodicConfig().max_correction_chars  # the command runs with the default config
    try:
        return check_text(value, "correction", max_chars=limit)
    except InvalidInputError as exc:
        raise typer.BadParameter(str(exc)) from None


def _checked_rating(value: int | None) -> int | None:
    """The rating in the library's words ("rating must be an int from 1 to 5, got 7"), as the
    feedback API says it, else a usage error (exit 2)."""
    if value is None:
        return None
    try:
        return check_rating(value)
    except InvalidInputError as exc:
        raise typer.BadParameter(str(exc)) from None


def feedback(
    action_id: str = typer.Argument(
        ...,
        help="The action's id (act_...), as the agent returned it.",
        callback=checked_id("action id"),
    ),
    user: str = typer.Option(
        ..., "--user", help="The user the action belongs to.", callback=checked_id("user id")
    ),
    agent: str | None = typer.Option(
        None,
        "--agent",
        help="The agent the action belongs to (default: the action's own agent).",
        callback=checked_id("agent id"),
    ),
    rating: int | None = typer.Option(
        None, "--rating", help="1 (bad) to 5 (good).", callback=_checked_rating
    ),
    helpful: bool | None = typer.Option(None, "--helpful/--not-helpful", help="Was it helpful?"),
    correction: str | None = typer.Option(
        None,
        "--correction",
        help="What the answer should have been.",
        callback=_checked_correction,
    ),
    idempotency_key: str | None = typer.Option(
        None,
        "--idempotency-key",
        help="Retrying with the same key does not count twice.",
        callback=checked_id("idempotency key"),
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the result as one JSON object."),
) -> None:
    """Record feedback on an action and credit it to the memories that were in its prompt.

    Give at least one of --rating, --helpful/--not-helpful and --correction. Feedback given
    again replaces the earlier one entirely: an option not given is cleared (--correction
    alone after --rating 4 removes the rating and its credit). An unknown action, or one of
    another user or agent, is an error (exit 1) and nothing is written. Prints the feedback
    now stored and the success rates of the action's type over the last 30 days.
    """
    if rating is None and helpful is None and correction is None:
        raise typer.BadParameter(
            "give at least one", param_hint="--rating, --helpful/--not-helpful or --correction"
        )
    from agent_memory.memory.episodic.memory import LOGS, EpisodicMemory
    from agent_memory.tenancy import Tenant

    async def main() -> dict[str, Any]:
        async with open_runtime() as rt:
            episodic = EpisodicMemory(rt.connection, rt.embedder)
            owner = agent
            if owner is None:
                found = await rt.connection.collection(LOGS).find_one(
                    {"_id": {"$eq": action_id}, "user_id": {"$eq": user}}, {"agent_id": 1}
                )
                if found is None:
                    raise NotFoundError(f"no action {action_id!r} for user {user!r}")
                owner = found["agent_id"]
            tenant = Tenant(owner, user)
            given = await episodic.add_feedback(
                tenant,
                action_id,
                rating=rating,
                helpful=helpful,
                correction=correction,
                idempotency_key=idempotency_key,
            )
            action = await episodic.get_action(tenant, action_id)
            rates = await episodic.success_rates(owner, action.action_type)
            return {"agent_id": owner, "feedback": given, "action": action, "rates": rates}

    result = run(main)
    given, rates = result["feedback"], result["rates"]
    if as_json:
        data = {
            "agent_id": result["agent_id"],
            "feedback": asdict(given),
            "success_rates": asdict(rates),
        }
        typer.echo(json.dumps(data, default=str))
        return
    said = [
        f"rating {given.rating}" if given.rating is not None else "",
        "" if given.helpful is None else ("helpful" if given.helpful else "not helpful"),
        "a correction" if given.correction else "",
    ]
    if not given.memory_ids:
        credit = "no memories to credit"
    elif given.credited is None:
        memories = plural(len(given.memory_ids), "memory", "memories")
        credit = f"nothing credited to its {memories} (a correction alone)"
    else:
        memories = plural(len(given.memory_ids), "memory", "memories")
        credit = f"credited {given.credited:+.2f} to {memories}"
    console.print(
        f"action {given.action_id} of agent {result['agent_id']}, user {user}: "
        f"{', '.join(s for s in said if s)}; {credit}",
        highlight=False,
        soft_wrap=True,
        markup=False,
    )
    average = "-" if rates.average_rating is None else f"{rates.average_rating:.2f}"
    console.print(
        f"{result['action'].action_type} over 30 days: {plural(rates.total, 'action')}, success "
        f"{rates.success_rate:.0%}, failure {rates.failure_rate:.0%}, average rating {average} "
        f"({rates.rated} rated)",
        highlight=False,
        soft_wrap=True,
        markup=False,
    )


def register(app: typer.Typer) -> None:
    app.command("feedback", help=reflowed(feedback.__doc__))(feedback)
