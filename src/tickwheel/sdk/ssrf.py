"""The SSRF guard of the `http` job type (DESIGN §10).

A URL is reachable only when its host is allow-listed **and** every address the host resolves
to is public. The check runs after DNS resolution, the connection goes to the vetted address
(never resolved a second time, so a DNS answer cannot change between check and use), and each
redirect hop is vetted again. Refused: loopback, private, link-local, multicast, reserved,
unspecified, shared (CGNAT) and documentation ranges — anything that is not globally routable —
cloud metadata addresses, IPv4 embedded in IPv6 (mapped, NAT64, 6to4, Teredo), and host names
that spell an IPv4 address in a legacy numeric form (`0x7f000001`, `2130706433`, `0177.0.0.1`).
The address rules live in the pure core (`tickwheel.core.targets`), which also applies them
to a job's URL when the job is defined.

The guard is the SDK's because three layers vet URLs with it: the `http` job type
(`tickwheel.jobtypes.http`) at fire time, a definition's check (`tickwheel.sdk.job_records`,
which resolves an `http` job's host when the job is written) and the services' webhook sinks
(`tickwheel.services.webhooks`).

Allow-list (`TICKWHEEL_HTTP_ALLOWED_HOSTS`, comma-separated): `api.example.com` (any port),
`api.example.com:8443` (that port only), `*.example.com` (any subdomain). Private networks an
operator does mean to reach are opened with `TICKWHEEL_HTTP_ALLOWED_NETWORKS` (CIDRs, e.g.
`10.20.0.0/16`); metadata addresses stay refused even then.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from tickwheel.core.targets import (
    METADATA_ADDRESSES,
    IPAddress,
    IPNetwork,
    address_problem,
    embedded_ipv4,
    legacy_ipv4,
)
from tickwheel.sdk.worker import PermanentError

__all__ = [
    "ALLOWED_HOSTS_ENV",
    "ALLOWED_NETWORKS_ENV",
    "METADATA_ADDRESSES",
    "RequestRefused",
    "Resolver",
    "SsrfGuard",
    "VettedTarget",
    "address_problem",
    "embedded_ipv4",
    "legacy_ipv4",
    "system_resolver",
]

ALLOWED_HOSTS_ENV = "TICKWHEEL_HTTP_ALLOWED_HOSTS"
ALLOWED_NETWORKS_ENV = "TICKWHEEL_HTTP_ALLOWED_NETWORKS"

Resolver = Callable[[str, int], list[str]]


class RequestRefused(PermanentError, ValueError):
    """The guard refused a URL; `url` and `reason` say which and why. A permanent failure:
    retrying the same URL would be refused again."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"refused {url!r}: {reason}")
        self.url = url
        self.reason = reason


@dataclass(frozen=True)
class VettedTarget:
    """A URL that passed the guard, with the one address to connect to."""

    url: str
    scheme: str
    host: str
    port: int
    address: str
    target: str  # path and query, as sent in the request line


def system_resolver(host: str, port: int) -> list[str]:
    """Every address `host` resolves to (A and AAAA), in the resolver's order."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise RequestRefused(host, f"cannot resolve the host name: {exc}") from exc
    addresses: list[str] = []
    for _family, _type, _proto, _name, sockaddr in infos:
        address = str(sockaddr[0])
        if address not in addresses:
            addresses.append(address)
    return addresses


def _parse_allowed_host(entry: str) -> tuple[str, int | None]:
    entry = entry.strip().lower().rstrip(".")
    if entry.startswith("["):  # [v6]:port or [v6]
        host, _, rest = entry[1:].partition("]")
        return host, int(rest[1:]) if rest.startswith(":") else None
    if entry.count(":") == 1:
        host, port = entry.split(":")
        return host, int(port)
    return entry, None


@dataclass(frozen=True)
class SsrfGuard:
    """Vets URLs for the `http` job type. Build one from the environment with
    `SsrfGuard.from_env()`; tests pass their own allow-lists and resolver."""

    allowed_hosts: frozenset[str] = frozenset()
    allowed_networks: tuple[IPNetwork, ...] = ()
    resolver: Resolver = field(default=system_resolver, compare=False)
    schemes: frozenset[str] = frozenset({"http", "https"})

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> SsrfGuard:
        env = os.environ if environ is None else environ
        hosts = frozenset(
            h.strip().lower() for h in env.get(ALLOWED_HOSTS_ENV, "").split(",") if h.strip()
        )
        networks = tuple(
            ipaddress.ip_network(n.strip(), strict=False)
            for n in env.get(ALLOWED_NETWORKS_ENV, "").split(",")
            if n.strip()
        )
        return cls(hosts, networks)

    def host_allowed(self, host: str, port: int) -> bool:
        host = host.lower().rstrip(".")
        for entry in self.allowed_hosts:
            pattern, entry_port = _parse_allowed_host(entry)
            if entry_port is not None and entry_port != port:
                continue
            if pattern == host:
                return True
            if pattern.startswith("*.") and host.endswith(pattern[1:]) and host != pattern[2:]:
                return True
        return False

    def vet(self, url: str) -> VettedTarget:
        """The address to connect to for `url`, or `RequestRefused` saying why not."""
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as exc:
            raise RequestRefused(url, f"not a valid URL: {exc}") from exc
        scheme = parts.scheme.lower()
        if scheme not in self.schemes:
            raise RequestRefused(url, f"scheme {scheme or '(none)'!r} is not one of http, https")
        if parts.username is not None or parts.password is not None:
            raise RequestRefused(url, "credentials in the URL are not accepted; send a header")
        host = (parts.hostname or "").rstrip(".")
        if not host:
            raise RequestRefused(url, "the URL has no host")
        port = port or (443 if scheme == "https" else 80)
        if not self.host_allowed(host, port):
            allowed = ", ".join(sorted(self.allowed_hosts)) or "(none)"
            raise RequestRefused(
                url,
                f"host {host!r} (port {port}) is not allow-listed in {ALLOWED_HOSTS_ENV}; "
                f"allowed: {allowed}",
            )
        addresses = self._addresses(url, host, port)
        for address in addresses:
            problem = address_problem(address, self.allowed_networks)
            if problem is not None:
                raise RequestRefused(url, f"host {host!r} resolves to {problem}")
        target = parts.path or "/"
        if parts.query:
            target += "?" + parts.query
        return VettedTarget(url, scheme, host, port, str(addresses[0]), target)

    def _addresses(self, url: str, host: str, port: int) -> list[IPAddress]:
        try:
            # A canonical literal: no resolver involved (it would only echo it).
            return [ipaddress.ip_address(host.split("%")[0])]
        except ValueError:
            pass
        legacy = legacy_ipv4(host)
        if legacy is not None:
            # getaddrinfo would read this as an address; refuse the disguise itself.
            problem = address_problem(legacy, self.allowed_networks)
            raise RequestRefused(
                url,
                f"host {host!r} is a numeric spelling of {legacy}"
                + (f" ({problem})" if problem else "")
                + "; write addresses in dotted-decimal form",
            )
        resolved = self.resolver(host, port)
        if not resolved:
            raise RequestRefused(url, f"host {host!r} resolves to no address")
        addresses: list[IPAddress] = []
        for text in resolved:
            try:
                addresses.append(ipaddress.ip_address(text.split("%")[0]))
            except ValueError as exc:
                raise RequestRefused(url, f"resolver returned {text!r}, not an address") from exc
        return addresses
