"""NG212 and NG3xx: NUMA fit on a described node (filled in by the NUMA simulator work)."""
