"""Which network addresses an `http` job may target, decided without any I/O.

The `http` job type's SSRF guard (`tickwheel.sdk.ssrf`) resolves host names and vets
every address at fire time; this module holds the address rules it applies, so that a
definition naming a forbidden target by literal (`http://127.0.0.1/`, `http://[::1]/`,
`http://169.254.169.254/`, `http://0x7f000001/`) or by a loopback or metadata name
(`localhost`, `metadata.google.internal`) is refused when it is created, not only when it
fires. No DNS here: a name that merely resolves to a private address is caught by the SDK
(which may resolve) or, whatever the producer, by the guard at fire time.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from urllib.parse import urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

HTTP_SCHEMES = ("http", "https")

# Instance metadata services (AWS, GCP, Azure, OpenStack, Alibaba, Oracle, ECS task metadata):
# never reachable, whatever the allow-lists say.
METADATA_ADDRESSES: frozenset[IPAddress] = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",
        "169.254.170.2",
        "169.254.169.253",
        "100.100.100.200",
        "192.0.0.192",
        "fd00:ec2::254",
        "fd00:ec2::23",
    )
)
# Names that mean a metadata service on the clouds that publish one by name.
METADATA_HOSTS = frozenset(
    {"metadata", "metadata.google.internal", "instance-data", "instance-data.ec2.internal"}
)
# Names every resolver answers with a loopback address (RFC 6761 reserves *.localhost).
_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})
_LOOPBACK = (ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1"))

_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")
_LEGACY_NUMERIC = re.compile(r"^(0x[0-9a-f]*|[0-9]+)(\.(0x[0-9a-f]*|[0-9]+)){0,3}\.?$", re.I)


def legacy_ipv4(host: str) -> ipaddress.IPv4Address | None:
    """The IPv4 address a legacy numeric spelling denotes, as `inet_aton` reads it
    (`0x7f000001`, `2130706433`, `0177.0.0.1`, `127.1`); None for anything else."""
    if not _LEGACY_NUMERIC.match(host):
        return None
    parts = host.rstrip(".").split(".")
    try:
        numbers = [int(p, 0) if not re.fullmatch(r"0[0-7]+", p) else int(p, 8) for p in parts]
    except ValueError:
        return None
    # inet_aton: a.b.c.d, a.b.c (c is 16 bits), a.b (b is 24 bits), a (32 bits).
    widths = {1: [32], 2: [8, 24], 3: [8, 8, 16], 4: [8, 8, 8, 8]}[len(numbers)]
    value = 0
    for number, width in zip(numbers, widths, strict=True):
        if number >= 1 << width:
            return None
        value = (value << width) | number
    return ipaddress.IPv4Address(value)


def embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address carried inside an IPv6 one (mapped, NAT64, 6to4, Teredo), if any."""
    if isinstance(address, ipaddress.IPv4Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in _NAT64 or address in _NAT64_LOCAL:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    # IPv4-compatible (deprecated ::a.b.c.d) is still routed by some stacks.
    if int(address) >> 32 == 0 and int(address) > 1:
        return ipaddress.IPv4Address(int(address))
    return None


def address_problem(address: IPAddress, allowed_networks: Iterable[IPNetwork] = ()) -> str | None:
    """Why `address` may not be contacted, or None when it may."""
    allowed_networks = tuple(allowed_networks)
    if address in METADATA_ADDRESSES:
        return f"{address} is a cloud metadata address"
    inner = embedded_ipv4(address)
    if inner is not None:
        problem = address_problem(inner, allowed_networks)
        if problem is not None:
            return f"{address} embeds {inner}: {problem}"
    if any(address in network for network in allowed_networks):
        return None
    for label, flag in (
        ("loopback", address.is_loopback),
        ("unspecified", address.is_unspecified),
        ("link-local", address.is_link_local),
        ("multicast", address.is_multicast),
        ("private", address.is_private),
        ("reserved", address.is_reserved),
    ):
        if flag:
            return f"{address} is a {label} address"
    if isinstance(address, ipaddress.IPv6Address) and address.is_site_local:
        return f"{address} is a site-local address"
    if not address.is_global:
        return f"{address} is not a globally routable address"
    return None


def url_problem(url: object, allowed_networks: Iterable[IPNetwork] = ()) -> str | None:
    """Why an `http` job may not target `url`, judged from its text alone, or None.

    Refused: anything but an http(s) URL with a host, credentials in the URL, and a host
    that is (or spells, or names) an address `address_problem` refuses. `allowed_networks`
    is the operator's `TICKWHEEL_HTTP_ALLOWED_NETWORKS`, passed in by the caller.
    """
    if not isinstance(url, str) or not url:
        return "the URL is missing; accepted: an http or https URL, e.g. https://api.example.com/"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - parsing the port is what raises for a bad one
    except ValueError as exc:
        return f"{url!r} is not a valid URL ({exc}); accepted: e.g. https://api.example.com/"
    scheme = parts.scheme.lower()
    if scheme not in HTTP_SCHEMES:
        return f"scheme {scheme or '(none)'!r} of {url!r} is not accepted; accepted: http, https"
    if parts.username is not None or parts.password is not None:
        return f"{url!r} carries credentials; accepted: a URL without user:password (send a header)"
    host = (parts.hostname or "").rstrip(".").lower()
    if not host:
        return f"{url!r} has no host; accepted: e.g. https://api.example.com/"
    if host in METADATA_HOSTS:
        return f"host {host!r} is a cloud metadata service"
    if host in _LOOPBACK_NAMES or host.endswith(".localhost"):
        problems = [address_problem(a, allowed_networks) for a in _LOOPBACK]
        refused = next((p for p in problems if p is not None), None)
        return None if refused is None else f"host {host!r} names {refused}"
    try:
        address = ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        legacy = legacy_ipv4(host)
        if legacy is not None:
            return (
                f"host {host!r} is a numeric spelling of {legacy}; accepted: addresses in "
                "dotted-decimal form"
            )
        return None
    problem = address_problem(address, allowed_networks)
    return None if problem is None else f"host {host!r}: {problem}"
