"""RenderDoc: the in-application API that captures live Vulkan work, and reading a capture back in
another process.

`in_app` talks to the library inside the run; `captures` lists and verifies `.rdc` files;
`rdc_reader` runs under RenderDoc's own Python.
"""

from __future__ import annotations

__all__: list[str] = []
