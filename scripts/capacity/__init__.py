"""The capacity model (`make capacity`): every component's peak rate at 10,000, 1,000,000 and
10,000,000 daily users, the first limit each meets and at what load (scripts/capacity/model.py),
from what the AWS contract scenario measured a session sends (measured.json)."""
