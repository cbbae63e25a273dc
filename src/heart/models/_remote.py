"""What the API providers share: the SDK loaded on first use, the key from the environment,
the engine (not the SDK) in charge of retries, and the client closed at the end."""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar, cast

from heart.config import ModelSpec
from heart.models._batch import BatchAPI
from heart.models._errors import ModelCallError, translate_error
from heart.models._keys import api_key
from heart.models._protocol import ChatModel

P = ParamSpec("P")
T = TypeVar("T")


class RemoteModel:
    """Base of the HTTP providers; subclasses say which SDK client to build. A model served by
    several replicas is named by its first; each replica is a model of its own, reaching one
    server, that the engine sends calls to."""

    install_hint = ""

    def __init__(self, spec: ModelSpec) -> None:
        self.model = spec.model
        self.endpoint = spec.endpoint
        urls = spec.replicas
        replicas = (self,) if len(urls) == 1 else tuple(type(self)(spec.at(u)) for u in urls)
        for replica in replicas:
            replica._owner = self if len(replicas) > 1 else None
        self.replicas = cast("tuple[ChatModel, ...]", replicas)  # each a subclass's ChatModel
        self.context_window: int | None = None  # the server's own
        self.batches: BatchAPI | None = None  # set by subclasses whose provider has one
        self._spec = spec
        self._client: Any = None
        self._http: Any = None  # the HTTP client this model's replicas share
        self._owner: RemoteModel | None = None
        self._secret = ""

    def _new_client(self, secret: str, http: Any) -> Any:
        """Import the SDK and build its async client with SDK retries off, over the HTTP client
        ``http`` (None: the SDK's own)."""
        raise NotImplementedError

    def _new_http(self) -> Any:
        """A new HTTP client with the SDK's defaults, for replicas to share."""
        raise NotImplementedError

    def _connect(self) -> Any:
        if self._client is None:
            self._secret = api_key(self._spec)
            try:
                http = None
                if self._owner is not None:  # one connection pool for every replica
                    if self._owner._http is None:
                        self._owner._http = self._new_http()
                    http = self._owner._http
                self._client = self._new_client(self._secret, http)
            except ImportError:
                raise ModelCallError(self.install_hint, retryable=False) from None
        return self._client

    def failure(self, exc: Exception) -> ModelCallError:
        """What an SDK exception means for the engine, the API key redacted."""
        if isinstance(exc, ModelCallError):
            return exc
        return translate_error(exc, [self._secret])

    async def aclose(self) -> None:
        """Close the client; the next call opens a new one (each engine run has its own event
        loop, and a client belongs to the loop it was opened on)."""
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()
        for replica in self.replicas:
            if id(replica) != id(self):
                await replica.aclose()
        if self._http is not None:
            http, self._http = self._http, None
            await http.aclose()


class _OfModel(Protocol):
    @property
    def model(self) -> RemoteModel: ...


S = TypeVar("S", bound=_OfModel)


def translated(
    method: Callable[Concatenate[S, P], Coroutine[Any, Any, T]],
) -> Callable[Concatenate[S, P], Coroutine[Any, Any, T]]:
    """A batch API method whose SDK errors become ModelCallErrors, as in live calls."""

    @functools.wraps(method)
    async def wrapper(self: S, /, *args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return await method(self, *args, **kwargs)
        except Exception as exc:
            raise self.model.failure(exc) from None

    return wrapper
