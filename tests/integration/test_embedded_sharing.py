"""Programs sharing one embedded server: connecting disturbs nobody, and another program's
transaction is a short wait for the others, not a failure (issue 14)."""

from __future__ import annotations

import asyncio

import pytest
from pymongo import AsyncMongoClient, monitoring

from agent_memory.config import load_settings
from agent_memory.mongo.connection import connect

pytestmark = pytest.mark.mongoeco  # every test starts an embedded server (or tries to)


class _Transactions(monitoring.CommandListener):
    def __init__(self) -> None:
        self.seen: list[str] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if event.command.get("startTransaction") or event.command_name in (
            "commitTransaction",
            "abortTransaction",
        ):
            self.seen.append(event.command_name)

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


@pytest.fixture
def shared(own_embedded_server):  # type: ignore[no-untyped-def]
    return own_embedded_server


async def test_connecting_opens_no_transaction_on_the_embedded_server(shared) -> None:  # type: ignore[no-untyped-def]
    listener = _Transactions()
    settings = load_settings(mongodb_uri=shared.uri, database="t_share", embedder="fake")
    connection = await connect(settings, client_options={"event_listeners": [listener]})
    try:
        assert not connection.capabilities.transactions
        assert "not used" in connection.capabilities.notes["transactions"]
    finally:
        await connection.close()
    assert listener.seen == []


async def test_updates_keep_working_while_ten_programs_connect(shared) -> None:  # type: ignore[no-untyped-def]
    client: AsyncMongoClient = AsyncMongoClient(shared.uri)
    counters = client["t_share"]["counters"]
    await counters.insert_one({"_id": "c", "n": 0})
    settings = load_settings(mongodb_uri=shared.uri, database="t_share", embedder="fake")
    failures: list[BaseException] = []

    async def update(times: int) -> None:
        for _ in range(times):
            try:
                await counters.update_one({"_id": "c"}, {"$inc": {"n": 1}})
            except Exception as exc:
                failures.append(exc)
            await asyncio.sleep(0)

    async def join() -> None:
        connection = await connect(settings)
        await connection.close()

    try:
        await asyncio.gather(update(80), *(join() for _ in range(10)))
        assert failures == []
        assert (await counters.find_one({"_id": "c"}))["n"] == 80
    finally:
        await client.close()


async def test_another_programs_transaction_is_waited_for(shared) -> None:  # type: ignore[no-untyped-def]
    holder: AsyncMongoClient = AsyncMongoClient(shared.uri)
    other: AsyncMongoClient = AsyncMongoClient(shared.uri)
    try:
        await holder["t_share"]["items"].insert_one({"_id": "seed"})
        async with holder.start_session() as session:
            await session.start_transaction()
            await holder["t_share"]["items"].insert_one({"_id": "in-tx"}, session=session)

            async def commit_soon() -> None:
                await asyncio.sleep(0.3)
                await session.commit_transaction()

            committing = asyncio.create_task(commit_soon())
            # Refused at once by the engine while the transaction is open; waited for instead.
            await other["t_share"]["items"].update_one({"_id": "seed"}, {"$set": {"n": 1}})
            found = await other["t_share"]["items"].find_one({"_id": "in-tx"})
            await committing
        assert found == {"_id": "in-tx"}
        assert (await other["t_share"]["items"].find_one({"_id": "seed"})) == {
            "_id": "seed",
            "n": 1,
        }
    finally:
        await holder.close()
        await other.close()
