#!/usr/bin/env python3
"""CDK entry point: settings from cdk.json context, the stack, cdk-nag (no AWS calls)."""

from __future__ import annotations

import sys
from pathlib import Path

import aws_cdk as cdk

# The runtime package is the single source of table names and keys for the stacks too.
sys.path.insert(0, str(Path(__file__).resolve().parent / "lambdas"))

from stacks.app_stack import build  # noqa: E402

app = cdk.App()
build(app)
app.synth()
