"""`OpenAIServer`: pydantic-ai models behind an OpenAI-compatible `/v1/chat/completions` on 127.0.0.1.

Code that calls its models through litellm (tau2-bench's agent and user simulator) reaches a model of this process
as `openai/<name>` with `api_base=server.base_url`: the embedded offline model, or a scripted one in tests. Tools
and tool calls travel as OpenAI sends them. The server listens on the loopback interface only, on a free port,
for as long as the `with` block (or `start()` .. `stop()`) lasts; it lives in this process, so it ends with it.

```python
from pydantic_ai.models.test import TestModel
from ace.llm.openai_server import OpenAIServer

with OpenAIServer({"agent": TestModel()}) as server:
    print(server.base_url)  # http://127.0.0.1:<port>/v1, for litellm's api_base
```
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from pydantic_ai.models import Model

from ace.json_safe import JsonInputError, loads
from ace.llm._openai_wire import WireError, chat_completion, parse_chat_request

__all__ = ["LOOPBACK", "PLACEHOLDER_KEY", "OpenAIServer"]

LOOPBACK = "127.0.0.1"
PLACEHOLDER_KEY = "no-key-on-loopback"
"""What a client sends as its API key (the OpenAI SDK needs one); the server asks for none: it is loopback-only."""
_MAX_BODY = 16 << 20
_READ_TIMEOUT = 30.0
"""Seconds a client may take to send its request before it is dropped."""


class OpenAIServer:
    """`models` (served name -> pydantic-ai model) answering OpenAI chat-completions requests on 127.0.0.1.

    Requests run on one event loop of the server's own; a model that is not thread-safe (`LocalModel`) serialises
    its calls itself. Each request waits at most `request_timeout` seconds for its model.
    """

    def __init__(
        self, models: Mapping[str, Model], *, request_timeout: float = 600.0, max_body: int = _MAX_BODY
    ) -> None:
        if not models:
            raise ValueError("OpenAIServer needs at least one model to serve")
        self.models = dict(models)
        self.request_timeout = request_timeout
        self.max_body = max_body
        self.requests = 0
        """Chat completions answered (errors included)."""
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._httpd: ThreadingHTTPServer | None = None
        self._threads: list[threading.Thread] = []

    @property
    def address(self) -> tuple[str, int]:
        """The host and port listened on (after `start()`)."""
        if self._httpd is None:
            raise RuntimeError("the server is not running: call start() or use it in a with block")
        host, port = self._httpd.server_address[:2]
        return str(host), int(port)

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:<port>/v1`: litellm's `api_base` for `openai/<name>`."""
        host, port = self.address
        return f"http://{host}:{port}/v1"

    def start(self) -> None:
        """Listen on a free port of 127.0.0.1 and start answering."""
        if self._httpd is not None:
            return
        loop = asyncio.new_event_loop()
        httpd = ThreadingHTTPServer((LOOPBACK, 0), _make_handler(self))
        httpd.daemon_threads = True
        self._loop, self._httpd = loop, httpd
        self._threads = [
            threading.Thread(target=loop.run_forever, name="openai-server-loop", daemon=True),
            threading.Thread(
                target=httpd.serve_forever, kwargs={"poll_interval": 0.1}, name="openai-server", daemon=True
            ),
        ]
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        """Stop listening and close the port; a request still running gets no answer."""
        httpd, loop = self._httpd, self._loop
        if httpd is None or loop is None:
            return
        httpd.shutdown()
        httpd.server_close()
        loop.call_soon_threadsafe(loop.stop)
        for thread in self._threads:
            thread.join(timeout=5)
        loop.close()
        self._httpd, self._loop, self._threads = None, None, []

    def __enter__(self) -> OpenAIServer:
        self.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()

    def answer(self, body: object) -> tuple[int, dict[str, Any]]:
        """The status and JSON answer to one decoded chat-completions request body."""
        with self._lock:
            self.requests += 1
            number = next(self._ids)
        try:
            request = parse_chat_request(body)
        except WireError as e:
            return 400, _error(str(e), "invalid_request_error")
        model = self.models.get(request.model)
        if model is None:
            served = ", ".join(sorted(self.models))
            return 404, _error(f"model {request.model!r} is not served here; served: {served}", "model_not_found")
        assert self._loop is not None
        future = asyncio.run_coroutine_threadsafe(
            model.request(request.messages, request.settings, request.params), self._loop
        )
        try:
            response = future.result(timeout=self.request_timeout)
        except TimeoutError:
            future.cancel()
            return 504, _error(f"the model took over {self.request_timeout:g} s", "timeout")
        except Exception as e:  # the model failed: the client is told why, the server goes on
            return 500, _error(f"{type(e).__name__}: {e}", "server_error")
        completion_id = f"chatcmpl-ace-{number}"
        return 200, chat_completion(
            response, model=request.model, completion_id=completion_id, created=int(time.time())
        )


def _error(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind}}


def _make_handler(server: OpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        pass

    Handler.server_app = server
    return Handler


class _Handler(BaseHTTPRequestHandler):
    server_app: OpenAIServer
    protocol_version = "HTTP/1.1"
    timeout = _READ_TIMEOUT
    server_version = "ace-openai-server"

    def log_message(self, format: str, *args: Any) -> None:
        """No access log: the console stays the caller's."""

    def _json(self, status: int, payload: object) -> None:
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path.split("?", 1)[0].rstrip("/") == "/v1/models":
            names = sorted(self.server_app.models)
            self._json(
                200, {"object": "list", "data": [{"id": n, "object": "model", "owned_by": "ace"} for n in names]}
            )
        else:
            self._json(
                404, _error(f"no route GET {self.path}; this server answers POST /v1/chat/completions", "not_found")
            )

    def do_POST(self) -> None:
        if self.path.split("?", 1)[0].rstrip("/") != "/v1/chat/completions":
            self._json(404, _error(f"no route POST {self.path}; send POST /v1/chat/completions", "not_found"))
            return
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            self.close_connection = True
            self._json(411, _error("send a Content-Length", "invalid_request_error"))
            return
        if int(length) > self.server_app.max_body:
            self.close_connection = True  # the body is not read
            self._json(413, _error(f"the body is over {self.server_app.max_body} bytes", "invalid_request_error"))
            return
        try:
            body = loads(self.rfile.read(int(length)))
        except JsonInputError as e:
            self._json(400, _error(f"the body is not a JSON object: {e}", "invalid_request_error"))
            return
        self._json(*self.server_app.answer(body))
