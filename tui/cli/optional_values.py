"""Flags whose value is optional (`--capture [N]`, `--profile [LEVEL]`), put where argparse reads them right.

argparse gives such a flag whatever word follows it, so `gputop run --capture demo:mlp` read the
target as --capture's N. `optional_values_alone` reorders argv before argparse sees it, for every
such flag of a parser; the run's options themselves are `options`'.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

__all__ = ["optional_values_alone"]


def optional_values_alone(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """`argv` with every optional-value flag (nargs='?': `--capture [N]`, `--profile [LEVEL]`) that is not
    followed by a value it takes moved to the end, where argparse gives it its default value (`const`).

    argparse gives such a flag whatever word follows it, so `gputop run --capture demo:mlp` read the
    target as --capture's N and failed (`invalid int value: 'demo:mlp'`). A word is the flag's value
    only where the flag would take it: one of its choices, or a word its type converts; anything else
    (the target, another option) is left where it is. Covers every such flag of `parser`, present and
    future; an abbreviation argparse would accept (`--capt`) counts as the flag.
    """
    flags = [flag for action in parser._actions for flag in action.option_strings]
    optional = {
        flag: action
        for action in parser._actions
        if action.nargs == argparse.OPTIONAL and action.option_strings
        for flag in action.option_strings
    }
    if not optional:
        return list(argv)
    kept: list[str] = []
    alone: list[str] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        action = _optional_action(token, optional, flags)
        if action is None:
            kept.append(token)
        elif i + 1 < len(argv) and _takes(action, argv[i + 1]):
            kept += [token, argv[i + 1]]
            i += 1
        else:
            alone.append(token)
        i += 1
    return kept + alone


def _optional_action(token: str, optional: Mapping[str, argparse.Action], flags: list[str]) -> argparse.Action | None:
    """The optional-value action `token` names by itself (`--capture`, or an abbreviation argparse accepts)."""
    if token in optional:
        return optional[token]
    if not token.startswith("--") or "=" in token or token in flags:  # `--flag=VALUE` has its value already
        return None
    matches = [flag for flag in flags if flag.startswith(token)]
    return optional.get(matches[0]) if len(matches) == 1 else None


def _takes(action: argparse.Action, word: str) -> bool:
    """Whether argparse would read `word` as a valid value of `action`."""
    if word.startswith("-") and not _number(word):
        return False  # an option: argparse does not give it as a value
    value: Any = word
    if action.type is not None:
        try:
            value = action.type(word)  # type: ignore[operator]
        except (ValueError, TypeError, argparse.ArgumentTypeError):
            return False
    return action.choices is None or value in action.choices


def _number(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True
