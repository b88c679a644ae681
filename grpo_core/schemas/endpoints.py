"""Which URLs a grader may call on a user's behalf: a ``score_model`` grader's own ``endpoint``.

The worker (and nothing else: the API never calls a project's judge) POSTs to a URL a user wrote, so the URL is
checked like any server-side request forgery target:
- its form (``check_form``, part of the grader's schema): ``http`` or ``https``, a host, no user or password in it
  (a key belongs in a project secret, not in a job's spec that its project reads back), no query or fragment;
- its addresses (``check_addresses``): a link-local address (169.254.0.0/16, fe80::/10: the cloud metadata
  service and its credentials) or a multicast, reserved or unspecified one is always refused; a loopback or
  private address (anything not globally routable: 127/8, 10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7, …)
  only when the operator allows it (JUDGE_PRIVATE_ENDPOINTS: the worker's neighbours are the operator's, not the
  user's). The API checks the host as written at job creation (a literal address, ``localhost``), with no DNS
  lookup; the worker resolves the name and checks every address again just before its first call, since a name
  can point anywhere by then. (A name re-pointed between that check and a later request of the same run is not
  caught; redirects are never followed.)

Standard library only: the API validates with this as the worker does.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class EndpointRefused(ValueError):
    """A grader's endpoint this service will not call; ``str()`` says why (never a key: there is none in a URL)."""


def check_form(url: str) -> str:
    """``url`` without a trailing slash, or ValueError saying what is wrong with its form."""
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises on a port that is not a number or out of range
    except ValueError as exc:
        raise ValueError(f"endpoint is not a URL: {exc}") from None
    if parts.scheme not in ("http", "https"):
        raise ValueError("endpoint must be an http:// or https:// URL, e.g. https://api.openai.com/v1")
    if not parts.hostname:
        raise ValueError("endpoint has no host")
    if parts.username is not None or parts.password is not None:
        raise ValueError("endpoint must not hold a user or password: put the key in a secret (api_key_secret)")
    if parts.query or parts.fragment:
        raise ValueError("endpoint is a base URL such as https://api.openai.com/v1: no query or fragment")
    return url.rstrip("/")


def refusal(ip: IPAddress, allow_private: bool) -> str | None:
    """Why ``ip`` may not be called, or None when it may."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped  # ::ffff:169.254.169.254 is 169.254.169.254
    if ip.is_link_local:
        return f"{ip} is a link-local address (the cloud metadata service lives there), never called"
    if ip.is_multicast or ip.is_reserved or ip.is_unspecified:
        return f"{ip} is not an address a judge can have"
    if ip.is_global or allow_private:
        return None
    return (
        f"{ip} is a loopback or private address, which this service does not call for a grader "
        "(the operator allows it with JUDGE_PRIVATE_ENDPOINTS)"
    )


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def check_addresses(url: str, *, allow_private: bool, resolve: bool) -> None:
    """EndpointRefused when ``url``'s host is, or (``resolve``) resolves to, an address it may not call.

    Without ``resolve`` only what the URL itself says is checked: a literal address, or ``localhost``."""
    host = urlsplit(url).hostname or ""
    ip = _literal(host)
    if ip is not None:
        addresses = [ip]
    elif host == "localhost" or host.endswith(".localhost"):
        addresses = [ipaddress.ip_address("127.0.0.1")]
    elif resolve:
        try:
            infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
        except OSError as exc:
            raise EndpointRefused(f"endpoint host {host!r} does not resolve: {exc}") from None
        addresses = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]
    else:
        return
    for address in addresses:
        why = refusal(address, allow_private)
        if why is not None:
            raise EndpointRefused(f"endpoint host {host!r}: {why}")
