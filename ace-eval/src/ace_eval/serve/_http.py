"""The HTTP side of `ace-eval serve`: OTLP/HTTP `POST /v1/traces`, `POST /v1/feedback`, `GET /healthz`,
`GET /v1/status`, `GET /metrics`, `GET /v1/skillbook`, `GET /v1/skills`; bearer-token check (constant time), body
limit, socket timeout.

Answers follow the OTLP/HTTP specification: 200 with an `ExportTraceServiceResponse` in the request's encoding
(`partial_success` when some spans were refused), 400 with a `google.rpc.Status` naming the reason, 413 over the
body limit, 429 / 503 with `Retry-After` when the inbox is full or the server is stopping.
"""

from __future__ import annotations

import hmac
import json
import math
from http.server import BaseHTTPRequestHandler
from typing import Any, Protocol

from google.protobuf.json_format import MessageToDict
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from ace.redaction import Redactor
from ace_eval.serve._assembly import Assembler, Feedback
from ace_eval.serve._connections import Connections
from ace_eval.serve._decode import BadRequest, Decoder, TooLarge
from ace_eval.serve._inbox import Inbox, InboxClosed, InboxFull
from ace_eval.serve._skills import SkillQueryError, SkillsSelector, parse_skill_query
from ace_eval.store import SkillbookStore

__all__ = ["ServeApp", "make_handler"]


class ServeApp(Protocol):
    """What the handler needs of the running service (`ace_eval.serve.ServeApp`)."""

    token: str | None
    max_body: int
    retry_after: int
    redactor: Redactor | None
    inbox: Inbox
    assembler: Assembler
    connections: Connections
    store: SkillbookStore
    skills: SkillsSelector

    def count(self, name: str) -> None: ...

    def status(self) -> dict[str, object]: ...

    def metrics(self) -> str: ...


_PROTOBUF, _JSON = "application/x-protobuf", "application/json"


def make_handler(app: ServeApp) -> type[BaseHTTPRequestHandler]:
    """A request handler class bound to `app`."""

    class Handler(_Handler):
        pass

    Handler.app = app
    Handler.decoder = Decoder(app.redactor, limit=app.max_body)
    return Handler


class _Handler(BaseHTTPRequestHandler):
    app: ServeApp
    decoder: Decoder
    protocol_version = "HTTP/1.1"
    timeout = 30  # a client that stops sending mid-request is dropped
    server_version = "ace-eval-serve"

    def setup(self) -> None:
        super().setup()
        self.app.connections.opened(self)

    def finish(self) -> None:
        self.app.connections.closed(self)
        super().finish()

    def handle_one_request(self) -> None:
        """One request; a connection kept alive is closed after it once the server is stopping."""
        super().handle_one_request()
        self.app.connections.idle(self)
        if self.app.connections.stopping:
            self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        """No access log: request lines are not logged (a query string could hold a secret)."""

    # -- plumbing -----------------------------------------------------------------------------------------------
    def _send(self, status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, payload: object, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(payload, ensure_ascii=False).encode("utf-8"), _JSON, headers)

    def _status(self, status: int, message: str, *, protobuf: bool, headers: dict[str, str] | None = None) -> None:
        """An error answer as OTLP wants it: a `google.rpc.Status` in the request's encoding."""
        code = {400: 3, 401: 16, 404: 5, 413: 8, 429: 8, 503: 14}.get(status, 2)
        if protobuf:
            self._send(status, Status(code=code, message=message).SerializeToString(), _PROTOBUF, headers)
        else:
            self._json(status, {"code": code, "message": message}, headers)

    def _authorized(self) -> bool:
        token = self.app.token
        if token is None:
            return True
        sent = (self.headers.get("Authorization") or "").encode("utf-8", "replace")
        return hmac.compare_digest(sent, f"Bearer {token}".encode())

    def _body(self, protobuf: bool) -> bytes | None:
        """The request body within the limit, else None after answering 411 / 413."""
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            self.close_connection = True
            self._status(411, "send a Content-Length", protobuf=protobuf)
            return None
        if int(length) > self.app.max_body:
            self.close_connection = True  # the body is not read
            self._status(413, f"the body is over {self.app.max_body} bytes", protobuf=protobuf)
            return None
        return self.rfile.read(int(length))

    # -- routes ---------------------------------------------------------------------------------------------
    def do_GET(self) -> None:
        self.app.connections.busy(self)
        path = self.path.split("?", 1)[0]
        if path == "/healthz":
            self._send(200, b"ok\n", "text/plain; charset=utf-8")
            return
        if not self._authorized():
            self._json(401, {"error": "send Authorization: Bearer <token>"}, {"WWW-Authenticate": "Bearer"})
            return
        if path == "/v1/skillbook":
            self._skillbook()
        elif path == "/v1/skills":
            self._skills()
        elif path == "/v1/status":
            self._json(200, self.app.status())
        elif path == "/metrics":
            self._send(200, self.app.metrics().encode("utf-8"), "text/plain; version=0.0.4; charset=utf-8")
        else:
            self._json(404, {"error": f"no such endpoint: {path[:80]}"})

    def _skillbook(self) -> None:
        """The current version's skillbook JSON; `ETag` is the version number, `If-None-Match` with it gives 304."""
        store = self.app.store
        number = store.current_number()
        if number is None:
            self._json(
                404,
                {"error": f"no version published yet: publish one (ace-eval skillbook publish ... --to {store.root})"},
            )
            return
        etag = f'"{number}"'
        sent = [tag.strip().removeprefix("W/") for tag in (self.headers.get("If-None-Match") or "").split(",")]
        if etag in sent or "*" in sent:
            self.send_response(304)
            self.send_header("ETag", etag)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = store.skillbook_path(number).read_bytes()
        self._send(200, body, _JSON, {"ETag": etag, "Cache-Control": "no-cache"})

    def _skills(self) -> None:
        """The skills `SkillInstructions` selects for `?query=` within `max_tokens`, from the current version."""
        try:
            query, max_tokens = parse_skill_query(self.path.partition("?")[2])
        except SkillQueryError as e:
            self._json(400, {"error": str(e)})
            return
        selected = self.app.skills.select(query, max_tokens)
        if selected is None:
            self._json(
                404, {"error": "no version published yet: serve publishes one after --publish-every learned traces"}
            )
            return
        self._send(
            200, json.dumps(selected, ensure_ascii=False).encode("utf-8"), _JSON, {"ETag": f'"{selected["version"]}"'}
        )

    def do_POST(self) -> None:
        self.app.connections.busy(self)
        path = self.path.split("?", 1)[0]
        content_type = self.headers.get("Content-Type") or ""
        protobuf = content_type.split(";", 1)[0].strip().lower() == _PROTOBUF
        if not self._authorized():
            self.close_connection = True
            self._status(
                401, "send Authorization: Bearer <token>", protobuf=protobuf, headers={"WWW-Authenticate": "Bearer"}
            )
            return
        if path not in ("/v1/traces", "/v1/feedback"):
            self.close_connection = True
            self._status(404, f"no such endpoint: {path[:80]}", protobuf=protobuf)
            return
        body = self._body(protobuf)
        if body is None:
            return
        if path == "/v1/traces":
            self._traces(body, content_type, protobuf)
        else:
            self._feedback(body)

    def _traces(self, body: bytes, content_type: str, protobuf: bool) -> None:
        app = self.app
        try:
            decoded = self.decoder.decode(
                body, content_type=content_type, content_encoding=self.headers.get("Content-Encoding") or ""
            )
            app.inbox.append(decoded.payload, len(decoded.spans), encoding=decoded.encoding, parsed=decoded.spans)
        except BadRequest as e:
            app.count("requests_rejected")
            self._status(400, str(e)[:2000], protobuf=protobuf)
            return
        except TooLarge as e:
            app.count("requests_rejected")
            self._status(413, str(e), protobuf=protobuf)
            return
        except InboxFull as e:
            app.count("requests_throttled")
            self._status(429, str(e), protobuf=protobuf, headers={"Retry-After": str(app.retry_after)})
            return
        except InboxClosed as e:
            self._status(503, str(e), protobuf=protobuf, headers={"Retry-After": str(app.retry_after)})
            return
        app.count("requests_accepted")
        response = ExportTraceServiceResponse()
        if decoded.rejected:
            response.partial_success.rejected_spans = decoded.rejected
            response.partial_success.error_message = decoded.reason[:2000]
        if protobuf:
            self._send(200, response.SerializeToString(), _PROTOBUF)
        else:
            self._json(200, MessageToDict(response))

    def _feedback(self, body: bytes) -> None:
        try:
            feedback = _parse_feedback(body)
        except BadRequest as e:
            self._json(400, {"error": str(e)})
            return
        if self.app.redactor is not None and feedback.feedback:
            text = self.app.redactor.redact_data(feedback.feedback, numbered=False)[0]
            feedback = Feedback(feedback.trace_id, feedback.reward, str(text))
        self._json(200, {"trace_id": feedback.trace_id, "state": self.app.assembler.add_feedback(feedback)})


def _parse_feedback(body: bytes) -> Feedback:
    """`{"trace_id": hex, "reward": number, "feedback": text}` (one of reward and feedback at least)."""
    try:
        raw = json.loads(body)
    except (ValueError, UnicodeDecodeError) as e:
        raise BadRequest(f"malformed JSON: {e}") from None
    if not isinstance(raw, dict):
        raise BadRequest('send an object: {"trace_id": "<32 hex digits>", "reward": 1.0, "feedback": "..."}')
    unknown = sorted(set(raw) - {"trace_id", "reward", "feedback"})
    if unknown:
        raise BadRequest(f"unknown fields {unknown}: send trace_id, reward, feedback")
    trace_id = raw.get("trace_id")
    if not isinstance(trace_id, str) or len(trace_id) != 32 or not all(c in "0123456789abcdefABCDEF" for c in trace_id):
        raise BadRequest(f"trace_id must be the OTel trace id in 32 hex digits, got {trace_id!r:.40}")
    reward, text = raw.get("reward"), raw.get("feedback")
    if reward is not None and (
        isinstance(reward, bool) or not isinstance(reward, int | float) or not math.isfinite(reward)
    ):
        raise BadRequest(f"reward must be a finite number, got {reward!r:.40}")
    if text is not None and not isinstance(text, str):
        raise BadRequest("feedback must be a string")
    if reward is None and not text:
        raise BadRequest("send a reward, a feedback text, or both")
    return Feedback(trace_id.lower(), None if reward is None else float(reward), text)
