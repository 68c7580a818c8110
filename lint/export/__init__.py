"""Exports: numaguard's checks written for other engines (the API server's admission policies)."""
