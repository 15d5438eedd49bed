"""The real-cluster suite (tests/atlas) runs, unchanged, against the wire-level Atlas double.

tests/atlas is skipped wherever no Atlas deployment is configured, which is everywhere this
project is developed, so nothing kept it true: an assertion about a ``$text`` index the catalog
no longer has stayed in it, unrun. Running it here against the double (lagging index view,
builds that finish as they are polled) keeps it honest between real-cluster runs; the double
cannot prove what a real cluster does, only that the suite and the code agree with the
documentation the double follows.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from tests.integration.atlas_double import AtlasDouble

ROOT = Path(__file__).resolve().parents[2]


async def test_the_real_cluster_suite_passes_against_the_double(embedded_server):
    info = embedded_server.info
    async with AtlasDouble(info.host, info.port, info.secret, lag=0.5, auto_advance=True) as double:
        env = {
            **os.environ,
            "MONGODB_URI": double.uri,
            "AGENT_MEMORY_ATLAS_INDEX_TIMEOUT": "120",
            "AGENT_MEMORY_ATLAS_SYNC_TIMEOUT": "120",
        }
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "pytest",
            "tests/atlas",
            "-q",
            "-n",
            "0",
            "-p",
            "no:cacheprovider",
            cwd=ROOT,
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        output, _ = await process.communicate()
    text = output.decode(errors="replace")
    assert process.returncode == 0, text[-4000:]
    summary = text.strip().splitlines()[-1]
    assert " passed" in summary and "skipped" not in summary and "failed" not in summary, summary
