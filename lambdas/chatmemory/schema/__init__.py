"""The one definition of tables, keys, indexes, stream settings and env-var names.

Plain data only (no boto3, no aws_cdk): CDK builds the tables from these specs, local mode and
the tests create tables from them, and the adapters read key names from them. By concern in
the modules below; every public name of them is one here (`from chatmemory.schema import X`).
"""

from __future__ import annotations

from chatmemory.schema.env import *  # noqa: F403
from chatmemory.schema.kinds import *  # noqa: F403
from chatmemory.schema.longterm import *  # noqa: F403
from chatmemory.schema.streams import *  # noqa: F403
from chatmemory.schema.tables import *  # noqa: F403
