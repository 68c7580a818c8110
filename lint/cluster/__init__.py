"""Reading a live cluster for `numaguard audit`: the API client (api), what is kept of each
object (trim), and the audit itself (audit: read, lint through the engine, simulate each
node's occupancy). Only this package talks HTTP; the engine below it never does."""
