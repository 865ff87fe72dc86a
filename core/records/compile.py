"""What compiling a module said and made: diagnostics and the compile's record.

`Diagnostic` is the compiler's stderr reduced to what a person reads
(`module.diagnostics`); `CompileRecord` is what the run's manifest and report
keep of the compile (its module file, flags, cache and log).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gputop.core.records.base import now

__all__ = ["CompileRecord", "Diagnostic"]


@dataclass(frozen=True)
class Diagnostic:
    """One compiler diagnostic, reduced to what a person needs to read."""

    severity: str
    location: str | None
    message: str
    dispatch: str | None = None
    kind: str = "generic"
    used_bytes: int | None = None
    limit_bytes: int | None = None
    log_path: str | None = None
    timestamp: float = field(default_factory=now)

    def one_line(self) -> str:
        where = f"{self.location}: " if self.location else ""
        if self.kind == "shared_memory_exceeded" and self.used_bytes and self.limit_bytes:
            who = self.dispatch or "a dispatch"
            return (
                f"{self.severity}: {who} needs {self.used_bytes} bytes of shared memory, "
                f"the device allows {self.limit_bytes} ({self.used_bytes / self.limit_bytes:.1f}x over)"
            )
        return f"{self.severity}: {where}{self.message}"


@dataclass(frozen=True)
class CompileRecord:
    """How the module of a run came to be: what the manifest and the report say of the compile."""

    vmfb: str
    flags: tuple[str, ...]
    cache_hit: bool
    cache_key: str | None
    log: str | None
    seconds: float
    f64: str | None = None  # "kept" (compiled with f64), "demoted" (IREE's default, f64 as f32), None: no f64
