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

Memory is bounded across connections, not only per request: a request head is at most
MAX_HEAD_BYTES, a body at most `max_body`, and the bodies one worker holds at once, from the
end of their head until their response is sent, at most `body_budget` bytes (`BodyBudget`).
A body that would pass the budget is not read: the application answers 503 at once (with
Retry-After), from the head alone. Bodies are read into one buffer of their declared length,
handed to the application without a copy.

At `max_connections` a connection is given up to make room (`_evict`): its task is cancelled,
which ends it wherever it waits (the TLS handshake included) and closes its socket; it is
counted (`dropped`) and logged in one line per `EVICTIONS_LOGGED_EVERY` seconds at most, with
how many there were, never a traceback.
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


# A request head (request line, headers and the blank line ending them) of up to 64 KiB is
# read; one byte more is a 431. The API server sends well under 2 KiB.
MAX_HEAD_BYTES = 64 * 1024
CLOSE_LINGER_SECONDS = 2.0         # draining a closing connection's unread data, at most
DRAIN_MAX_BYTES = 16 * 1024 * 1024  # and at most this much of a body refused for its size
STOP_LINGER_SECONDS = 2.0          # a stopping worker keeps idle connections this long, at most
READ_SIZE = 64 * 1024
EVICTIONS_LOGGED_EVERY = 10.0      # seconds: connections given up are logged at most this often


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


class _Body(io.RawIOBase):
    """`wsgi.input`: the body as received, in the buffer it was read into. Reading all of it
    at once returns that buffer itself (a bytearray: json.loads takes it), so a 5 MiB review
    is not copied. When the body deadline passed first, reading raises TimeoutError (an
    OSError), which the application answers with 408. `over_budget`: the body was not read, as
    it would have passed the worker's body budget (the application answers 503)."""

    def __init__(self, data: bytes | bytearray, timed_out: bool, *, over_budget: bool = False) -> None:
        super().__init__()
        self.data, self.timed_out, self.over_budget = data, timed_out, over_budget
        self.position = 0

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes | bytearray:
        if self.timed_out:
            raise TimeoutError("the request body did not arrive in time")
        end = len(self.data) if size is None or size < 0 else min(len(self.data), self.position + size)
        if self.position == 0 and end == len(self.data):
            chunk = self.data
        else:
            chunk = bytes(memoryview(self.data)[self.position:end])
        self.position = end
        return chunk

    def readinto(self, buffer) -> int:
        chunk = self.read(len(buffer))
        buffer[:len(chunk)] = chunk
        return len(chunk)


@dataclass
class BodyBudget:
    """The bytes of request bodies one worker holds at once: each body from the end of its
    head (its declared length is taken then) until its response is sent. One per worker; only
    its event loop's thread touches it."""
    limit: int
    held: int = 0

    def take(self, size: int) -> bool:
        if self.held + size > self.limit:
            return False
        self.held += size
        return True

    def give(self, size: int) -> None:
        self.held -= size


class _Tally:
    """Events logged at most once per `every` seconds, each line saying how many there were:
    the first at once, the rest when the period ends."""

    def __init__(self, log: logging.Logger, message: str, every: float = EVICTIONS_LOGGED_EVERY) -> None:
        self.log, self.message, self.every = log, message, every
        self.count = 0
        self.flushing: asyncio.TimerHandle | None = None

    def add(self) -> None:
        self.count += 1
        if self.flushing is None:
            self._flush()

    def close(self) -> None:
        """Log what is counted and not yet said (the worker is stopping)."""
        if self.flushing is not None:
            self.flushing.cancel()
        if self.count:
            self.log.warning(self.message, self.count, self.every)
        self.count, self.flushing = 0, None

    def _flush(self) -> None:
        if not self.count:
            self.flushing = None
            return
        self.log.warning(self.message, self.count, self.every)
        self.count = 0
        self.flushing = asyncio.get_running_loop().call_later(self.every, self._flush)


class Front:
    """Serves the connections of one worker (one asyncio loop)."""

    def __init__(self, app: Callable, timeouts: Timeouts, max_body: int, body_budget: int, max_connections: int = 1024,
                 dropped: Callable[[str, str], None] = lambda role, reason: None,
                 log: logging.Logger | None = None) -> None:
        self.app, self.timeouts, self.max_body = app, timeouts, max_body
        self.max_connections = max_connections
        self.budget = BodyBudget(body_budget)
        self.dropped = dropped                  # (role, reason): a connection closed without a request
        self.log = log or logging.getLogger("numaguard.webhook.front")
        self._given_up: dict[tuple[str, str], _Tally] = {}
        self._evicted: set[asyncio.Task] = set()
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
        for tally in self._given_up.values():
            tally.close()
        deadline = asyncio.get_running_loop().time() + STOP_LINGER_SECONDS
        for timer in self._idle:
            when = timer.when()
            if when is None or when > deadline:
                timer.reschedule(deadline)

    async def connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                         listener: Listener) -> None:
        task, role = asyncio.current_task(), listener.role
        if self._open.get(role, 0) >= self.max_connections and not self._evict(role):
            self._give_up(role, "over-capacity")     # every connection is busy with a request
            writer.transport.abort()
            return
        self.tasks.add(task)
        self._open[role] = self._open.get(role, 0) + 1
        self._unproven.setdefault(role, {})[task] = writer
        try:
            await self._serve(reader, writer, listener)
        except asyncio.CancelledError:
            if task not in self._evicted:
                raise                    # the worker is stopping
        except Exception:        # a bug here must cost one connection, never the worker
            self.log.exception("connection on the %s port failed", role)
        finally:
            self.tasks.discard(task)
            self._evicted.discard(task)
            self._open[role] -= 1
            self._unproven[role].pop(task, None)
            self._waiting.get(role, {}).pop(task, None)
            # writer.transport is None when the connection was lost as its TLS handshake ended
            # (asyncio's start_tls then sets none)
            if writer.transport is not None and not writer.transport.is_closing():
                writer.transport.abort()

    def _evict(self, role: str) -> bool:
        """At max_connections: give up the oldest connection that has not sent a whole request
        yet (a slow client: the API server's requests arrive in milliseconds), else the oldest
        idle kept-alive one. False when every connection is in the middle of a request.

        Its task is cancelled rather than its socket closed under it: that ends the task
        wherever it waits, the TLS handshake included (asyncio's start_tls, whose transport
        vanished under it, used to fail with an AttributeError and a traceback), and the task
        closes its socket."""
        for group in (self._unproven.get(role), self._waiting.get(role)):
            if group:
                task = next(iter(group))
                del group[task]
                self._evicted.add(task)
                task.cancel()
                self._give_up(role, "evicted")
                return True
        return False

    def _give_up(self, role: str, reason: str) -> None:
        """A connection closed to stay within max_connections: counted, and logged in one line
        per period with how many."""
        self.dropped(role, reason)
        key = (role, reason)
        if key not in self._given_up:
            what = "given up for newer ones" if reason == "evicted" else "refused (every one busy with a request)"
            self._given_up[key] = _Tally(self.log, f"%d connection(s) on the {role} port {what} within %.0f s, to stay "
                                                   f"within --max-connections {self.max_connections} (slow or idle "
                                                   "clients; numaguard_webhook_connections_dropped_total"
                                                   f"{{reason=\"{reason}\"}})")
        self._given_up[key].add()

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
            held = [0]                    # body bytes taken from the budget, given back below
            try:
                body = await self._read_body(conn, reader, writer, request, held)
                if body is None:              # the client went away mid-body
                    writer.transport.abort()
                    return
                self._unproven[listener.role].pop(asyncio.current_task(), None)
                environ = _environ(request, body, listener, peer, client_cert)
                environ["numaguard.body_budget"] = self.budget.limit
                loop = asyncio.get_running_loop()
                status, headers, payload = await loop.run_in_executor(listener.pool, self._call_app, environ)
                del environ
                body.data = b""
                close = self.stopping or conn.their_state is not h11.DONE
                if close:
                    headers = [(k, v) for k, v in headers if k.lower() != "connection"] + [("Connection", "close")]
                if not await self._send(conn, writer, status, headers, payload):
                    return
            finally:
                self.budget.give(held[0])
            if conn.our_state is h11.MUST_CLOSE or close:
                # A body refused for its size, or for the budget, may still be on its way: take
                # it in (and drop it) before the close, so the client that sends it all before
                # reading gets the answer too.
                await self._close(reader, writer, drain=conn.their_state is not h11.DONE and not body.timed_out)
                return
            conn.start_next_cycle()

    async def _read_head(self, conn: h11.Connection, reader: asyncio.StreamReader,
                         writer: asyncio.StreamWriter, listener: Listener, first: bool) -> h11.Request | None:
        """The next request's head, at most MAX_HEAD_BYTES: no more than one byte past it is
        ever buffered (h11 refuses an unfinished head longer than that), and a finished one
        longer than that is refused too. None when the connection is done."""
        buffered = len(conn.trailing_data[0])      # a kept-alive client's next request, sent early
        if not first and not buffered:
            # Kept alive: wait for the next request's first bytes (idle timeout).
            try:
                async with asyncio.timeout(self.timeouts.idle if not self.stopping else STOP_LINGER_SECONDS) as timer:
                    self._idle.add(timer)
                    waiting = self._waiting.setdefault(listener.role, {})
                    waiting[asyncio.current_task()] = writer
                    try:
                        data = await reader.read(MAX_HEAD_BYTES + 1)
                    finally:
                        self._idle.discard(timer)
                        waiting.pop(asyncio.current_task(), None)
            except TimeoutError:
                await self._close(reader, writer)
                return None
            except (OSError, ssl.SSLError):
                return None
            conn.receive_data(data)
            buffered = len(data)
        try:
            async with asyncio.timeout(self.timeouts.header):
                event = conn.next_event()
                while event is h11.NEED_DATA:
                    data = await reader.read(max(1, MAX_HEAD_BYTES + 1 - buffered))
                    conn.receive_data(data)
                    buffered += len(data)
                    event = conn.next_event()
        except TimeoutError:
            self.dropped(listener.role, "header-timeout")
            await self._close(reader, writer)
            return None
        except h11.RemoteProtocolError as e:
            self.dropped(listener.role, "malformed-request")
            too_large = e.error_status_hint == 431
            await self._refuse(writer, e.error_status_hint, _HEAD_TOO_LARGE if too_large else str(e))
            await self._close(reader, writer, drain=True)     # the rest of a head too large may be on its way
            return None
        except (OSError, ssl.SSLError):
            return None
        if isinstance(event, h11.Request) and buffered - len(conn.trailing_data[0]) > MAX_HEAD_BYTES:
            self.dropped(listener.role, "malformed-request")
            await self._refuse(writer, 431, _HEAD_TOO_LARGE)
            await self._close(reader, writer, drain=True)
            return None
        if isinstance(event, h11.Request):
            return event
        await self._close(reader, writer)     # ConnectionClosed before a request: the client is done
        return None

    async def _read_body(self, conn: h11.Connection, reader: asyncio.StreamReader,
                         writer: asyncio.StreamWriter, request: h11.Request, held: list[int]) -> _Body | None:
        """The whole body, or as much as arrived before the body deadline; an empty one when
        Content-Length is already over the limit (the application answers 413 from the header
        alone) or when the body would pass the worker's body budget (503). `held[0]`: the
        bytes taken from the budget, for the caller to give back. None when the client closed
        the connection mid-body."""
        length = _content_length(request)
        if length is not None and length > self.max_body:
            return _Body(b"", timed_out=False)
        if length is not None:
            if not self.budget.take(length):
                return _Body(b"", timed_out=False, over_budget=True)
            held[0] = length
        if conn.client_is_waiting_for_100_continue:
            writer.write(conn.send(h11.InformationalResponse(status_code=100, headers=[])))
        # One buffer of the declared length (no list of chunks joined at the end: that held
        # the body twice); a chunked body grows its own, within the budget as it comes.
        data = bytearray(length) if length is not None else bytearray()
        received = 0
        try:
            async with asyncio.timeout(self.timeouts.body):
                while True:
                    event = conn.next_event()
                    if event is h11.NEED_DATA:
                        conn.receive_data(await reader.read(READ_SIZE))
                    elif isinstance(event, h11.Data):
                        size = len(event.data)
                        if length is not None:
                            data[received:received + size] = event.data
                        elif not self.budget.take(size):
                            return _Body(b"", timed_out=False, over_budget=True)
                        else:
                            held[0] += size
                            data += event.data
                        received += size
                        if received > self.max_body:     # a chunked body over the limit: 413
                            break
                    elif isinstance(event, h11.EndOfMessage):
                        break
                    else:
                        return None
        except TimeoutError:
            return _Body(data[:received], timed_out=True)
        except h11.RemoteProtocolError:
            return None
        except (OSError, ssl.SSLError):
            return None
        return _Body(data, timed_out=False)

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


_HEAD_TOO_LARGE = f"the request head (request line and headers) is over {MAX_HEAD_BYTES:,} bytes"


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
