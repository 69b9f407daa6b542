"""A plainly labelled stand-in for a language model, so local mode runs with no model at all.

It does not pretend to understand: it says it is offline, echoes the message and shows what
short-term memory put in front of it, which is what a person trying local mode wants to see.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from chatmemory.ports import Generation

LABEL = "[offline responder]"
_SPEAKER = re.compile(r"^([^:\n]{1,40}):\s?(.*)$")


class OfflineResponder:
    name = "offline-responder"
    context_tokens = 512

    def generate(
        self, prompt: str, *, max_new_tokens: int, stop: Sequence[str] = ()
    ) -> Generation:
        lines = [line for line in prompt.splitlines() if line.strip()]
        # Grounded answers, summaries and labels first: their last line ends with ":" too.
        if lines and lines[-1] in ("Answer:", "Summary:", "Label:"):
            return Generation(self._task_reply(lines), self.name)
        if len(lines) >= 2 and lines[-1].endswith(":"):
            assistant = lines[-1][:-1]
            user_match = _SPEAKER.match(lines[-2])
            user = user_match.group(1) if user_match else "User"
            message = user_match.group(2) if user_match else lines[-2]
            history = [m.group(2) for m in map(_SPEAKER.match, lines[:-2]) if m and m.group(1) == user]
            summary = next((l for l in lines if l.startswith("Summary of the earlier")), "")
            return Generation(self._chat_reply(message, history, summary, assistant), self.name)
        return Generation(f"{LABEL} No language model is configured.", self.name)

    @staticmethod
    def _chat_reply(message: str, history: list[str], summary: str, assistant: str) -> str:
        parts = [f"{LABEL} No language model is configured, so I can only show what I remember."]
        parts.append(f'You said: "{message}".')
        if history:
            parts.append(
                f"I can see {len(history)} earlier message(s) of yours in this conversation; "
                f'the last one was: "{history[-1]}".'
            )
        else:
            parts.append("I see no earlier messages in this conversation.")
        if summary:
            parts.append("I also have a summary of the older part of our conversation.")
        return " ".join(parts)

    @staticmethod
    def _task_reply(lines: list[str]) -> str:
        if lines[-1] == "Label:":
            return "chat"
        if lines[-1] == "Summary:":
            return " ".join(lines[1:-1])[:600]
        # A grounded answer: quote the best evidence the prompt carries (the first block).
        evidence = lines[1] if len(lines) > 2 else ""
        return f"{LABEL} From memory: {evidence}"[:800]
