"""A model's identity by its vectors: what it gives for fixed probe texts, recorded in the store it writes.

A store records the id of the model that wrote it (``embedding_model``), but an id is a name: another model of the
same dimension under the same id (an Ollama tag pulled again, a file replaced behind a path, a custom
``embedding_model_id=``) would mix incompatible vectors into the store and search it with them. So a store also
records the model's vectors for :data:`PROBE_TEXTS` (its *fingerprint*); a model whose vectors for them are not all
within cosine :data:`TOLERANCE` of the recorded ones is refused.

The tolerance accepts every route of one model: all-MiniLM-L6-v2 int8 on onnxruntime, its float32 weights
(``unpack_weights=True``) and sentence-transformers on torch agree within cosine 0.9991 on every probe text (lowest
of the six); a different 384-dimensional model (multilingual-e5-small) gives at most 0.064, the same model's
output dimensions shuffled at most 0.095, and all-MiniLM-L6-v2 with 5 % noise added to every weight 0.982 to 0.990.
Stores made before fingerprints were recorded get theirs from the first model that writes or searches them.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

PROBE_TEXTS: tuple[str, ...] = (
    "I moved to Lisbon last spring and started learning Portuguese.",
    "Remind me to renew the car insurance before the 14th of March.",
    "The build fails with a segmentation fault in the parser.",
    "My daughter is allergic to peanuts and shellfish.",
    "What is the capital of Australia?",
    "Ich trinke morgens gerne schwarzen Kaffee.",
)
"""Texts every model embeds for its fingerprint (fixed: changing one changes every fingerprint)."""
TOLERANCE = 0.99
"""The lowest cosine, on every probe text, between the recorded vectors and the model's (see the module text)."""
MANIFEST_KEY = "embedding_fingerprint"
"""Where a store records the fingerprint of its model."""
_KEPT = 1024
"""Dimensions kept per probe vector (a 3,072-dimensional model's fingerprint stays small; cosine on them suffices)."""
_VERSION = "f1"


def probe(embeddings: Embeddings) -> list[list[float]]:
    """The model's vectors for :data:`PROBE_TEXTS` (embedded as stored texts)."""
    return embeddings.embed_documents(list(PROBE_TEXTS))


def encode(vectors: Sequence[Sequence[float]]) -> str:
    """A fingerprint as text: the probe vectors' first dimensions, as float16 in base64."""
    rows = np.asarray([list(v)[:_KEPT] for v in vectors], dtype="<f2")
    return f"{_VERSION}:{rows.shape[1]}:{base64.b64encode(rows.tobytes()).decode()}"


def agreement(recorded: str, vectors: Sequence[Sequence[float]]) -> float | None:
    """The lowest cosine, over the probe texts, between a recorded fingerprint and ``vectors``.

    ``None`` when the record is of another version of the probe texts, or unreadable: there is nothing to hold the
    model against (record its fingerprint instead). Vectors of another shape compare as -1.
    """
    version, _, rest = recorded.partition(":")
    width, _, data = rest.partition(":")
    try:
        stored = np.frombuffer(base64.b64decode(data, validate=True), dtype="<f2").astype(np.float64)
        stored = stored.reshape(len(PROBE_TEXTS), int(width))
    except ValueError:  # binascii.Error is a ValueError
        return None
    if version != _VERSION:
        return None
    current = np.asarray([list(v)[: int(width)] for v in vectors], dtype=np.float64)
    if current.shape != stored.shape:
        return -1.0
    norms = np.linalg.norm(stored, axis=1) * np.linalg.norm(current, axis=1)
    cosines = [float(x) for x in (stored * current).sum(axis=1) / np.where(norms > 0, norms, 1.0)]
    return min(cosines) if all(math.isfinite(c) for c in cosines) else -1.0
