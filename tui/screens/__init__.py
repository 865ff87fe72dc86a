"""The run's screen and the windows gputop opens over it, one module each, all importable from here.

`main` is the screen of the panes and the run's keys, the app's first; the rest are windows, but for
`fleet`, the screen of `gputop fleet` (every run a Prometheus scrapes) and its key help.

A pane is watched for the whole run; a screen is opened by a key, read, and
closed: the key help, the device chooser, the roofline, the layer view, the Timeline and a
capture's dispatch list. Keeping them apart from the panes lets the app find
every window in one place and lets each pane module hold only its own pane;
like the panes, they reach the engine only through the bridge.
"""

from __future__ import annotations

from gputop.tui.screens.capture import CaptureScreen
from gputop.tui.screens.device import DeviceScreen
from gputop.tui.screens.fleet import FleetHelpScreen, FleetScreen
from gputop.tui.screens.help import HelpScreen
from gputop.tui.screens.layers import LayersScreen
from gputop.tui.screens.main import DRAWN_WINDOWS, MainScreen
from gputop.tui.screens.roofline import RooflineScreen
from gputop.tui.screens.stacks import StacksScreen
from gputop.tui.screens.timeline import TimelineScreen
from gputop.tui.screens.window import Window

__all__ = [
    "DRAWN_WINDOWS",
    "CaptureScreen",
    "DeviceScreen",
    "FleetHelpScreen",
    "FleetScreen",
    "HelpScreen",
    "LayersScreen",
    "MainScreen",
    "RooflineScreen",
    "StacksScreen",
    "TimelineScreen",
    "Window",
]
