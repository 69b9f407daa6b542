"""Developer commands (`python -m scripts.<name>`)."""
