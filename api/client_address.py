"""The address a request came from, for limits per client address (api/auth.py).

Behind a reverse proxy every request arrives from the proxy's address, so one caller's flood would spend everyone's
budget. When the connecting peer is one of the proxies named in SWITCHBOARD_TRUSTED_PROXIES (addresses or CIDR
networks), the client is read from the X-Forwarded-For header that proxy appended to: walking it from the right,
the first address that is not itself a trusted proxy. Entries left of it were written by the caller and prove
nothing, so they are never used. Without trusted proxies (the default) the header is ignored: anyone could send it.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import Any

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_networks(entries: Iterable[str]) -> tuple[Network, ...]:
    """'10.0.0.1', '10.0.0.0/8', '::1' -> networks; raises ValueError naming a bad entry."""
    networks = []
    for entry in (e.strip() for e in entries):
        if not entry:
            continue
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            raise ValueError(f"{entry!r} is not an IP address or CIDR network") from None
    return tuple(networks)


def _trusted(address: str, proxies: tuple[Network, ...]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in proxies)


def client_address(scope: Any, proxies: tuple[Network, ...] = ()) -> str:
    """The peer's address, or with trusted proxies the client address they forwarded (see above)."""
    client = scope.get("client")
    peer = client[0] if client else "unknown"
    if not proxies or not _trusted(peer, proxies):
        return peer
    forwarded = [value.decode("latin-1") for name, value in scope.get("headers", ()) if name == b"x-forwarded-for"]
    hops = [hop.strip() for line in forwarded for hop in line.split(",") if hop.strip()]
    for hop in reversed(hops):
        if not _trusted(hop, proxies):
            return hop[:64]
    return hops[0][:64] if hops else peer
