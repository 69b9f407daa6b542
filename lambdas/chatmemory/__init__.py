"""Chat memory core: domain types, ports, services and adapters shared by every Lambda."""
