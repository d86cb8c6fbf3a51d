"""Pictures of an environment's state for ``render_mode="rgb_array"``, drawn with NumPy alone.

Every hss-gym environment renders ``"ansi"`` (one text line or table) and ``"rgb_array"`` (an
``H x W x 3`` ``uint8`` image). The image is what a person would look at to follow an episode
(device occupancy and recent latencies for the HSS, channels and tenants for FleetIO, chips and
streams for RLAlloc, the cache tier's load for L-QoCo); it is also what Stable-Baselines3 asks for
by default (``make_vec_env`` passes ``render_mode="rgb_array"``) and what Gymnasium's
``RecordVideo`` records. The core install has no plotting library, so this module draws filled
rectangles, bar charts and a 3x5 pixel font straight into a NumPy array: a frame costs tens of
microseconds, and no dependency is added.

The helpers are deliberately small: :class:`Canvas` (rectangles, bars, strips, text) and the
:data:`PALETTE` of distinguishable colours. Each environment's ``render`` composes its own frame.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

#: Render modes every hss-gym environment accepts.
RENDER_MODES = ["ansi", "rgb_array"]

Color = tuple[int, int, int]

WHITE: Color = (255, 255, 255)
BLACK: Color = (20, 20, 20)
GREY: Color = (200, 200, 200)
DARK: Color = (90, 90, 90)
RED: Color = (214, 39, 40)
#: Tab10-like colours, one per device / tenant / stream (cycled when there are more).
PALETTE: tuple[Color, ...] = ((31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40),
                              (148, 103, 189), (140, 86, 75), (227, 119, 194), (127, 127, 127),
                              (188, 189, 34), (23, 190, 207))

# 3x5 glyphs, rows top to bottom, '#' = ink. Lower case is drawn as upper case.
_GLYPHS: dict[str, tuple[str, ...]] = {
    "0": ("###", "#.#", "#.#", "#.#", "###"), "1": (".#.", "##.", ".#.", ".#.", "###"),
    "2": ("###", "..#", "###", "#..", "###"), "3": ("###", "..#", ".##", "..#", "###"),
    "4": ("#.#", "#.#", "###", "..#", "..#"), "5": ("###", "#..", "###", "..#", "###"),
    "6": ("###", "#..", "###", "#.#", "###"), "7": ("###", "..#", ".#.", ".#.", ".#."),
    "8": ("###", "#.#", "###", "#.#", "###"), "9": ("###", "#.#", "###", "..#", "###"),
    "A": (".#.", "#.#", "###", "#.#", "#.#"), "B": ("##.", "#.#", "##.", "#.#", "##."),
    "C": (".##", "#..", "#..", "#..", ".##"), "D": ("##.", "#.#", "#.#", "#.#", "##."),
    "E": ("###", "#..", "##.", "#..", "###"), "F": ("###", "#..", "##.", "#..", "#.."),
    "G": (".##", "#..", "#.#", "#.#", ".##"), "H": ("#.#", "#.#", "###", "#.#", "#.#"),
    "I": ("###", ".#.", ".#.", ".#.", "###"), "J": ("..#", "..#", "..#", "#.#", ".#."),
    "K": ("#.#", "#.#", "##.", "#.#", "#.#"), "L": ("#..", "#..", "#..", "#..", "###"),
    "M": ("#.#", "###", "###", "#.#", "#.#"), "N": ("##.", "#.#", "#.#", "#.#", "#.#"),
    "O": (".#.", "#.#", "#.#", "#.#", ".#."), "P": ("##.", "#.#", "##.", "#..", "#.."),
    "Q": (".#.", "#.#", "#.#", "##.", ".##"), "R": ("##.", "#.#", "##.", "#.#", "#.#"),
    "S": (".##", "#..", ".#.", "..#", "##."), "T": ("###", ".#.", ".#.", ".#.", ".#."),
    "U": ("#.#", "#.#", "#.#", "#.#", "###"), "V": ("#.#", "#.#", "#.#", "#.#", ".#."),
    "W": ("#.#", "#.#", "###", "###", "#.#"), "X": ("#.#", "#.#", ".#.", "#.#", "#.#"),
    "Y": ("#.#", "#.#", ".#.", ".#.", ".#."), "Z": ("###", "..#", ".#.", "#..", "###"),
    " ": ("...",) * 5, ".": ("...", "...", "...", "...", ".#."),
    ",": ("...", "...", "...", ".#.", "#.."), ":": ("...", ".#.", "...", ".#.", "..."),
    "/": ("..#", "..#", ".#.", "#..", "#.."), "-": ("...", "...", "###", "...", "..."),
    "+": ("...", ".#.", "###", ".#.", "..."), "=": ("...", "###", "...", "###", "..."),
    "%": ("#.#", "..#", ".#.", "#..", "#.#"), "(": (".#.", "#..", "#..", "#..", ".#."),
    ")": (".#.", "..#", "..#", "..#", ".#."), "_": ("...", "...", "...", "...", "###"),
    "<": ("..#", ".#.", "#..", ".#.", "..#"), ">": ("#..", ".#.", "..#", ".#.", "#.."),
    "?": ("##.", "..#", ".#.", "...", ".#."), "*": ("#.#", ".#.", "#.#", "...", "..."),
}
_MASKS = {ch: np.array([[c == "#" for c in row] for row in rows], dtype=bool) for ch, rows in _GLYPHS.items()}


def check_render_mode(render_mode: str | None) -> None:
    """Raise ``ValueError`` naming the valid modes unless ``render_mode`` is one of them."""
    if render_mode is not None and render_mode not in RENDER_MODES:
        raise ValueError(f"render_mode must be None, 'ansi' or 'rgb_array', got {render_mode!r}")


def color(i: int) -> Color:
    """The ``i``-th palette colour (cycled)."""
    return PALETTE[i % len(PALETTE)]


def tint(c: Color, amount: float) -> Color:
    """``c`` mixed with white: ``amount`` 0 gives ``c``, 1 gives white (lighter shades mark
    secondary things: shared or idle chips, harvested channels)."""
    a = min(max(float(amount), 0.0), 1.0)
    return tuple(int(round(v + (255 - v) * a)) for v in c)  # type: ignore[return-value]


class Canvas:
    """An ``H x W x 3`` uint8 image with a few drawing primitives (coordinates: x right, y down,
    in pixels; shapes are clipped to the canvas)."""

    def __init__(self, height: int, width: int, background: Color = WHITE) -> None:
        self.img = np.empty((height, width, 3), dtype=np.uint8)
        self.img[:] = background
        self.height, self.width = height, width

    def rect(self, x: float, y: float, w: float, h: float, c: Color) -> None:
        """Fill the rectangle with top-left ``(x, y)``, width ``w`` and height ``h``."""
        x0, y0 = max(int(round(x)), 0), max(int(round(y)), 0)
        x1, y1 = min(int(round(x + w)), self.width), min(int(round(y + h)), self.height)
        if x1 > x0 and y1 > y0:
            self.img[y0:y1, x0:x1] = c

    def frame(self, x: float, y: float, w: float, h: float, c: Color = DARK) -> None:
        """A one-pixel outline of the rectangle."""
        self.rect(x, y, w, 1, c)
        self.rect(x, y + h - 1, w, 1, c)
        self.rect(x, y, 1, h, c)
        self.rect(x + w - 1, y, 1, h, c)

    def hbar(self, x: float, y: float, w: float, h: float, frac: float, c: Color,
             marks: Sequence[float] = ()) -> None:
        """A horizontal gauge: the first ``frac`` (clipped to [0, 1]; NaN = empty) of the outlined
        box filled with ``c``, a thin dark tick at each fraction in ``marks`` (thresholds)."""
        self.rect(x, y, w, h, tint(GREY, 0.6))
        f = 0.0 if not np.isfinite(frac) else min(max(float(frac), 0.0), 1.0)
        self.rect(x, y, w * f, h, c)
        for m in marks:
            self.rect(x + w * min(max(m, 0.0), 1.0) - 1, y - 2, 2, h + 4, BLACK)
        self.frame(x, y, w, h)

    def strip(self, x: float, y: float, w: float, h: float, values: Sequence[float] | np.ndarray,
              c: Color, slots: int | None = None) -> None:
        """Column chart of ``values`` (fractions in [0, 1], oldest left) rising from the box's
        bottom; ``slots`` columns fill the width (default ``len(values)``), so a strip that is not
        yet full leaves the right part empty instead of stretching."""
        self.rect(x, y, w, h, tint(GREY, 0.8))
        v = np.nan_to_num(np.clip(np.asarray(values, dtype=np.float64), 0.0, 1.0), nan=0.0)
        n = max(slots or len(v), 1)
        v = v[-n:]
        if len(v):
            cols = np.arange(int(w))
            idx = (cols * n) // max(int(w), 1)
            have = idx < len(v)
            tops = np.round(h * (1.0 - v[idx[have]])).astype(int)
            y0, x0 = int(round(y)), int(round(x))
            rows = np.arange(int(h))[:, None]
            mask = rows >= tops[None, :]
            region = self.img[y0:y0 + int(h), x0:x0 + int(have.sum())]
            region[mask[:region.shape[0], :region.shape[1]]] = c
        self.frame(x, y, w, h)

    def text(self, x: float, y: float, s: str, c: Color = BLACK, scale: int = 2) -> float:
        """Write ``s`` (3x5 glyphs, ``scale`` pixels per dot, 4 dots per character; characters
        without a glyph are drawn as '?'); returns the x after the last character."""
        cx = int(round(x))
        y0 = int(round(y))
        for ch in s.upper():
            mask = _MASKS.get(ch, _MASKS["?"])
            big = np.kron(mask, np.ones((scale, scale), dtype=bool))
            ys, xs = np.nonzero(big)
            ys, xs = ys + y0, xs + cx
            ok = (ys >= 0) & (ys < self.height) & (xs >= 0) & (xs < self.width)
            self.img[ys[ok], xs[ok]] = c
            cx += 4 * scale
        return cx

    @staticmethod
    def text_width(s: str, scale: int = 2) -> int:
        """Pixels that :meth:`text` uses for ``s``."""
        return 4 * scale * len(s)


def log_fraction(values: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """``values`` on a log scale from ``lo`` (0) to ``hi`` (1), clipped: latency strips span
    microseconds to tens of milliseconds, which a linear axis would flatten."""
    v = np.maximum(np.asarray(values, dtype=np.float64), lo)
    return np.clip(np.log(v / lo) / np.log(hi / lo), 0.0, 1.0)


def message(text: str, height: int = 60, width: int = 320) -> np.ndarray:
    """A small frame that only says ``text`` (e.g. "not reset"): ``render`` returns an image in
    ``rgb_array`` mode whatever the state, so video recorders never receive ``None``."""
    cv = Canvas(height, width)
    cv.text(8, height // 2 - 5, text)
    return cv.img
