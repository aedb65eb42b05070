"""Capture policies: which backward steps a capture keeps, and which values it keeps."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

VALUE_POLICIES = ("none", "small", "all", "raw")
THREAD_POLICIES = ("current", "all")


@dataclass(frozen=True)
class Policy:
    """Which backward steps a capture keeps.

    All fields unset keeps every step. Otherwise a step is kept when it is among the ``first``
    steps, or a multiple of ``every``, or (``nonfinite``) when its loss (a root's value) or a
    gradient holds NaN/Inf. Steps of a structure already kept store per-node statistics only.

    >>> Policy.parse("first:10,every:100,nonfinite")
    Policy(first=10, every=100, nonfinite=True)
    >>> Policy.parse("all").wants(12345), Policy(first=2).wants(2)
    (True, False)
    """

    first: int | None = None
    every: int | None = None
    nonfinite: bool = False

    def __post_init__(self) -> None:
        for name in ("first", "every"):
            v = getattr(self, name)
            if v is not None and (not isinstance(v, int) or v < (0 if name == "first" else 1)):
                raise ValueError(f"Policy.{name} must be a positive integer or None, got {v!r}")

    @property
    def keeps_all(self) -> bool:
        """True when every step is kept."""
        return self.first is None and self.every is None and not self.nonfinite

    def wants(self, step: int) -> bool:
        """Whether ``step`` is kept regardless of its values."""
        if self.keeps_all:
            return True
        if self.first is not None and step < self.first:
            return True
        return self.every is not None and step % self.every == 0

    @classmethod
    def parse(cls, spec: str | Policy) -> Policy:
        """A policy from ``'all'`` or a comma list of ``first:N``, ``every:K``, ``nonfinite``."""
        if isinstance(spec, Policy):
            return spec
        fields: dict[str, Any] = {}
        for part in (p.strip() for p in spec.split(",")):
            name, _, arg = part.partition(":")
            if part == "all":
                continue
            if part == "nonfinite":
                fields["nonfinite"] = True
            elif name in ("first", "every") and arg.isdigit():
                fields[name] = int(arg)
            else:
                raise ValueError(
                    f"unknown capture policy {part!r} in {spec!r}; use 'all' or a comma list "
                    "of 'first:N', 'every:K', 'nonfinite'"
                )
        return cls(**fields)

    def to_json(self) -> dict[str, Any]:
        """The policy as a JSON object."""
        return {"first": self.first, "every": self.every, "nonfinite": self.nonfinite}


DEFAULT_POLICY = Policy(first=10, every=100, nonfinite=True)
"""Keep the first 10 steps, every 100th and any with a NaN/Inf: cheap for training loops."""


__all__ = ["DEFAULT_POLICY", "THREAD_POLICIES", "VALUE_POLICIES", "Policy"]
