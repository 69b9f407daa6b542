#!/usr/bin/env python3
"""CDK entry point: read settings from cdk.json context and build the stacks (no AWS calls)."""

from __future__ import annotations

import sys
from pathlib import Path

import aws_cdk as cdk

# The runtime package is the single source of table names and keys for the stacks too.
sys.path.insert(0, str(Path(__file__).resolve().parent / "lambdas"))

from stacks.app_stack import ChatMemoryStack  # noqa: E402

app = cdk.App()
stage = app.node.try_get_context("chatmemory:stage") or "dev"
ChatMemoryStack(app, f"ChatMemory-{stage}", production=stage == "prod")
app.synth()
