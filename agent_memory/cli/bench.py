"""``agent-memory bench ...``: benchmarks that run the framework's own code paths.

Results go to ``--out`` (JSON) with a markdown table beside it (and a PNG plot where the
benchmark has one); ``docs/benchmarks.md`` records the figures and the machine they came from.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from agent_memory.bench import write_result, write_with_plot
from agent_memory.cli._app import choice_option, console, err_console, run, subcommands
from agent_memory.cli._runtime import open_runtime
from agent_memory.mongo.indexes import IndexManager


def _json_out(path: Path) -> Path:
    """``--out`` names the JSON result; the table (.md) and plot (.png) go beside it, so any
    other name would be overwritten by one of them."""
    if path.suffix.lower() != ".json":
        raise typer.BadParameter(
            f"{str(path)!r} must end in .json: the markdown table and the plot are written "
            "beside it with .md and .png"
        )
    return path


app = subcommands(
    "Benchmarks: retrieval quality, turn latency, prompt tokens, concurrency, soak.",
    no_args_is_help=True,
)


@app.command("retrieval")
def retrieval(
    dataset: Path = typer.Option(..., "--dataset", help="A LoCoMo-format JSON file."),
    out: Path = typer.Option(
        Path("bench-results/retrieval.json"),
        "--out",
        help="Where the JSON result goes (.json).",
        callback=_json_out,
    ),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Conversations to use."),
    embedder: str | None = typer.Option(
        None, "--embedder", help="local, voyage or fake (default: the configured one)."
    ),
    context: bool = typer.Option(
        True,
        "--context/--no-context",
        help="Store each turn with its neighbouring turns as the memory's context.",
    ),
    one_user: bool = typer.Option(
        False,
        "--one-user",
        help="All conversations as one user's history (a long-time user), stored and asked "
        "in order.",
    ),
    at_once: bool = typer.Option(
        False,
        "--at-once",
        help="Store every turn at one moment and ask as of just before it (earlier runs' "
        "mode), instead of at its session's date with the questions a day after the last.",
    ),
) -> None:
    """Evidence recall@k on LoCoMo through store_many and retrieve, with vector and BM25
    baselines computed in the same run."""
    from agent_memory.bench.retrieval import render, run_retrieval, write_outputs

    if not dataset.is_file():
        err_console.print(
            f"[bold red]error:[/] no dataset at {escape(str(dataset))}", highlight=False
        )
        raise typer.Exit(2)

    commit = _commit()  # the code measured, read before the run

    async def main() -> None:
        async with open_runtime(embedder=embedder) as rt:
            await IndexManager(rt.connection, rt.embedder.signature).setup()
            result = await run_retrieval(
                rt.connection,
                rt.embedder,
                dataset,
                limit=limit,
                context=context,
                one_user=one_user,
                dated=not at_once,
                progress=lambda line: err_console.print(line, highlight=False, markup=False),
            )
        table, image = write_outputs(result, out, commit=commit)
        console.print(render(result), highlight=False, markup=False)
        console.print(f"wrote {out}, {table} and {image}", highlight=False, markup=False)

    run(main)


@app.command("fusion")
def fusion(
    dataset: list[Path] = typer.Option(
        ..., "--dataset", help="A LoCoMo-format JSON file; repeat for several."
    ),
    out: Path = typer.Option(
        Path("bench-results/fusion.json"),
        "--out",
        help="Where the JSON result goes (.json).",
        callback=_json_out,
    ),
    limit: int | None = typer.Option(
        None, "--limit", min=1, help="Conversations to use from each dataset."
    ),
    embedder: str | None = typer.Option(
        None, "--embedder", help="local, voyage or fake (default: the configured one)."
    ),
    cache: Path | None = typer.Option(
        None,
        "--cache",
        help="A directory keeping the vectors embedded, so that a rerun skips the embedder.",
    ),
) -> None:
    """Cross-validate the plain tier's fusion and what each ranking reads: leave one
    conversation out, tune on the rest (no database needed)."""
    from agent_memory.bench.fusion import render, run_fusion
    from agent_memory.config import load_settings
    from agent_memory.providers.registry import make_embedder

    for path in dataset:
        if not path.is_file():
            err_console.print(
                f"[bold red]error:[/] no dataset at {escape(str(path))}", highlight=False
            )
            raise typer.Exit(2)

    async def main() -> None:
        chosen = make_embedder(load_settings(**({"embedder": embedder} if embedder else {})))
        if cache is not None:
            from agent_memory.bench.vector_cache import CachedEmbedder

            chosen = CachedEmbedder(chosen, cache)
        try:
            result = await run_fusion(
                chosen,
                dataset,
                limit=limit,
                progress=lambda line: err_console.print(line, highlight=False, markup=False),
            )
        finally:
            await chosen.aclose()
        data = result.as_json()
        table = render(data)
        write_result(out, data, table)
        console.print(table, highlight=False, markup=False)
        console.print(f"wrote {out} and {out.with_suffix('.md')}", highlight=False, markup=False)

    run(main)


def _sizes(value: str) -> list[int]:
    """``--memories``: one size or several, comma-separated (1 to 1,000,000 each)."""
    sizes = []
    for part in str(value).split(","):
        text = part.strip().replace("_", "")
        if not text.isdigit() or not 1 <= int(text) <= 1_000_000:
            raise typer.BadParameter(
                "give one size or several separated by commas, each a whole number from 1 "
                "to 1000000 (for example 1000,10000,100000)"
            )
        sizes.append(int(text))
    return sizes


@app.command("speed")
def speed(
    memories: str = typer.Option(
        "1000",
        "--memories",
        help="Memories of one user; several sizes separated by commas run back to back "
        "(1000,10000,100000).",
    ),
    queries: int = typer.Option(100, "--queries", min=1, max=10_000, help="Retrieves timed."),
    batch: int = typer.Option(50, "--batch", min=1, max=10_000, help="Memories per store_many."),
    out: Path = typer.Option(
        Path("bench-results/speed.json"),
        "--out",
        help="Where the JSON result goes (.json).",
        callback=_json_out,
    ),
    embedder: str | None = typer.Option(
        None, "--embedder", help="local, voyage or fake (default: the configured one)."
    ),
) -> None:
    """Ingest through the consolidating write path and retrieve latency, at one size or
    several (a curve, with a plot beside the result)."""
    from agent_memory.bench.speed import plot_speed, render_speed, run_speed_sizes

    sizes = _sizes(memories)
    commit = _commit()  # the code measured, read before the run (a long run outlives commits)

    async def main() -> None:
        async with open_runtime(embedder=embedder) as rt:
            await IndexManager(rt.connection, rt.embedder.signature).setup()
            runs = await run_speed_sizes(
                rt.connection, rt.embedder, sizes, queries=queries, batch=batch
            )
        if len(runs) == 1:
            data = runs[0].as_json()
            table = render_speed(data)
            write_result(out, data, table)
        else:
            data = {"runs": [run.as_json() for run in runs], "commit": commit}
            table = render_speed(data)
            write_with_plot(out, data, table, lambda image: plot_speed(data, image))
        console.print(table, highlight=False, markup=False)
        missed = [run.memories for run in runs if not run.found_across_instances]
        if missed:
            err_console.print("a memory stored elsewhere was not found", highlight=False)
            raise typer.Exit(1)

    run(main)


@app.command("users")
def users(
    users: int = typer.Option(1000, "--users", min=1, max=100_000, help="Users of one agent."),
    memories: int = typer.Option(
        1000, "--memories", min=1, max=100_000, help="Memories of each user."
    ),
    queries: int = typer.Option(
        500, "--queries", min=1, max=100_000, help="Retrieves, each for a random user."
    ),
    out: Path = typer.Option(
        Path("bench-results/users.json"),
        "--out",
        help="Where the JSON result goes (.json).",
        callback=_json_out,
    ),
    embedder: str | None = typer.Option(
        None, "--embedder", help="local, voyage or fake (default: the configured one)."
    ),
) -> None:
    """Many users in one process: retrieve of a cold and a warm user, and the process's
    memory against the search memory budget (search_cache_mb)."""
    from agent_memory.bench.users import render_users, run_users

    commit = _commit()

    async def main() -> None:
        async with open_runtime(embedder=embedder) as rt:
            await IndexManager(rt.connection, rt.embedder.signature).setup()
            result = await run_users(
                rt.connection, rt.embedder, users=users, memories=memories, queries=queries
            )
        data = {**result.as_json(), "commit": commit}
        table = render_users(data)
        write_result(out, data, table)
        console.print(table, highlight=False, markup=False)

    run(main)


def _commit() -> str | None:
    """The checkout's commit, when the package runs from a git checkout (for the record)."""
    import subprocess

    try:
        found = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            cwd=Path(__file__).resolve().parent,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return found.stdout.strip() or None if found.returncode == 0 else None


@app.command("store")
def store(
    rounds: int = typer.Option(10, "--rounds", min=1, help="Rounds of concurrent calls."),
    per_round: int = typer.Option(100, "--per-round", min=1, help="Keys per round (6 calls each)."),
    bulk: int = typer.Option(2_000, "--bulk", min=0, help="Puts in the one large batch."),
    out: Path = typer.Option(
        Path("bench-results/store.json"),
        "--out",
        help="Where the JSON result goes (.json).",
        callback=_json_out,
    ),
    embedder: str | None = typer.Option(
        None, "--embedder", help="local, voyage or fake (default: the configured one)."
    ),
) -> None:
    """The LangGraph store under many concurrent calls and one large batch of puts."""
    from agent_memory.bench.store_ops import render_store_ops, run_store_ops

    async def main() -> dict:
        async with open_runtime(embedder=embedder) as rt:
            await IndexManager(rt.connection, rt.embedder.signature).setup()
            return await run_store_ops(
                rt.connection, rt.embedder, rounds=rounds, per_round=per_round, bulk=bulk
            )

    result = run(main)
    table = render_store_ops(result)
    write_result(out, result, table)
    console.print(table, highlight=False, markup=False)


@app.command("latency")
def latency(
    turns: int = typer.Option(20, "--turns", min=1, help="Measured turns per flow."),
    db_rtt_ms: float = typer.Option(2.0, "--db-rtt-ms", min=0, help="Database round trip."),
    embed_ms: float = typer.Option(150.0, "--embed-ms", min=0, help="One embedding call."),
    ttft_ms: float = typer.Option(300.0, "--ttft-ms", min=0, help="Chat: first token."),
    chat_ms: float = typer.Option(1000.0, "--chat-ms", min=0, help="Chat: whole answer."),
    out: Path = typer.Option(
        Path("bench-results/latency.json"),
        "--out",
        help="Where the JSON result goes (.json).",
        callback=_json_out,
    ),
) -> None:
    """Full agent turns against the blueprint's sequential flow, with simulated service
    times, on a fresh embedded server behind a delaying proxy."""
    from agent_memory.bench.latency import LatencySettings, render_latency, run_latency

    if chat_ms < ttft_ms:
        err_console.print("[bold red]error:[/] --chat-ms must be at least --ttft-ms")
        raise typer.Exit(2)
    settings = LatencySettings(turns, db_rtt_ms, embed_ms, ttft_ms, chat_ms)

    async def main() -> dict:
        return await run_latency(
            settings, progress=lambda line: err_console.print(line, highlight=False, markup=False)
        )

    result = run(main)
    table = render_latency(result)
    markdown = write_result(out, result, table)
    console.print(table, highlight=False, markup=False)
    console.print(f"wrote {out} and {markdown}", highlight=False, markup=False)


@app.command("tokens")
def tokens(
    dataset: Path = typer.Option(..., "--dataset", help="A LoCoMo-format JSON file."),
    out: Path = typer.Option(
        Path("bench-results/tokens.json"),
        "--out",
        help="Where the JSON result goes (.json).",
        callback=_json_out,
    ),
    conversation: str | None = typer.Option(
        None, "--conversation", help="A sample_id to replay (default: the longest)."
    ),
    memories: int = typer.Option(10, "--memories", min=1, help="Memories per prompt."),
    budget_tokens: int = typer.Option(
        8000, "--budget-tokens", min=2000, help="The agent's token budget (prompt and answer)."
    ),
    questions: int | None = typer.Option(None, "--questions", min=1, help="Questions to ask."),
    embedder: str | None = typer.Option(
        None, "--embedder", help="local, voyage or fake (default: the configured one)."
    ),
) -> None:
    """Replay the longest LoCoMo conversation through the agent: prompt tokens per turn
    against the full history, and whether each question's evidence reached the prompt.
    Exits 1 if a prompt went over the budget."""
    from agent_memory.bench.tokens import TokenSettings, render_tokens, run_tokens, write_outputs

    if not dataset.is_file():
        err_console.print(
            f"[bold red]error:[/] no dataset at {escape(str(dataset))}", highlight=False
        )
        raise typer.Exit(2)
    settings = TokenSettings(memories, budget_tokens, questions, conversation)

    async def main() -> dict:
        async with open_runtime(embedder=embedder) as rt:
            await IndexManager(rt.connection, rt.embedder.signature).setup()
            return await run_tokens(
                rt.connection,
                rt.embedder,
                dataset,
                settings,
                progress=lambda line: err_console.print(line, highlight=False, markup=False),
            )

    result = run(main)
    table, image = write_outputs(result, out)
    console.print(render_tokens(result), highlight=False, markup=False)
    console.print(f"wrote {out}, {table} and {image}", highlight=False, markup=False)
    if result["over_budget"]:
        raise typer.Exit(1)


def _server_option() -> Any:
    return choice_option(
        "apart",
        "--server",
        "apart",
        "same",
        help="Embedded default: apart runs `agent-memory embedded serve` in its own process "
        "for the run (or uses the one already serving the data directory); same serves it "
        "from this process.",
    )


async def _serve_apart(stack: contextlib.ExitStack, server: str) -> None:
    """Start the embedded server in a process of its own for the run, when asked and
    needed (the embedded default, and nobody serving its data directory yet)."""
    from agent_memory.bench._server import served_apart
    from agent_memory.config import load_settings
    from agent_memory.mongo.embedded import find_running_server

    config = load_settings()
    if server == "apart" and config.uri() is None:
        running = await asyncio.to_thread(find_running_server, config.data_dir, wait=0.5)
        if running is None:
            await asyncio.to_thread(stack.enter_context, served_apart(config))


@app.command("transfer")
def transfer(
    sizes: str = typer.Option(
        "10000,100000", "--sizes", help="Memories of one user to export and import, per run."
    ),
    dataset: Path | None = typer.Option(
        None, "--dataset", help="A LoCoMo-format JSON file for the round trip (none: skipped)."
    ),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Conversations to use."),
    server: str = _server_option(),
    embedder: str | None = typer.Option(
        "fake", "--embedder", help="The source's embedder: local, voyage or fake."
    ),
    out: Path = typer.Option(
        Path("bench-results/transfer.json"),
        "--out",
        help="Where the JSON result goes (.json).",
        callback=_json_out,
    ),
) -> None:
    """Export and import at each size (records per second, the export's memory growth),
    and a LoCoMo round trip into another embedder that must change nothing but the vectors
    and rank as a direct ingest does. The target embedder is the fake one at half the size.
    Exits 1 when the round trip changes anything."""
    import tempfile

    from agent_memory.bench.embedders import load_locomo
    from agent_memory.bench.transfer import (
        other_fake,
        render_transfer,
        run_round_trip,
        run_transfer_sizes,
    )

    try:
        counts = [int(part) for part in sizes.split(",") if part.strip()]
    except ValueError:
        raise typer.BadParameter("comma-separated counts, such as 10000,100000") from None
    if not counts or min(counts) < 1:
        raise typer.BadParameter("at least one count, each above 0", param_hint="--sizes")
    conversations = None
    if dataset is not None:
        if not dataset.is_file():
            raise typer.BadParameter(f"no dataset at {dataset}", param_hint="--dataset")
        conversations, _ = load_locomo(dataset, limit=limit)
    commit = _commit()

    async def main() -> dict:
        with contextlib.ExitStack() as stack, tempfile.TemporaryDirectory() as work:
            await _serve_apart(stack, server)
            async with open_runtime(embedder=embedder) as rt:
                other = other_fake(rt.embedder)
                try:
                    say = lambda line: err_console.print(line, highlight=False, markup=False)  # noqa: E731
                    result: dict = {"commit": commit}
                    result["sizes"] = await run_transfer_sizes(
                        rt.settings, rt.embedder, other, counts, Path(work), say
                    )
                    if conversations is not None:
                        result["round_trip"] = await run_round_trip(
                            rt.settings, rt.embedder, other, conversations, Path(work), say
                        )
                    return result
                finally:
                    await other.aclose()

    result = run(main)
    table = render_transfer(result)
    write_result(out, result, table)
    console.print(table, highlight=False, markup=False)
    trip = result.get("round_trip")
    if trip and (trip["documents_differing"] or trip["same_top10_in_order"] != trip["questions"]):
        raise typer.Exit(1)


@app.command("concurrency")
def concurrency(
    sessions: int = typer.Option(200, "--sessions", min=1, help="Users, one session each."),
    turns: int = typer.Option(5, "--turns", min=1, help="Turns per session."),
    chat_ms: float = typer.Option(50.0, "--chat-ms", min=0, help="Simulated answer time."),
    server: str = _server_option(),
    embedder: str | None = typer.Option(
        None, "--embedder", help="local, voyage or fake (default: the configured one)."
    ),
    out: Path = typer.Option(
        Path("bench-results/concurrency.json"),
        "--out",
        help="Where the JSON result goes (.json).",
        callback=_json_out,
    ),
) -> None:
    """Many users' sessions at once through one agent; checks nothing is lost or crossed.
    Exits 1 when a check fails."""
    from agent_memory.bench._server import describe_server, watch_for
    from agent_memory.bench.concurrency import (
        ConcurrencySettings,
        render_concurrency,
        run_concurrency,
    )

    async def main() -> dict:
        with contextlib.ExitStack() as stack:
            await _serve_apart(stack, server)
            async with open_runtime(embedder=embedder) as rt:
                await IndexManager(rt.connection, rt.embedder.signature).setup()
                watch = await asyncio.to_thread(watch_for, rt.settings)
                result = await run_concurrency(
                    rt.connection,
                    rt.embedder,
                    ConcurrencySettings(sessions, turns, chat_ms / 1000),
                    progress=lambda line: err_console.print(line, highlight=False, markup=False),
                )
                return result | {
                    "server": describe_server(watch),
                    "embedder": rt.embedder.signature.describe(),
                }

    result = run(main)
    table = render_concurrency(result)
    write_result(out, result, table)
    console.print(table, highlight=False, markup=False)
    if not result["ok"]:
        raise typer.Exit(1)


@app.command("soak")
def soak(
    seconds: float = typer.Option(60.0, "--seconds", min=1, help="How long the users talk."),
    sessions: int = typer.Option(20, "--sessions", min=1, max=10_000, help="Users talking."),
    workers: int = typer.Option(2, "--workers", min=1, max=64, help="Formation workers."),
    worker_concurrency: int = typer.Option(
        4, "--worker-concurrency", min=1, max=64, help="Jobs each worker works at once."
    ),
    chat_ms: float = typer.Option(50.0, "--chat-ms", min=1, help="Simulated answer time."),
    think_ms: float = typer.Option(500.0, "--think-ms", min=0, help="Mean pause between turns."),
    session_turns: int = typer.Option(20, "--session-turns", min=1, help="Turns per session."),
    max_growth: float = typer.Option(
        0.25,
        "--max-growth",
        min=0.001,
        help="Allowed memory growth after the warm-up (0.25 = 25%).",
    ),
    max_wal_mb: float = typer.Option(
        64.0, "--max-wal-mb", min=1, help="Largest write-ahead log allowed (embedded server)."
    ),
    max_p95_ms: float | None = typer.Option(
        None, "--max-p95-ms", min=1, help="Fail when the p95 turn takes longer (ms)."
    ),
    max_drift: float | None = typer.Option(
        None,
        "--max-drift",
        min=1,
        help="Fail when the last ten minutes' p95 (a sixth of a shorter run) exceeds the "
        "first's by more than this factor.",
    ),
    server: str = _server_option(),
    trace: bool = typer.Option(False, "--tracemalloc", help="Also sample the Python heap."),
    embedder: str | None = typer.Option(
        None, "--embedder", help="local, voyage or fake (default: the configured one)."
    ),
    out: Path = typer.Option(
        Path("bench-results/soak.json"),
        "--out",
        help="Where the JSON result goes (.json).",
        callback=_json_out,
    ),
) -> None:
    """Users talk for --seconds while separate workers form memories; then checks nothing
    was lost, duplicated or crossed, memory and the write-ahead log stayed flat, and latency
    met the limits given. Exits 1 when a check fails."""
    from agent_memory.bench._server import watch_for
    from agent_memory.bench.soak import SoakSettings, render_soak, run_soak

    settings = SoakSettings(
        seconds=seconds,
        sessions=sessions,
        workers=workers,
        worker_concurrency=worker_concurrency,
        chat_seconds=chat_ms / 1000,
        think_seconds=think_ms / 1000,
        session_turns=session_turns,
        max_growth=max_growth,
        max_wal_mb=max_wal_mb,
        max_p95_ms=max_p95_ms,
        max_drift=max_drift,
        tracemalloc=trace,
    )

    async def main() -> dict:
        with contextlib.ExitStack() as stack:
            await _serve_apart(stack, server)
            async with open_runtime(embedder=embedder) as rt:
                await IndexManager(rt.connection, rt.embedder.signature).setup()
                watch = await asyncio.to_thread(watch_for, rt.settings)
                return await run_soak(
                    rt.connection,
                    rt.embedder,
                    settings,
                    progress=lambda line: err_console.print(line, highlight=False, markup=False),
                    watch=watch,
                )

    result = run(main)
    table = render_soak(result)
    write_result(out, result, table)
    console.print(table, highlight=False, markup=False)
    if not result["ok"]:
        raise typer.Exit(1)


@app.command("lengths")
def lengths(
    scale: str = typer.Option(
        "1000,10000",
        "--scale",
        help="Messages and chunks per scale, separated by commas (actions: --action-factor "
        "times as many); each read's p50 is compared with the scale ten times smaller.",
    ),
    action_factor: int = typer.Option(
        10, "--action-factor", min=1, max=100, help="Actions per message of a scale."
    ),
    reads: int = typer.Option(20, "--reads", min=1, max=1_000, help="Timed reads per scale."),
    embedder: str = typer.Option(
        "fake", "--embedder", help="local, voyage or fake (the framework's own cost)."
    ),
    out: Path = typer.Option(
        Path("bench-results/lengths.json"),
        "--out",
        help="Where the JSON result goes (.json).",
        callback=_json_out,
    ),
) -> None:
    """Conversation, episodic and knowledge reads and the console's pages at a size and at a
    tenth of it, on a server of the run's own (a fresh embedded one by default). Exits 1 when
    a read failed (the table says which and why)."""
    from agent_memory.bench.lengths import (
        LengthSettings,
        lengths_connection,
        parse_scales,
        render_lengths,
        run_lengths,
    )
    from agent_memory.config import load_settings
    from agent_memory.console import create_console_app
    from agent_memory.providers.registry import make_embedder

    try:
        scales = parse_scales(scale)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--scale") from None
    config = load_settings(embedder=embedder)
    # The console signs in with the run's token: keys configured for real agents stay out.
    console_settings = config.model_copy(update={"api_keys": {}})

    async def main() -> dict:
        model = make_embedder(config)
        try:
            async with lengths_connection(config, model) as connection:
                return await run_lengths(
                    connection,
                    model,
                    LengthSettings(scales=scales, action_factor=action_factor, reads=reads),
                    console=lambda memories, token: create_console_app(
                        memories, settings=console_settings, token=token
                    ),
                    progress=lambda line: err_console.print(line, highlight=False, markup=False),
                )
        finally:
            await model.aclose()

    result = run(main)
    table = render_lengths(result)
    markdown = write_result(out, result, table)
    console.print(table, highlight=False, markup=False)
    console.print(f"wrote {out} and {markdown}", highlight=False, markup=False)
    if result["failed"]:
        err_console.print(f"{result['failed']} read(s) failed: see the table", highlight=False)
        raise typer.Exit(1)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="bench")
