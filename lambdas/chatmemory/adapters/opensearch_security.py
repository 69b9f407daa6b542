"""Fine-grained access control on an OpenSearch domain: the runtime's security role and mapping.

The domain's master user is the index-setup Lambda's IAM role; it gives the runtime Lambdas'
roles read/write on the long-term indexes only, instead of making them administrators.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chatmemory import schema

RUNTIME_ROLE_BODY = schema.OPENSEARCH_RUNTIME_ROLE_BODY


class OpenSearchSecurity:
    """The security plugin's API of one domain, called as its master user."""

    def __init__(
        self,
        client: Any,
        *,
        memory_indexes: int = 1,
        generation: int = 0,
        previous: tuple[str, ...] = (),
    ) -> None:
        self._client = client
        self._role_body = schema.opensearch_runtime_role_body(memory_indexes, generation, previous)

    def map_runtime_roles(self, role_arns: Sequence[str]) -> None:
        """Create (or overwrite) the runtime security role and map exactly `role_arns` to it."""
        if not role_arns:
            raise ValueError("no runtime roles to map")
        self._client.security.create_role(role=schema.OPENSEARCH_RUNTIME_ROLE, body=self._role_body)
        self._client.security.create_role_mapping(
            role=schema.OPENSEARCH_RUNTIME_ROLE,
            body={"backend_roles": sorted(set(role_arns)), "users": [], "hosts": []},
        )
