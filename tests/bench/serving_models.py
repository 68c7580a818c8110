"""The serving models numaguard did not choose, for bench_webhook.py's comparison: the same
Flask application (`create_app`), the same certificates and config, served by gunicorn's
stock workers instead of numaguard's asyncio front:

* `gthread`: the previous serving model (2 workers x 4 threads; TLS handshake and request
  read on the worker threads);
* `gevent`: gunicorn's gevent worker (a greenlet per connection; needs `pip install gevent`,
  which numaguard does not depend on).

Both serve every path on one port (no probe port).

    python tests/bench/serving_models.py MODEL PORT CERT KEY CONFIG
"""
from __future__ import annotations

import os
import sys
import tempfile


def main() -> None:
    model, port, cert, key, config = sys.argv[1:6]
    if model == "gevent":
        from gevent import monkey

        monkey.patch_all()
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="numaguard-bench-")
    from gunicorn.app.base import BaseApplication

    from numaguard.webhook.app import create_app
    from numaguard.webhook.settings import WebhookSettings, load_policy
    from numaguard.webhook.tls import ServingCertificate

    certificate = ServingCertificate(cert, key)
    certificate.load()

    class Stock(BaseApplication):
        def load_config(self) -> None:
            settings = {"bind": [f"127.0.0.1:{port}"], "workers": 2, "threads": 4, "worker_class": model,
                        "reuse_port": True, "certfile": cert, "keyfile": key, "keepalive": 10,
                        "ssl_context": lambda conf, default: certificate.context() or default(),
                        "accesslog": None, "errorlog": "-", "loglevel": "warning", "control_socket_disable": True}
            for name, value in settings.items():
                self.cfg.set(name, value)

        def load(self):
            return create_app(WebhookSettings(policy=load_policy(config), certificate=certificate, bench_route=True,
                                              access_log=open(os.devnull, "w")))

    Stock().run()


if __name__ == "__main__":
    main()
