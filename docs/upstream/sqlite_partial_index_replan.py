"""Reproduction: a statement SQLite prepared before a partial index existed, re-planned after
a schema change with values bound that the index's condition matches, keeps that plan for
every value bound later (SQLite itself, through Python's ``sqlite3``; nothing of mongoeco
or agent_memory).

    python docs/upstream/sqlite_partial_index_replan.py

Python's ``sqlite3`` keeps prepared statements by their text, so the second and third
``execute`` reuse the statement of the first, as mongoeco's engine reuses its reads.
"""

from __future__ import annotations

import sqlite3

QUERY = "SELECT v FROM t WHERE grp = ?"


def run(*, guard: bool) -> list[list[tuple[int]]]:
    connection = sqlite3.connect(":memory:", isolation_level=None)
    connection.execute("CREATE TABLE t (grp TEXT, v INTEGER)")
    connection.executemany("INSERT INTO t VALUES (?, ?)", [("a", 1), ("b", 2)])
    if guard:  # any partial index whose condition the statement's bound value is compared to
        connection.execute("CREATE INDEX guard ON t (grp) WHERE grp = ''")
    answers = [connection.execute(QUERY, ("a",)).fetchall()]  # prepared and kept
    connection.execute("CREATE INDEX ia ON t (v) WHERE grp = 'a'")
    answers.append(connection.execute(QUERY, ("a",)).fetchall())  # re-planned: uses ia
    answers.append(connection.execute(QUERY, ("b",)).fetchall())  # still ia
    connection.close()
    return answers


if __name__ == "__main__":
    print(f"SQLite {sqlite3.sqlite_version}")
    print("prepared before any partial index:", run(guard=False), "(expected [(2,)] last)")
    print("prepared beside a partial index:  ", run(guard=True))
    print("a new statement of the same query: ", end="")
    connection = sqlite3.connect(":memory:")
    connection.execute("CREATE TABLE t (grp TEXT, v INTEGER)")
    connection.executemany("INSERT INTO t VALUES (?, ?)", [("a", 1), ("b", 2)])
    connection.execute("CREATE INDEX ia ON t (v) WHERE grp = 'a'")
    print(connection.execute(QUERY, ("b",)).fetchall())
