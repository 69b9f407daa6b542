"""The conversation: sessions, turns and their states, chat, stacking, hand-off, checkpoints."""
