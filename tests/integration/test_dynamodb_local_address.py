"""DynamoDB Local listens on 127.0.0.1 only, as local mode's banner says: it has no access
control, and on every interface (its own default) anyone on the network could read and change
every table, although the gateway refuses other hosts."""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import sys
from pathlib import Path

import pytest

from local.dynamodb_local import DynamoDBLocal

pytestmark = pytest.mark.integration

LISTEN = "0A"  # the state column of /proc/net/tcp for a listening socket


def _address(hex_address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """An address of /proc/net/tcp{,6}: hex of the kernel's 32-bit words, each little-endian."""
    raw = bytes.fromhex(hex_address)
    swapped = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    if len(swapped) == 4:
        return ipaddress.IPv4Address(swapped)
    return ipaddress.IPv6Address(swapped)


def listening_addresses(port: int) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """The local addresses of the sockets listening on `port` (TCP, IPv4 and IPv6)."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(FileNotFoundError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                host, _, hex_port = fields[1].partition(":")
                if fields[3] == LISTEN and int(hex_port, 16) == port:
                    found.append(_address(host))
    return found


def loopback(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    mapped = getattr(address, "ipv4_mapped", None)  # ::ffff:127.0.0.1 on a dual-stack socket
    return address.is_loopback or (mapped is not None and mapped.is_loopback)


def outward_address() -> str | None:
    """This machine's address on its route out (a UDP connect sends nothing), if it has one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # TEST-NET-1: only the route is looked up
        except OSError:
            return None
        address = str(probe.getsockname()[0])
    return None if ipaddress.ip_address(address).is_loopback else address


@pytest.mark.skipif(sys.platform != "linux", reason="reads the kernel's socket tables")
def test_dynamodb_local_listens_on_the_loopback_address_only(
    dynamodb_local: DynamoDBLocal,
) -> None:
    addresses = listening_addresses(dynamodb_local.port)
    assert addresses, f"nothing listens on port {dynamodb_local.port}"
    assert all(loopback(a) for a in addresses), addresses
    assert dynamodb_local.endpoint == f"http://127.0.0.1:{dynamodb_local.port}"

    # From another interface of this machine, as another host would come: refused.
    outward = outward_address()
    if outward is not None:
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection((outward, dynamodb_local.port), timeout=5).close()
