"""Lambda entry points: parse the event, call one service, shape the reply."""
