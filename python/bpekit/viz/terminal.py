"""The text view in a terminal (``bpekit show``): each token on its own background colour
and its ids below, or, when the output is no terminal, plain text with the tokens
separated by ``|`` and the ids on their own line, for pipes and files."""

from __future__ import annotations

from bpekit.viz.data import TextTokens, hex_bytes, token_text
from bpekit.viz.marks import marked_runs

# Light ANSI 256-colour backgrounds, readable under black text, cycled so that
# neighbouring tokens differ (pink, blue, green, yellow, lilac, cyan).
PALETTE = (224, 153, 194, 229, 189, 159)
SPECIAL = 222  # amber, as the page's special tokens

_RESET = "\x1b[0m"
SEPARATOR = "|"


def _bg(colour: int) -> str:
    return f"\x1b[48;5;{colour};38;5;16m"


def _shown(piece: bytes, special: str | None) -> list[tuple[str, bool]]:
    """The runs that show one token: its text with marks for the invisible characters
    (so that no escape sequence in the text reaches the terminal), its special token's
    name, or its bytes as ``\\xe6\\x97`` when they are no text on their own."""
    if special is not None:
        return [(special, False)]
    text = token_text(piece)
    if text is None:
        return [("".join(f"\\x{b}" for b in hex_bytes(piece).split()), False)]
    # Spaces stay spaces: the colours (or the separators) already show where they are.
    return [(run.replace("·", " ") if mark else run, mark) for run, mark in marked_runs(text)]


def render_plain(tt: TextTokens, specials: dict[int, str], ids: bool = True) -> str:
    """The tokens separated by ``|`` (a newline shown as ``↵`` before the line break), then
    the ids on one line.

    >>> from bpekit.viz.data import TextTokens
    >>> tt = TextTokens([15496, 995, 198], [b"Hello", b" world", b"\\n"], 3, 12, 12)
    >>> print(render_plain(tt, {}), end="")
    Hello| world|↵
    15496 995 198
    """
    parts = [
        "".join(run for run, _ in _shown(piece, specials.get(i)))
        for i, piece in zip(tt.ids, tt.pieces, strict=True)
    ]
    out = SEPARATOR.join(parts)
    if out and not out.endswith("\n"):
        out += "\n"
    if ids and tt.ids:
        out += " ".join(map(str, tt.ids)) + "\n"
    out += _cap_note(tt)
    return out


def render_color(tt: TextTokens, specials: dict[int, str], ids: bool = True) -> str:
    """Each token on a background colour (the marks of newlines and tabs dimmed), the ids
    on the same colours, and a dim line of counts."""
    out: list[str] = []
    colours: list[int] = []
    for n, (i, piece) in enumerate(zip(tt.ids, tt.pieces, strict=True)):
        colour = SPECIAL if i in specials else PALETTE[n % len(PALETTE)]
        colours.append(colour)
        hex_shown = i not in specials and token_text(piece) is None
        for run, mark in _shown(piece, specials.get(i)):
            # Marks dim; special tokens bold; the bytes of a split character purple, as on the page.
            style = _bg(colour) + ("\x1b[2m" if mark else "\x1b[1m" if i in specials else "")
            if hex_shown:
                style += "\x1b[38;5;54m"
            # The colour stops before each line break: a background carried over a
            # newline fills the rest of the line in many terminals.
            lines = run.split("\n")
            out.append("\n".join(style + line + _RESET if line else "" for line in lines))
    text = "".join(out)
    if text and not text.endswith("\n"):
        text += "\n"
    if ids and tt.ids:
        text += " ".join(f"{_bg(c)}{i}{_RESET}" for i, c in zip(tt.ids, colours, strict=True)) + "\n"
    stats = (
        f"{tt.total_tokens:,} tokens · {tt.total_bytes:,} bytes · {tt.total_chars:,} characters"
        f" · {tt.bytes_per_token:.2f} bytes/token"
    )
    text += f"\x1b[2m{stats}{_RESET}\n"
    note = _cap_note(tt)
    if note:
        text += f"\x1b[2m{note.rstrip()}{_RESET}\n"
    return text


def _cap_note(tt: TextTokens) -> str:
    if not tt.capped:
        return ""
    return f"(showing the first {len(tt.ids):,} of {tt.total_tokens:,} tokens)\n"
