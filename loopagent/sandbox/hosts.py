"""Which hosts a sandboxed command may reach through the proxy: `network_allow` and `network_deny`, pure.

An entry is a host (`pypi.org`), a wildcard (`*.example.org`, which also matches `example.org`), either
with `:PORT` to narrow it to one port, an IP address (`10.0.0.5`, `[fd00::1]:8080`) or a preset name.
Deny wins. A name that resolves to a loopback, link-local or private address is refused unless the allow
entry that let it through names that host exactly: a wildcard or a preset never opens the local network.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# The hosts each preset stands for (what the package tools fetch from, redirects included).
PRESETS = {
    "pypi": ("pypi.org", "files.pythonhosted.org"),
    "npm": ("registry.npmjs.org",),
    "debian": ("deb.debian.org", "security.debian.org"),
    "github": ("*.github.com", "*.githubusercontent.com"),
}
LABEL = re.compile(r"^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$")


@dataclass(frozen=True)
class Entry:
    """One host pattern: `name` is a host or, when `wild`, the domain under `*.`; port None: any."""

    text: str  # as written: a preset's entries carry the preset's name
    name: str
    wild: bool = False
    port: int | None = None
    preset: str = ""

    def matches(self, host: str, port: int) -> bool:
        """Whether `host` (normalised) on `port` falls under this entry."""
        if self.port is not None and self.port != port:
            return False
        return host == self.name or (self.wild and host.endswith("." + self.name))

    def covers(self, other: Entry) -> bool:
        """Whether every host and port `other` matches, this entry matches too."""
        if self.port is not None and self.port != other.port:
            return False
        if not self.wild:
            return not other.wild and other.name == self.name
        return other.name == self.name or other.name.endswith("." + self.name)

    @property
    def named(self) -> bool:
        """Names one host exactly, as the user wrote it: may reach a private address."""
        return not self.wild and not self.preset


@dataclass(frozen=True)
class Verdict:
    """The proxy's answer for one request; `why` names the rule (for the 403 and the result line)."""

    allowed: bool
    why: str = ""
    addresses: tuple[str, ...] = ()  # the checked addresses to connect to, when allowed


@dataclass(frozen=True)
class HostRules:
    """The run's `network_allow` and `network_deny`, parsed."""

    allow: tuple[Entry, ...] = ()
    deny: tuple[Entry, ...] = ()

    def judge(self, host: str, port: int) -> tuple[Verdict | None, Entry | None]:
        """Before name resolution: a refusal, or the allow entry that lets `host` through."""
        for entry in self.deny:
            if entry.matches(host, port):
                return Verdict(False, f"network_deny {entry.text}"), None
        allowed = [e for e in self.allow if e.matches(host, port)]
        if not allowed:
            return Verdict(False, "not in network_allow"), None
        return None, next((e for e in allowed if e.named), allowed[0])

    def check(self, host: str, port: int, entry: Entry, addresses: Sequence[str]) -> Verdict:
        """After name resolution: an address under network_deny, or a private one not named, refuses."""
        for address in addresses:
            for rule in self.deny:
                if rule.matches(bare(address), port):
                    return Verdict(False, f"{address} is in network_deny {rule.text}")
            if not entry.named and local(address):
                return Verdict(False, f"resolves to the local address {address}; name {host} in network_allow "
                                      "to allow it")
        if not addresses:
            return Verdict(False, "no address found for it")
        return Verdict(True, f"network_allow {entry.text}", tuple(addresses))

    def describe(self) -> str:
        """The hosts a command may reach, for the approval prompt and `loop policy check`."""
        shown = []
        for entry in self.allow:
            if entry.preset and entry.preset not in shown:
                shown.append(entry.preset)
            elif not entry.preset:
                shown.append(entry.text)
        words = [f"{p} ({', '.join(PRESETS[p])})" if p in PRESETS else p for p in shown]
        denied = f"; never {', '.join(e.text for e in self.deny)}" if self.deny else ""
        return "network only to " + ", ".join(words) + denied if words else "no network"


def rules_from(allow: Iterable[str], deny: Iterable[str] = ()) -> HostRules:
    """Parse both lists; raises ValueError naming a bad entry."""
    return HostRules(tuple(e for text in allow for e in parse(text)), tuple(e for text in deny for e in parse(text)))


def parse(text: str) -> list[Entry]:
    """The entries `text` stands for (a preset stands for several); raises ValueError when it is no host."""
    raw = text.strip().lower()
    if "://" in raw or "/" in raw:
        raise ValueError(f"{text!r} is not a host: write the host without a scheme or path, like pypi.org")
    if raw in PRESETS:
        return [replace_text(e, raw) for host in PRESETS[raw] for e in parse(host)]
    port = None
    hostpart = raw
    if raw.startswith("["):  # [v6] or [v6]:port
        close = raw.find("]")
        hostpart, rest = raw[1:close], raw[close + 1:]
        if close < 0 or (rest and not rest.startswith(":")):
            raise ValueError(f"{text!r} is not a host: write [ADDRESS]:PORT for IPv6")
        port = port_of(text, rest[1:]) if rest else None
    elif raw.count(":") == 1:
        hostpart, _, digits = raw.partition(":")
        port = port_of(text, digits)
    wild = hostpart.startswith("*.")
    name = hostpart[2:] if wild else hostpart
    name = name.rstrip(".")
    if not is_address(name) and not (name and all(LABEL.match(label) for label in name.split("."))):
        raise ValueError(f"{text!r} is not a host: write a name like pypi.org, *.example.org or "
                         f"HOST:PORT, an IP address, or a preset ({', '.join(PRESETS)})")
    if wild and is_address(name):
        raise ValueError(f"{text!r}: a wildcard needs a domain, not an address")
    return [Entry(text.strip(), name, wild, port)]


def replace_text(entry: Entry, preset: str) -> Entry:
    return Entry(preset, entry.name, entry.wild, entry.port, preset)


def port_of(text: str, digits: str) -> int:
    if not digits.isdigit() or not 0 < int(digits) < 65536:
        raise ValueError(f"{text!r}: the port must be a number from 1 to 65535")
    return int(digits)


def narrow(user: Sequence[str], project: Sequence[str]) -> tuple[list[str], list[str]]:
    """A project file's `network_allow` intersected with the user's: (the entries kept, those dropped).

    Patterns nest or are disjoint, so the intersection is exact: each side's entries that the other
    side covers. An entry covered whole is kept as written (a preset by its name).
    """
    mine = {text: parse(text) for text in user}
    theirs = {text: parse(text) for text in project}
    kept = inner(theirs, [e for entries in mine.values() for e in entries])
    dropped = [text for text in theirs if text not in kept]
    for shown in inner(mine, [e for entries in theirs.values() for e in entries]):  # the user's narrower ones
        if shown not in kept:
            kept.append(shown)
    return kept, dropped


def inner(lists: dict[str, list[Entry]], outer: list[Entry]) -> list[str]:
    """The entries of `lists` that `outer` covers: a text covered whole as written, else its covered parts."""
    found = []
    for text, entries in lists.items():
        covered = [e for e in entries if any(o.covers(e) for o in outer)]
        found += [text] if covered and len(covered) == len(entries) else [entry_text(e) for e in covered]
    return found


def entry_text(entry: Entry) -> str:
    host = ("*." if entry.wild else "") + (f"[{entry.name}]" if ":" in entry.name else entry.name)
    return host + (f":{entry.port}" if entry.port else "")


def normal(host: str) -> str:
    """A host as the rules compare it: lower case, no trailing dot, no IPv6 brackets."""
    return host.strip().lower().rstrip(".").removeprefix("[").removesuffix("]")


def bare(address: str) -> str:
    return address.split("%", 1)[0]  # fe80::1%eth0: the zone is no part of the address


def is_address(name: str) -> bool:
    import ipaddress

    try:
        ipaddress.ip_address(bare(name))
    except ValueError:
        return False
    return True


def local(address: str) -> bool:
    """Not a public address: loopback, link-local, private, unspecified, multicast or reserved."""
    import ipaddress

    ip = ipaddress.ip_address(bare(address))
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    return not ip.is_global or ip.is_multicast
