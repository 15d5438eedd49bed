"""``agent-memory bench ...``: benchmarks that run the framework's own code paths.

Results go to ``--out`` (JSON) with a markdown table beside it (and a PNG plot where the
benchmark has one); ``docs/benchmarks.md`` records the figures and the machine they came from.
"""

from __future__ import annotations

from pathlib import Path

import typer

from agent_memory.cli._app import console, err_console, run
from agent_memory.cli._runtime import open_runtime
from agent_memory.mongo.indexes import IndexManager

app = typer.Typer(help="Benchmarks: retrieval quality (more to come).", no_args_is_help=True)


@app.command("retrieval")
def retrieval(
    dataset: Path = typer.Option(..., "--dataset", help="A LoCoMo-format JSON file."),
    out: Path = typer.Option(
        Path("bench-results/retrieval.json"), "--out", help="Where the JSON result goes."
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
) -> None:
    """Evidence recall@k on LoCoMo through store_many and retrieve, with vector and BM25
    baselines computed in the same run."""
    from agent_memory.bench.retrieval import render, run_retrieval, write_outputs

    if not dataset.is_file():
        err_console.print(f"[bold red]error:[/] no dataset at {dataset}", highlight=False)
        raise typer.Exit(2)

    async def main() -> None:
        async with open_runtime(embedder=embedder) as rt:
            await IndexManager(rt.connection, rt.embedder.signature).setup()
            result = await run_retrieval(
                rt.connection,
                rt.embedder,
                dataset,
                limit=limit,
                context=context,
                progress=lambda line: err_console.print(line, highlight=False),
            )
        table, image = write_outputs(result, out)
        console.print(render(result), highlight=False)
        console.print(f"wrote {out}, {table} and {image}", highlight=False)

    run(main)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="bench")
