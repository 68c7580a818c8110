"""The gunicorn worker class of `numaguard webhook serve`: one asyncio loop per worker process
runs the front (front.py) on the worker's two listening sockets, the review port and the
probe port, and the Flask application on two thread pools: `--threads` threads for the review
port, two for the probe port, so no number of reviews in progress delays a probe.

gunicorn stays the process manager: it forks the workers, gives each its own sockets
(`reuse_port`), restarts a worker that dies, kills one whose heartbeat stops (`timeout`) and
runs the graceful stop. The worker keeps its side of that contract: a heartbeat every second,
and on SIGTERM it stops accepting, lets requests in progress finish (up to
`graceful_timeout`) and exits.
"""
from __future__ import annotations

import asyncio
import asyncio.sslproto
import os
import signal
from concurrent.futures import ThreadPoolExecutor
from functools import partial

from gunicorn.workers.base import Worker

from numaguard.webhook.front import Front, Listener
from numaguard.webhook.metrics import dropped_connections
from numaguard.webhook.tls import PROBE, REVIEW

HEARTBEAT_SECONDS = 1.0
PROBE_THREADS = 2
TLS_RECORD_BYTES = 16 * 1024 + 256       # a TLS record's plaintext, with room for its overhead


M_MMAP_THRESHOLD = -3                    # glibc malloc.h
MMAP_THRESHOLD_BYTES = 128 * 1024        # glibc's own initial threshold (DEFAULT_MMAP_THRESHOLD_MIN)


def return_large_blocks() -> bool:
    """Give large blocks (request bodies, their decoded text) back to the kernel when freed.

    glibc's malloc serves a block of at least the mmap threshold (128 KiB) with its own
    mmap, unmapped on free; but the first time such a block is freed it raises the threshold
    to that block's size (up to 32 MiB: the "dynamic mmap threshold", malloc/malloc.c), so
    every later 5 MiB body comes from the heap, which a burst of bodies fragments and which is
    not returned: the workers stayed at their peak after a burst. Setting the threshold turns
    the dynamic adjustment off (mallopt(3)). A no-op where the C library is not glibc (musl
    serves large blocks with mmap always). Returns whether it was set."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        return bool(libc.gnu_get_libc_version and libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES))
    except (OSError, AttributeError):
        return False


class FrontWorker(Worker):
    """gunicorn `worker_class`; the application object (server._WebhookApplication) carries
    the options and the serving certificate."""

    def run(self) -> None:
        # asyncio's TLS layer gives every connection a receive buffer of SSLProtocol.max_size
        # (256 KiB in CPython 3.11-3.13, allocated and zeroed when the handshake starts): 512
        # connections that never send a byte cost 150 MB. A TLS record is at most 16 KiB
        # (RFC 8446 section 5.1), so a buffer of one record loses nothing. Measured in
        # tests/bench/bench_webhook.py (server RSS while held).
        asyncio.sslproto.SSLProtocol.max_size = TLS_RECORD_BYTES
        return_large_blocks()
        asyncio.run(self._main())

    async def _main(self) -> None:
        loop = asyncio.get_running_loop()
        options, certificate = self.app.options, self.app.certificate
        # gunicorn's handlers (base.Worker.init_signals) only set a flag that a loop asleep in
        # epoll never looks at: the loop's own handlers wake it. SIGTERM: graceful stop;
        # SIGINT, SIGQUIT: immediate.
        stopped, graceful = asyncio.Event(), [True]
        loop.add_signal_handler(signal.SIGTERM, stopped.set)
        for quick in (signal.SIGINT, signal.SIGQUIT):
            loop.add_signal_handler(quick, lambda: (graceful.clear(), stopped.set()))
        front = Front(self.wsgi, options.timeouts, options.max_body, options.body_budget, options.max_connections,
                      dropped=dropped_connections(), log=self.log)
        pools = {REVIEW: ThreadPoolExecutor(options.threads, thread_name_prefix="review"),
                 PROBE: ThreadPoolExecutor(PROBE_THREADS, thread_name_prefix="probe")}
        servers = []
        for sock in self.sockets:
            port = sock.getsockname()[1]
            role = PROBE if port == options.probe_port else REVIEW
            listener = Listener(role, port, partial(certificate.context, role), pools[role])
            servers.append(await asyncio.start_server(partial(front.connection, listener=listener),
                                                      sock=sock.sock, backlog=self.cfg.backlog))
        while not stopped.is_set():
            self.notify()
            if self.ppid != os.getppid():
                self.log.info("Parent changed, shutting down: %s", self)
                break
            try:
                await asyncio.wait_for(stopped.wait(), HEARTBEAT_SECONDS)
            except TimeoutError:
                pass
        for server in servers:
            server.close()
        front.stop()
        deadline = loop.time() + (self.cfg.graceful_timeout if graceful else 0)
        while front.tasks and loop.time() < deadline:
            self.notify()
            await asyncio.wait(set(front.tasks), timeout=min(HEARTBEAT_SECONDS, deadline - loop.time()))
        for task in set(front.tasks):
            task.cancel()
        for pool in pools.values():
            pool.shutdown(wait=False, cancel_futures=True)
