"""The HTTP/1.1 front of a worker: asyncio owns every connection from accept to close and
hands only complete requests to the Flask application, which runs on a thread pool.

Why: with gunicorn's gthread worker the TLS handshake and the reading of the request ran on
the worker's few threads, so eight connections that never finished a request stopped
admission (issue 14). Here a connection costs a coroutine, not a thread, until its request
is complete, and each phase has its own deadline, like Go's `http.Server` (net/http/server.go:
the TLS handshake deadline, `ReadHeaderTimeout`, `IdleTimeout`, `WriteTimeout`):

* handshake: from accept to the end of the TLS handshake (no ClientHello, a stalled handshake);
* header: from the end of the handshake, or from the first byte of a kept-alive connection's
  next request, to the end of the request head (silence, half the headers);
* body: from the end of the head to the end of the body (a body trickled a byte at a time);
  the application answers 408 and the connection is closed;
* idle: a kept-alive connection waiting for its next request;
* write: a response the client does not read.

A connection that misses the handshake or header deadline is closed without an answer, as Go
does: no request was made. A response that leaves the request body unread (413, 408) says
`Connection: close`, and the connection is closed after the client's data is drained (a close
with unread data would be a TCP reset, which can destroy the response before the client reads
it). HTTP/1.1 is parsed by h11; the WSGI environ follows PEP 3333.
"""
from __future__ import annotations

import asyncio
import io
import json
import logging
import ssl
import sys
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any, Callable
from urllib.parse import unquote_to_bytes

import h11


MAX_HEAD_BYTES = 64 * 1024         # request line and headers; the API server sends well under 2 KiB
CLOSE_LINGER_SECONDS = 2.0         # draining a closing connection's unread data, at most
DRAIN_MAX_BYTES = 16 * 1024 * 1024  # and at most this much of a body refused for its size
STOP_LINGER_SECONDS = 2.0          # a stopping worker keeps idle connections this long, at most
READ_SIZE = 64 * 1024


@dataclass(frozen=True)
class Timeouts:
    """Seconds per phase of a connection (module docstring). The defaults: the API server
    gives up on a webhook after its `timeoutSeconds` (5 in deploy/webhook), so a handshake,
    head or body slower than that serves nobody. `idle` is longer than the API server's own
    idle timeout for kept-alive connections (90 s: `IdleConnTimeout` that k8s.io/apimachinery
    pkg/util/net/http.go `SetTransportDefaults` sets), so the API server, not numaguard,
    closes idle connections and never sends a review on one being closed."""
    handshake: float = 5.0
    header: float = 5.0
    body: float = 5.0
    idle: float = 120.0
    write: float = 10.0


@dataclass(frozen=True)
class Listener:
    role: str                                        # tls.REVIEW or tls.PROBE
    port: int
    context: Callable[[], ssl.SSLContext | None]     # asked on every connection (rotation)
    pool: Executor                                   # runs the application


class _Body(io.BytesIO):
    """`wsgi.input`: the body as received. When the body deadline passed first, reading it
    raises TimeoutError (an OSError), which the application answers with 408."""

    def __init__(self, data: bytes, timed_out: bool) -> None:
        super().__init__(data)
        self.timed_out = timed_out

    def read(self, size: int | None = -1) -> bytes:
        if self.timed_out:
            raise TimeoutError("the request body did not arrive in time")
        return super().read(size)


class Front:
    """Serves the connections of one worker (one asyncio loop)."""

    def __init__(self, app: Callable, timeouts: Timeouts, max_body: int, max_connections: int = 1024,
                 dropped: Callable[[str, str], None] = lambda role, reason: None,
                 log: logging.Logger | None = None) -> None:
        self.app, self.timeouts, self.max_body = app, timeouts, max_body
        self.max_connections = max_connections
        self.dropped = dropped                  # (role, reason): a connection closed without a request
        self.log = log or logging.getLogger("numaguard.webhook.front")
        self.tasks: set[asyncio.Task] = set()
        self.stopping = False
        self._idle: set[asyncio.Timeout] = set()
        # At max_connections (each costs memory, ~45 KiB with TLS) a connection is given up to
        # make room: the oldest that has not yet sent a whole request, else the oldest kept
        # alive and waiting for its next one (its client just connects again).
        # Each port counts its own, so a flood of the review port never displaces a probe.
        self._open: dict[str, int] = {}
        self._unproven: dict[str, dict[asyncio.Task, asyncio.StreamWriter]] = {}
        self._waiting: dict[str, dict[asyncio.Task, asyncio.StreamWriter]] = {}

    def stop(self) -> None:
        """Graceful stop: requests in progress finish; every response says Connection: close;
        idle kept-alive connections are closed within STOP_LINGER_SECONDS (a review that
        arrives meanwhile is answered, not dropped)."""
        self.stopping = True
        deadline = asyncio.get_running_loop().time() + STOP_LINGER_SECONDS
        for timer in self._idle:
            when = timer.when()
            if when is None or when > deadline:
                timer.reschedule(deadline)

    async def connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                         listener: Listener) -> None:
        task, role = asyncio.current_task(), listener.role
        if self._open.get(role, 0) >= self.max_connections and not self._evict(role):
            self.dropped(role, "over-capacity")      # every connection is busy with a request
            writer.transport.abort()
            return
        self.tasks.add(task)
        self._open[role] = self._open.get(role, 0) + 1
        self._unproven.setdefault(role, {})[task] = writer
        try:
            await self._serve(reader, writer, listener)
        except Exception:        # a bug here must cost one connection, never the worker
            self.log.exception("connection on the %s port failed", role)
        finally:
            self.tasks.discard(task)
            self._open[role] -= 1
            self._unproven[role].pop(task, None)
            self._waiting.get(role, {}).pop(task, None)
            if not writer.is_closing():
                writer.transport.abort()

    def _evict(self, role: str) -> bool:
        """At max_connections: close the oldest connection that has not sent a whole request
        yet (a slow client: the API server's requests arrive in milliseconds), else the oldest
        idle kept-alive one. False when every connection is in the middle of a request."""
        for group in (self._unproven.get(role), self._waiting.get(role)):
            if group:
                writer = group.pop(next(iter(group)))
                self.dropped(role, "evicted")
                writer.transport.abort()
                return True
        return False

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                     listener: Listener) -> None:
        t = self.timeouts
        context = listener.context()
        if context is None:
            writer.transport.abort()
            return
        try:
            async with asyncio.timeout(t.handshake):
                await writer.start_tls(context, ssl_handshake_timeout=t.handshake)
        except TimeoutError:
            self.dropped(listener.role, "handshake-timeout")
            writer.transport.abort()
            return
        except ssl.SSLError as e:
            # OpenSSL's reason names the cause an operator can act on: tls-no-shared-cipher (a
            # client with CBC suites only), tls-unsupported-protocol (TLS 1.1, or 1.2 under
            # --tls-min-version 1.3), tls-peer-did-not-return-a-certificate (--client-ca),
            # tls-certificate-verify-failed (a client certificate from another CA). asyncio
            # closes without sending the alert, so the client sees only the connection end.
            self.dropped(listener.role, "tls-" + (e.reason or "handshake-failed").lower().replace("_", "-"))
            writer.transport.abort()
            return
        except (OSError, ConnectionError):
            self.dropped(listener.role, "tls-handshake-failed")
            writer.transport.abort()
            return
        peer = writer.get_extra_info("peername") or ("", 0)
        client_cert = _subject_cn(writer.get_extra_info("peercert"))
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD_BYTES)
        first = True
        while True:
            request = await self._read_head(conn, reader, writer, listener, first)
            if request is None:
                return
            first = False
            body = await self._read_body(conn, reader, writer, request)
            if body is None:              # the client went away mid-body
                writer.transport.abort()
                return
            self._unproven[listener.role].pop(asyncio.current_task(), None)
            environ = _environ(request, body, listener, peer, client_cert)
            loop = asyncio.get_running_loop()
            status, headers, payload = await loop.run_in_executor(listener.pool, self._call_app, environ)
            close = self.stopping or conn.their_state is not h11.DONE
            if close:
                headers = [(k, v) for k, v in headers if k.lower() != "connection"] + [("Connection", "close")]
            if not await self._send(conn, writer, status, headers, payload):
                return
            if conn.our_state is h11.MUST_CLOSE or close:
                # A body refused for its size may still be on its way: take it in before the
                # close, so the client that sends it all before reading gets the 413 too.
                await self._close(reader, writer, drain=conn.their_state is not h11.DONE and not body.timed_out)
                return
            conn.start_next_cycle()

    async def _read_head(self, conn: h11.Connection, reader: asyncio.StreamReader,
                         writer: asyncio.StreamWriter, listener: Listener, first: bool) -> h11.Request | None:
        if not first and not conn.trailing_data[0]:
            # Kept alive: wait for the next request's first bytes (idle timeout).
            try:
                async with asyncio.timeout(self.timeouts.idle if not self.stopping else STOP_LINGER_SECONDS) as timer:
                    self._idle.add(timer)
                    waiting = self._waiting.setdefault(listener.role, {})
                    waiting[asyncio.current_task()] = writer
                    try:
                        data = await reader.read(READ_SIZE)
                    finally:
                        self._idle.discard(timer)
                        waiting.pop(asyncio.current_task(), None)
            except TimeoutError:
                await self._close(reader, writer)
                return None
            except (OSError, ssl.SSLError):
                return None
            conn.receive_data(data)
        try:
            async with asyncio.timeout(self.timeouts.header):
                event = conn.next_event()
                while event is h11.NEED_DATA:
                    conn.receive_data(await reader.read(READ_SIZE))
                    event = conn.next_event()
        except TimeoutError:
            self.dropped(listener.role, "header-timeout")
            await self._close(reader, writer)
            return None
        except h11.RemoteProtocolError as e:
            self.dropped(listener.role, "malformed-request")
            await self._refuse(writer, e.error_status_hint, str(e))
            await self._close(reader, writer, drain=True)     # the rest of a head too large may be on its way
            return None
        except (OSError, ssl.SSLError):
            return None
        if isinstance(event, h11.Request):
            return event
        await self._close(reader, writer)     # ConnectionClosed before a request: the client is done
        return None

    async def _read_body(self, conn: h11.Connection, reader: asyncio.StreamReader,
                         writer: asyncio.StreamWriter, request: h11.Request) -> _Body | None:
        """The whole body, or as much as arrived before the body deadline, or an empty one when
        Content-Length is already over the limit (the application answers 413 from the header
        alone). None when the client closed the connection mid-body."""
        length = _content_length(request)
        if length is not None and length > self.max_body:
            return _Body(b"", timed_out=False)
        if conn.client_is_waiting_for_100_continue:
            writer.write(conn.send(h11.InformationalResponse(status_code=100, headers=[])))
        chunks: list[bytes] = []
        received = 0
        try:
            async with asyncio.timeout(self.timeouts.body):
                while True:
                    event = conn.next_event()
                    if event is h11.NEED_DATA:
                        conn.receive_data(await reader.read(READ_SIZE))
                    elif isinstance(event, h11.Data):
                        chunks.append(bytes(event.data))
                        received += len(event.data)
                        if received > self.max_body:     # a chunked body over the limit: 413
                            break
                    elif isinstance(event, h11.EndOfMessage):
                        break
                    else:
                        return None
        except TimeoutError:
            return _Body(b"".join(chunks), timed_out=True)
        except h11.RemoteProtocolError:
            return None
        except (OSError, ssl.SSLError):
            return None
        return _Body(b"".join(chunks), timed_out=False)

    def _call_app(self, environ: dict[str, Any]) -> tuple[str, list[tuple[str, str]], bytes]:
        """Run the WSGI application to completion (on the pool's thread)."""
        response: list[Any] = []
        chunks: list[bytes] = []

        def start_response(status: str, headers: list, exc_info: Any = None) -> Callable[[bytes], None]:
            if exc_info and response:
                raise exc_info[1].with_traceback(exc_info[2])
            response[:] = [status, headers]
            return chunks.append

        try:
            result = self.app(environ, start_response)
            try:
                chunks.extend(result)
            finally:
                if hasattr(result, "close"):
                    result.close()
        except Exception:        # Flask answers its own errors; this is a bug in the application
            self.log.exception("the application failed on %s", environ.get("PATH_INFO"))
            return "500 Internal Server Error", [("Content-Type", "application/json")], \
                b'{"error":"internal-error","message":"the server failed; see its log"}'
        return response[0], response[1], b"".join(chunks)

    async def _send(self, conn: h11.Connection, writer: asyncio.StreamWriter, status: str,
                    headers: list[tuple[str, str]], payload: bytes) -> bool:
        code, _, reason = status.partition(" ")
        try:
            data = conn.send(h11.Response(status_code=int(code), headers=headers, reason=reason.encode("latin-1")))
            data += conn.send(h11.Data(data=payload)) if payload else b""
            data += conn.send(h11.EndOfMessage())
            writer.write(data)
            async with asyncio.timeout(self.timeouts.write):
                await writer.drain()
        except (TimeoutError, OSError, ssl.SSLError, h11.LocalProtocolError):
            writer.transport.abort()
            return False
        return True

    async def _refuse(self, writer: asyncio.StreamWriter, status: int, message: str) -> None:
        """A request h11 cannot parse: a JSON error like the application's, then close."""
        body = json.dumps({"error": "bad-request", "message": message[:200]}).encode()
        head = (f"HTTP/1.1 {status} {'Request Header Fields Too Large' if status == 431 else 'Bad Request'}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n")
        try:
            writer.write(head.encode("latin-1") + body)
            async with asyncio.timeout(self.timeouts.write):
                await writer.drain()
        except (TimeoutError, OSError, ssl.SSLError):
            writer.transport.abort()

    async def _close(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, drain: bool = False) -> None:
        """Close cleanly: with `drain`, first read and drop what the client still sends (at
        most CLOSE_LINGER_SECONDS and DRAIN_MAX_BYTES), then TLS close_notify and the wait for
        the client's end, so no reset destroys a response the client has not read yet."""
        if writer.is_closing():
            return
        try:
            if drain:
                async with asyncio.timeout(CLOSE_LINGER_SECONDS):
                    left = DRAIN_MAX_BYTES
                    while left > 0:
                        chunk = await reader.read(READ_SIZE)
                        if not chunk:
                            break
                        left -= len(chunk)
        except (TimeoutError, OSError, ssl.SSLError):
            pass
        try:
            writer.close()
            async with asyncio.timeout(CLOSE_LINGER_SECONDS):
                await writer.wait_closed()
        except (TimeoutError, OSError, ssl.SSLError):
            writer.transport.abort()


def _content_length(request: h11.Request) -> int | None:
    for name, value in request.headers:
        if name == b"content-length":
            return int(value)         # h11 has checked that it is one decimal number
    return None


def _subject_cn(peercert: Any) -> str:
    """The verified client certificate's subject CN ('' without one)."""
    for rdn in (peercert or {}).get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                return value
    return ""


def _environ(request: h11.Request, body: _Body, listener: Listener, peer: tuple,
             client_cert: str) -> dict[str, Any]:
    """PEP 3333 environ for one complete request."""
    path, _, query = request.target.partition(b"?")
    environ: dict[str, Any] = {
        "REQUEST_METHOD": request.method.decode("ascii"),
        "SCRIPT_NAME": "",
        "PATH_INFO": unquote_to_bytes(path).decode("latin-1"),
        "QUERY_STRING": query.decode("latin-1"),
        "SERVER_NAME": "numaguard",
        "SERVER_PORT": str(listener.port),
        "SERVER_PROTOCOL": "HTTP/" + request.http_version.decode("ascii"),
        "REMOTE_ADDR": str(peer[0]),
        "REMOTE_PORT": str(peer[1]),
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "https",
        "wsgi.input": body,
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
        "numaguard.listener": listener.role,
        "numaguard.client_certificate": client_cert,
    }
    for raw_name, raw_value in request.headers:        # h11 gives lower-case names
        name = raw_name.decode("latin-1")
        if "_" in name:     # X_Forwarded would collide with X-Forwarded in the environ; drop it
            continue
        value = raw_value.decode("latin-1")
        key = name.upper().replace("-", "_")
        if key not in ("CONTENT_TYPE", "CONTENT_LENGTH"):
            key = "HTTP_" + key
        environ[key] = f"{environ[key]},{value}" if key in environ else value
    return environ
