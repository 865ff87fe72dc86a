"""The documented Python API, `from gputop.core.session import RunConfig, Session`, kept where it was."""

from gputop.core.run import RunConfig, Session

__all__ = ["RunConfig", "Session"]
