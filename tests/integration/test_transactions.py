"""run_in_transaction: commit, abort on error, retry of transient failures only."""

from __future__ import annotations

import pytest
from pymongo import errors as pm

from agent_memory.mongo.transactions import is_transient, run_in_transaction


def transient(message: str = "write conflict") -> pm.OperationFailure:
    return pm.OperationFailure(message, 112, {"errorLabels": ["TransientTransactionError"]})


async def test_commits_the_work(connection):
    collection = connection.collection("t")

    async def work(session):
        await collection.insert_one({"_id": 1}, session=session)
        await collection.insert_one({"_id": 2}, session=session)
        return "done"

    assert await run_in_transaction(connection.client, work) == "done"
    assert await collection.count_documents({}) == 2


async def test_an_error_aborts_everything(connection):
    collection = connection.collection("t")

    async def work(session):
        await collection.insert_one({"_id": 1}, session=session)
        raise ValueError("stop")

    with pytest.raises(ValueError):
        await run_in_transaction(connection.client, work)
    assert await collection.count_documents({}) == 0


async def test_transient_failures_are_retried_from_the_start(connection):
    collection = connection.collection("t")
    attempts = []

    async def work(session):
        attempts.append(1)
        await collection.insert_one({"_id": len(attempts)}, session=session)
        if len(attempts) < 3:
            raise transient()

    await run_in_transaction(connection.client, work, base_delay=0.001)
    assert len(attempts) == 3
    assert [doc["_id"] for doc in await collection.find().to_list(None)] == [3]


async def test_retries_are_bounded(connection):
    async def work(session):
        raise transient()

    with pytest.raises(pm.OperationFailure):
        await run_in_transaction(connection.client, work, attempts=3, base_delay=0.001)


def test_what_counts_as_transient():
    assert is_transient(transient())
    # an unknown commit outcome may have committed: only the commit is retried, not the work
    assert not is_transient(
        pm.OperationFailure("x", 50, {"errorLabels": ["UnknownTransactionCommitResult"]})
    )
    assert is_transient(
        pm.OperationFailure(
            "SQLiteEngine already has an active transaction bound to another session"
        )
    )
    assert not is_transient(pm.OperationFailure("duplicate", 11000))
    assert not is_transient(ValueError("x"))


async def test_an_unknown_commit_result_retries_the_commit_not_the_work(connection, monkeypatch):
    collection = connection.collection("t")
    runs = []
    commits = []

    async def work(session):
        runs.append(1)
        await collection.insert_one({"_id": len(runs)}, session=session)
        real_commit = session.commit_transaction

        async def flaky_commit():
            commits.append(1)
            if len(commits) == 1:
                raise pm.OperationFailure(
                    "reply lost", 91, {"errorLabels": ["UnknownTransactionCommitResult"]}
                )
            await real_commit()

        monkeypatch.setattr(session, "commit_transaction", flaky_commit)

    await run_in_transaction(connection.client, work)
    assert (len(runs), len(commits)) == (1, 2)
    assert await collection.count_documents({}) == 1
