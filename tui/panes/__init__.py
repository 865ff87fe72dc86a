"""The panes of the live TUI, one module each."""
