"""Embeddings: a local model shipped inside a PyPI wheel (the default), or any OpenAI-compatible ``/v1/embeddings``
endpoint (OpenAI, Ollama, vLLM, llama.cpp server).

**Local** (``EMBEDDING_PROVIDER=local``, the default when no endpoint is configured): WordLlama's
``l2_supercat`` static token embeddings (256 dimensions), whose weights and tokenizer ship inside the
``wordllama`` wheel; ``load_local_embedder()`` loads them from the installed package with downloads disabled,
once per process (~0.4 s), and embeds about 20,000 chunks a second on one core. Nothing is fetched, ever.
Local vectors are not stored in ``embedding_cache``: computing one is cheaper than looking it up.

**Endpoint** (``EMBEDDING_BASE_URL`` and ``EMBEDDING_MODEL`` set):
Calls go through the official ``openai`` SDK, whose retries (with exponential backoff) cover timeouts, 429s,
5xx answers and dropped connections; inputs are sent in batches of at most ``EMBEDDING_BATCH_SIZE`` texts and
``EMBEDDING_BATCH_MAX_TOKENS`` estimated tokens. Vectors are float32 blobs. Every vector is kept in
``embedding_cache`` under (provider, model, provider_key, sha256 of the text), so unchanged text is never
embedded twice. ``EMBEDDING_PROVIDER=none`` turns embeddings off (keyword-only recall).
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from http import HTTPStatus
from pathlib import Path

import numpy as np
from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from guardian_app.errors import GuardianError
from guardian_app.models import EmbeddingCache
from guardian_app.recall.chunking import estimate_tokens

logger = logging.getLogger(__name__)

PROVIDER = "openai-compatible"
LOCAL_PROVIDER = "local"
LOCAL_MODEL = "wordllama/l2_supercat-256"
_LOOKUP_BATCH = 500


class EmbeddingError(GuardianError):
    """The endpoint could not embed the texts (after the SDK's retries), or answered nonsense."""

    code = "embedding_unavailable"
    status = HTTPStatus.SERVICE_UNAVAILABLE


@dataclass(frozen=True)
class EmbeddingConfig:
    base_url: str
    api_key: str
    model: str
    dimensions: int = 0
    timeout_s: float = 60.0
    max_retries: int = 3
    provider: str = PROVIDER

    @property
    def is_local(self) -> bool:
        return self.provider == LOCAL_PROVIDER

    @property
    def provider_key(self) -> str:
        """Tells endpoints and accounts apart in the cache without storing the key."""
        return hashlib.sha256(f"{self.base_url}|{self.api_key}".encode()).hexdigest()[:16]

    @property
    def label(self) -> str:
        """What ``memory_index_chunks.model`` records, so vectors of two models are never compared."""
        suffix = f"@{self.dimensions}" if self.dimensions else ""
        return f"{self.provider}/{self.model}{suffix}"


LOCAL_CONFIG = EmbeddingConfig(base_url="", api_key="", model=LOCAL_MODEL, provider=LOCAL_PROVIDER)


def current_config() -> EmbeddingConfig | None:
    """The configured embedder: the endpoint when one is set, else the local model, or None (keyword-only).

    ``EMBEDDING_PROVIDER``: ``auto`` (endpoint if configured, else local), ``local``, ``openai`` or ``none``.
    """
    provider = settings.EMBEDDING_PROVIDER
    endpoint = bool(settings.EMBEDDING_BASE_URL and settings.EMBEDDING_MODEL)
    if provider == "none" or (provider == "openai" and not endpoint):
        return None
    if provider == "local" or (provider == "auto" and not endpoint):
        return LOCAL_CONFIG if local_embedder_available() else None
    return EmbeddingConfig(
        base_url=settings.EMBEDDING_BASE_URL,
        api_key=settings.EMBEDDING_API_KEY,
        model=settings.EMBEDDING_MODEL,
        dimensions=settings.EMBEDDING_DIMENSIONS,
        timeout_s=settings.EMBEDDING_TIMEOUT_S,
        max_retries=settings.EMBEDDING_MAX_RETRIES,
    )


class LocalEmbedder:
    """WordLlama's in-wheel model: ``embed(texts)`` -> unit-length float32 rows (mean of the token vectors).

    The same vectors as ``WordLlamaInference.embed(texts, norm=True)``, computed without padding: the library
    pools a padded (texts × longest × 256) block, which for 512-token chunks spends most of its time on zeros.
    Each text's token rows are gathered and summed on their own (a few KB that stay in the CPU cache): one
    gather of every token of a batch wrote a (tokens × 256) block through memory and was most of the build's
    embedding time (issue 22, profiled: 2.7 s gather + 2.5 s ``reduceat`` for 20k chunks, now 0.2 s). The
    tokenizer's ``encode_batch_fast`` skips the character offsets that pooling never reads (2x faster).
    """

    def __init__(self, model: object, *, label: str = LOCAL_MODEL):
        from tokenizers import Tokenizer

        self.model = model
        self.label = label
        self.table: np.ndarray = model.embedding  # type: ignore[attr-defined]
        self.dims = int(self.table.shape[1])
        self.tokenizer = Tokenizer.from_str(model.tokenizer.to_str())  # type: ignore[attr-defined]
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()
        encode = getattr(self.tokenizer, "encode_batch_fast", None) or self.tokenizer.encode_batch
        self._encode = encode

    def embed(self, texts: Sequence[str], *, batch_size: int = 1024) -> np.ndarray:
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        table, top = self.table, self.table.shape[0] - 1
        for start in range(0, len(texts), batch_size):
            encoded = self._encode(list(texts[start : start + batch_size]), add_special_tokens=False)
            for row, item in enumerate(encoded, start=start):
                ids = np.asarray(item.ids, dtype=np.int64)
                if ids.size:
                    np.clip(ids, 0, top, out=ids)
                    out[row] = table[ids].sum(axis=0) / ids.size
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        out /= np.where(norms == 0, 1, norms)
        return out


_local: LocalEmbedder | None = None
_local_error: str | None = None
_local_lock = threading.Lock()


def load_local_embedder() -> LocalEmbedder:
    """The local embedding model, loaded once per process from the installed ``wordllama`` wheel.

    Shared by recall and anything else that wants sentence vectors without a server (near-duplicate
    detection). Downloads are disabled: the weights and tokenizer are read from the package's own folder
    (WordLlama looks for the tokenizer under ``<package>/tokenizers/`` only as a cache folder, so the
    package folder is passed as the cache). Raises EmbeddingError when the package is missing or broken.
    """
    global _local, _local_error
    if _local is not None:
        return _local
    with _local_lock:
        if _local is not None:
            return _local
        try:
            import wordllama
            from wordllama import WordLlama

            model = WordLlama.load(
                config="l2_supercat", dim=256, cache_dir=Path(wordllama.__file__).parent, disable_download=True
            )
        except Exception as exc:  # noqa: BLE001 - ImportError, a missing file, a broken wheel: all "not available".
            _local_error = f"the local embedding model cannot load: {exc}"
            raise EmbeddingError(_local_error) from exc
        _local = LocalEmbedder(model)
        return _local


def local_embedder_available() -> bool:
    """Whether the local model loads (tried once per process; a failure is logged once)."""
    if _local is not None:
        return True
    if _local_error is not None:
        return False
    try:
        load_local_embedder()
    except EmbeddingError as exc:
        logger.warning("%s; recall is keyword-only unless an endpoint is configured", exc)
        return False
    return True


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def to_blob(vector: Sequence[float] | np.ndarray) -> bytes:
    return np.asarray(vector, dtype=np.float32).tobytes()


def from_blob(blob: bytes | memoryview) -> np.ndarray:
    return np.frombuffer(bytes(blob), dtype=np.float32)


@lru_cache(maxsize=8)
def _client(config: EmbeddingConfig):  # noqa: ANN202 - openai.OpenAI, imported lazily.
    from openai import OpenAI

    # Local servers (Ollama, vLLM) take any key; the SDK refuses to start without one.
    return OpenAI(
        base_url=config.base_url,
        api_key=config.api_key or "unused",
        timeout=config.timeout_s,
        max_retries=config.max_retries,
    )


def batches(texts: Sequence[str], *, size: int, max_tokens: int) -> Iterable[list[int]]:
    """Indexes of ``texts`` in groups of at most ``size`` texts and ``max_tokens`` estimated tokens."""
    group: list[int] = []
    tokens = 0
    for index, text in enumerate(texts):
        cost = estimate_tokens(text)
        if group and (len(group) >= size or tokens + cost > max_tokens):
            yield group
            group, tokens = [], 0
        group.append(index)
        tokens += cost
    if group:
        yield group


def embed_texts(texts: Sequence[str], *, config: EmbeddingConfig) -> list[np.ndarray]:
    """One vector per text, in order, batched; raises EmbeddingError when the endpoint fails."""
    if config.is_local:
        return list(load_local_embedder().embed(texts))
    import openai

    vectors: list[np.ndarray] = [np.empty(0, dtype=np.float32)] * len(texts)
    extra = {"dimensions": config.dimensions} if config.dimensions else {}
    for group in batches(
        texts, size=max(1, settings.EMBEDDING_BATCH_SIZE), max_tokens=settings.EMBEDDING_BATCH_MAX_TOKENS
    ):
        inputs = [texts[i] or " " for i in group]  # Some servers refuse an empty string.
        try:
            response = _client(config).embeddings.create(
                model=config.model, input=inputs, encoding_format="float", **extra
            )
        except openai.OpenAIError as exc:
            raise EmbeddingError(f"embedding endpoint failed: {exc}") from exc
        data = sorted(response.data, key=lambda item: item.index)
        if len(data) != len(inputs):
            raise EmbeddingError(f"asked for {len(inputs)} embeddings, got {len(data)}")
        for position, item in zip(group, data, strict=True):
            vector = np.asarray(item.embedding, dtype=np.float32)
            if vector.ndim != 1 or not vector.size or not np.all(np.isfinite(vector)):
                raise EmbeddingError("the endpoint returned an empty or non-finite vector")
            vectors[position] = vector
    sizes = {v.size for v in vectors}
    if len(sizes) > 1:
        raise EmbeddingError(f"the endpoint returned vectors of different sizes: {sorted(sizes)}")
    return vectors


@dataclass
class CacheStats:
    hits: int = 0
    embedded: int = 0


def embed_with_cache(
    items: Sequence[tuple[str, str]], *, config: EmbeddingConfig, stats: CacheStats | None = None
) -> dict[str, bytes]:
    """``(hash, text)`` pairs -> ``{hash: float32 blob}``: cached vectors first, the endpoint for the rest.

    New vectors are stored in the cache before returning. Raises EmbeddingError (nothing cached then).
    """
    stats = stats if stats is not None else CacheStats()
    if config.is_local:
        unique = dict(items)
        vectors = load_local_embedder().embed(list(unique.values()))
        stats.embedded += len(unique)
        return {digest: vectors[i].tobytes() for i, digest in enumerate(unique)}
    wanted: dict[str, str] = {}
    for digest, text in items:
        wanted.setdefault(digest, text)
    found: dict[str, bytes] = {}
    hashes = list(wanted)
    for start in range(0, len(hashes), _LOOKUP_BATCH):
        rows = EmbeddingCache.objects.filter(
            provider=PROVIDER,
            model=config.model,
            provider_key=config.provider_key,
            hash__in=hashes[start : start + _LOOKUP_BATCH],
        ).values_list("hash", "embedding", "dims")
        for digest, blob, dims in rows:
            if not config.dimensions or dims == config.dimensions:
                found[digest] = bytes(blob)
    stats.hits += len(found)
    if found:  # Least recently used is what pruning removes: a hit counts as a use.
        touched = list(found)
        for start in range(0, len(touched), _LOOKUP_BATCH):
            EmbeddingCache.objects.filter(
                provider=PROVIDER,
                model=config.model,
                provider_key=config.provider_key,
                hash__in=touched[start : start + _LOOKUP_BATCH],
            ).update(updated_at=timezone.now())
    missing = [digest for digest in hashes if digest not in found]
    if missing:
        vectors = embed_texts([wanted[d] for d in missing], config=config)
        now = timezone.now()
        rows = []
        for digest, vector in zip(missing, vectors, strict=True):
            blob = to_blob(vector)
            found[digest] = blob
            rows.append(
                EmbeddingCache(
                    provider=PROVIDER,
                    model=config.model,
                    provider_key=config.provider_key,
                    hash=digest,
                    embedding=blob,
                    dims=vector.size,
                    updated_at=now,
                )
            )
        EmbeddingCache.objects.bulk_create(rows, batch_size=500, ignore_conflicts=True)
        stats.embedded += len(missing)
    return found


def prune_embedding_cache(*, max_entries: int | None = None) -> int:
    """Keep ``embedding_cache`` to ``EMBEDDING_CACHE_MAX_ENTRIES`` rows (seed 003): the least recently used go.

    "Used" is ``updated_at``: set when a vector is stored and again whenever an index run finds it in the cache.
    Returns the number of rows deleted. ``0`` or less keeps everything.
    """
    limit = settings.EMBEDDING_CACHE_MAX_ENTRIES if max_entries is None else max_entries
    if limit <= 0:
        return 0
    boundary = (
        EmbeddingCache.objects.order_by("-updated_at", "-id").values_list("updated_at", "id")[limit : limit + 1].first()
    )
    if boundary is None:
        return 0
    stamp, row_id = boundary
    deleted, _ = EmbeddingCache.objects.filter(Q(updated_at__lt=stamp) | Q(updated_at=stamp, id__lte=row_id)).delete()
    if deleted:
        logger.info("embedding cache: pruned %d least recently used vector(s), kept %d", deleted, limit)
    return deleted


_QUERY_CACHE: dict[tuple[EmbeddingConfig, str], np.ndarray] = {}
_QUERY_CACHE_SIZE = 256
# A recall waits for its query's vector: a short timeout, one retry, and after a failure the endpoint is
# left alone for a while (recall answers keyword-only meanwhile) rather than making every request wait.
QUERY_TIMEOUT_S = 10.0
QUERY_BACKOFF_S = 30.0
_query_endpoint_down_until: dict[EmbeddingConfig, float] = {}


def embed_query(text: str, *, config: EmbeddingConfig) -> np.ndarray:
    """The query's vector; raises EmbeddingError (at once while a recent failure is being waited out).

    Kept in a small per-process cache, not in ``embedding_cache``: a read must not write to the database.
    """
    if config.is_local:
        return load_local_embedder().embed([text])[0]
    key = (config, text)
    vector = _QUERY_CACHE.get(key)
    if vector is not None:
        return vector
    if _query_endpoint_down_until.get(config, 0.0) > time.monotonic():
        raise EmbeddingError("the endpoint failed moments ago; retrying it shortly")
    quick = replace(config, timeout_s=min(config.timeout_s, QUERY_TIMEOUT_S), max_retries=min(config.max_retries, 1))
    try:
        vector = embed_texts([text], config=quick)[0]
    except EmbeddingError:
        _query_endpoint_down_until[config] = time.monotonic() + QUERY_BACKOFF_S
        raise
    _query_endpoint_down_until.pop(config, None)
    if len(_QUERY_CACHE) >= _QUERY_CACHE_SIZE:
        _QUERY_CACHE.pop(next(iter(_QUERY_CACHE)))
    _QUERY_CACHE[key] = vector
    return vector
