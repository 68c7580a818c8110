"""numaguard as a validating admission webhook (`numaguard.webhook`).

The same engine and rules as `numaguard lint`, behind `POST /validate` (AdmissionReview
`admission.k8s.io/v1`). Modules: `review` (AdmissionReview in and out), `decide` (findings to an
admission decision: modes, UPDATE comparison, warnings), `app` (the Flask application factory),
`metrics` (Prometheus), `tls` (certificates, the TLS policy and the reloading TLS contexts),
`front` (the asyncio HTTP/1.1 front: handshakes and whole requests under deadlines), `worker`
(the gunicorn worker that runs it), `server` (gunicorn as a library). The webhook never imports
the command line; the command line imports it lazily.
"""
from __future__ import annotations


def create_app(settings):  # noqa: ANN001, ANN201  (re-exported; typed in app.py)
    from numaguard.webhook.app import create_app as factory

    return factory(settings)
