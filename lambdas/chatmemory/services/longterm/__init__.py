"""Long-term memory read back: recall, auto-recall, BM25, time windows, bounded summaries."""
