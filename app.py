#!/usr/bin/env python3
"""CDK entry point: settings from cdk.json context, the stack, cdk-nag (no AWS calls)."""

from __future__ import annotations

import aws_cdk as cdk

from stacks.app_stack import build

app = cdk.App()
build(app)
app.synth()
