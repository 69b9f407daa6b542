"""One chat turn, stage by stage (see pipeline.py)."""
