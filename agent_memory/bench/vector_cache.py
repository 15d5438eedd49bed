"""Vectors a benchmark has already embedded, kept on disk so that a rerun skips the embedder.

Cross-validating the fusion (``bench fusion``) spends nearly all of its 40 minutes embedding
the same 12,000 texts with the local model; trying another selection rule or grid should not
pay that again. :class:`CachedEmbedder` wraps an embedder and keeps every vector it returned in
one ``.npz`` file per embedder signature, keyed by a hash of the text and of whether it was
embedded as a document or a query (e5 models prefix the two differently). A vector comes back
exactly as the embedder gave it; nothing else about the run is cached, so the rankings, the
tokeniser and the grid are recomputed each time.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import zipfile
from pathlib import Path
from typing import Literal

import numpy as np

from agent_memory.bench.embedders import WrappedEmbedder
from agent_memory.providers.embedders.base import Embedder

__all__ = ["CachedEmbedder"]

#: Vectors added between two writes of the file.
SAVE_EVERY = 2_000


def _key(kind: str, text: str) -> str:
    return hashlib.sha256(f"{kind}\0{text}".encode()).hexdigest()


class CachedEmbedder(WrappedEmbedder):
    """An embedder that answers from ``directory`` what ``inner`` embedded before.

    What was added is written every :data:`SAVE_EVERY` vectors and by :meth:`save` (or
    ``aclose``). A file that cannot be read is an error, not an empty cache, so a broken
    file is noticed rather than silently re-embedded.
    """

    def __init__(self, inner: Embedder, directory: Path) -> None:
        super().__init__(inner)  # the same signature: the vectors are its vectors
        name = hashlib.sha256(self.signature.describe().encode()).hexdigest()[:16]
        self.path = Path(directory) / f"vectors-{name}.npz"
        self._vectors: dict[str, np.ndarray] = {}
        self._added = 0
        self.hits = 0
        self.misses = 0
        if self.path.exists():
            try:
                with np.load(self.path, allow_pickle=False) as stored:
                    keys = [str(key) for key in stored["keys"]]
                    matrix = stored["vectors"]
            except (OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:
                raise ValueError(
                    f"{self.path} is not a vector cache ({exc}); delete it to embed again"
                ) from exc
            if matrix.shape != (len(keys), self.dimensions):
                raise ValueError(
                    f"{self.path} holds vectors of shape {matrix.shape}, "
                    f"not {len(keys)} of {self.dimensions} dimensions"
                )
            self._vectors = dict(zip(keys, matrix, strict=True))

    async def _embed(self, texts: list[str], *, kind: Literal["document", "query"]) -> np.ndarray:
        keys = [_key(kind, text) for text in texts]
        # Identical texts in one call are embedded once.
        todo: dict[str, int] = {}
        for i, key in enumerate(keys):
            if key not in self._vectors:
                todo.setdefault(key, i)
        self.misses += len(todo)
        self.hits += len(texts) - len(todo)
        if todo:
            wanted = [texts[i] for i in todo.values()]
            if kind == "query":
                fresh = np.stack([await self.inner.embed_query(text) for text in wanted])
            else:
                fresh = await self.inner.embed_documents(wanted)
            for key, vector in zip(todo, fresh, strict=True):
                self._vectors[key] = np.asarray(vector, dtype=np.float32)
            self._added += len(todo)
            if self._added >= SAVE_EVERY:  # an interrupted run keeps most of its work
                self.save()
        return np.stack([self._vectors[key] for key in keys])

    def save(self) -> None:
        """Write the cache if anything was added (atomically: a crash leaves the old file)."""
        if not self._added:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        keys = np.array(list(self._vectors))
        vectors = np.stack(list(self._vectors.values()))
        handle, temporary = tempfile.mkstemp(dir=self.path.parent, suffix=".npz")
        try:
            with os.fdopen(handle, "wb") as out:
                np.savez(out, keys=keys, vectors=vectors)
            os.replace(temporary, self.path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        self._added = 0

    async def aclose(self) -> None:
        self.save()
        await super().aclose()
