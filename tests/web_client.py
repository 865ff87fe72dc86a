"""A browser's side of textual-serve's protocol, in Python: for `gputop web` tests.

It opens the websocket a browser's `textual.js` opens (`/ws?width=&height=`),
reads the terminal output (binary frames) and meta messages (JSON text frames,
e.g. `["deliver_file_start", key]`), and sends keys as `["stdin", "p"]`. Run
as a script it watches until the app's panes arrive, prints READY and keeps
reading until it is killed: a visitor whose browser can vanish at any moment.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sys
from typing import Any

import aiohttp

ANSI = re.compile(r"\x1b\[[0-9;?<>=]*[a-zA-Z]")


def plain(screen: str) -> str:
    return ANSI.sub("", screen)


def words(screen: str) -> str:
    """The screen's text as one line of words: a Log line that wraps ("... reload it ▇▇│ │there") reads whole
    again, wherever its wrap falls (it moves with the length of a pid in the line), past the pane's borders and the
    scrollbar's thumb (block glyphs) on the row it wraps at."""
    return " ".join(re.sub(r"[│╭╮╰╯─\u2580-\u259f]", " ", plain(screen)).split())


class Viewer:
    """One websocket to `gputop web`: the screen text so far and the meta messages seen."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.screen = ""
        self.meta: list[list[Any]] = []
        self.closed = False

    async def read_until(self, test: Any, timeout: float = 120) -> bool:
        """Read frames until `test(self)` is true; False when the socket closes first."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not test(self):
            remaining = deadline - loop.time()
            try:
                if remaining <= 0:
                    raise TimeoutError
                message = await self.ws.receive(timeout=remaining)
            except TimeoutError:
                raise TimeoutError(f"never happened; screen ends with: {plain(self.screen)[-3000:]}") from None
            if message.type == aiohttp.WSMsgType.BINARY:
                self.screen = (self.screen + message.data.decode("utf-8", "replace"))[-200_000:]
            elif message.type == aiohttp.WSMsgType.TEXT:
                self.meta.append(json.loads(message.data))
            else:
                self.closed = True
                return False
        return True

    async def panes_shown(self, timeout: float = 120) -> bool:
        return await self.read_until(lambda v: "Kernels" in plain(v.screen) and "calls" in plain(v.screen), timeout)

    async def press(self, key: str) -> None:
        await self.ws.send_str(json.dumps(["stdin", key]))

    async def download(self, client: aiohttp.ClientSession, url: str) -> tuple[int, dict[str, str], str]:
        """GET a download while the screen keeps being read, as a browser's tab goes on reading it.

        A reader that stops reading the websocket stalls the server (aiohttp stops
        reading the socket after 128 KiB of unread frames, and textual-serve's
        loop, blocked sending them, no longer reads the app's chunks), and
        textual-serve ends a download whose chunk is 4 s late with an empty body.
        """
        reading = asyncio.create_task(self.read_until(lambda v: v.closed, timeout=600))
        try:
            async with client.get(url) as response:
                return response.status, dict(response.headers), await response.text()
        finally:
            reading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reading


async def watch_forever(url: str, token: str | None) -> None:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with aiohttp.ClientSession() as client, client.ws_connect(url, headers=headers) as ws:
        viewer = Viewer(ws)
        if await viewer.panes_shown():
            print("READY", flush=True)
        while not viewer.closed:  # a live browser keeps reading whatever comes
            await viewer.read_until(lambda v: False, timeout=3600)


if __name__ == "__main__":
    asyncio.run(watch_forever(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None))
