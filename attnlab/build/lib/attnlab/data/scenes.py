"""Scenes: small rendered images of two coloured shapes, each with a caption (Chapter 5).

A scene is a `grid` x `grid` board of `cell` x `cell`-pixel cells (4 x 4 cells of 8 x 8
pixels by default, a 32 x 32 RGB image). Exactly two cells hold an object, a coloured
shape: colour in red, green, blue; shape in circle, square, triangle (9 object types,
numbered `type = 3 * colour + shape`). The two objects are of different types and share a
row or a column, so exactly one of four relations holds between them.

The caption is a function of the scene, from one grammar over two objects:

    caption  -> "a" OBJECT RELATION "a" OBJECT
    OBJECT   -> COLOUR SHAPE
    RELATION -> "left of" | "right of" | "above" | "below"

e.g. "a red circle left of a blue square". Its subject (the first object named) is the
object whose type comes first in the order red < green < blue, then circle < square <
triangle; the relation is read from the subject to the other object (row 0 is the top).
So every image has exactly one correct caption and the best possible loss is zero.

Split (held-out = novel object-pair combinations): the 36 unordered pairs of distinct
types are split into 27 training pairs and the 9 held-out pairs {t, (t + 4) mod 9}, t < 9.
Every type occurs in 6 training pairs and in 2 held-out pairs, so a held-out scene shows
known objects in a combination never seen in training. Scenes are deterministic in
(n, seed, split); the two splits use different random streams and never share a pair.

Images are float32 arrays [N, 3, H, W] in [0, 1] (channels first, as torch convolutions
expect): objects with a random brightness and a one-pixel position jitter inside their
cell, plus Gaussian pixel noise.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations

import numpy as np

COLOURS = ("red", "green", "blue")
SHAPES = ("circle", "square", "triangle")
RELATIONS = ("left of", "right of", "above", "below")
N_TYPES = len(COLOURS) * len(SHAPES)
RGB = np.array([[0.95, 0.15, 0.10], [0.15, 0.80, 0.20], [0.20, 0.35, 0.95]], dtype=np.float32)
HELD_OUT_PAIRS = frozenset(frozenset((t, (t + 4) % N_TYPES)) for t in range(N_TYPES))
ALL_PAIRS = tuple(frozenset(p) for p in combinations(range(N_TYPES), 2))
SPLITS = ("train", "held_out")


@dataclass(frozen=True)
class Vocab:
    """Word <-> id, with PAD = 0, BOS = 1, EOS = 2."""

    words: tuple[str, ...]
    index: dict[str, int] = field(init=False, repr=False, compare=False)
    PAD: int = 0
    BOS: int = 1
    EOS: int = 2

    def __post_init__(self) -> None:
        object.__setattr__(self, "index", {w: i for i, w in enumerate(self.words)})

    def __len__(self) -> int:
        return len(self.words)

    def encode(self, caption: str, length: int | None = None) -> list[int]:
        """"a red circle ..." -> [BOS, ids..., EOS] padded with PAD to `length` (if given)."""
        ids = [self.BOS] + [self.index[w] for w in caption.split()] + [self.EOS]
        if length is not None:
            if len(ids) > length:
                raise ValueError(f"caption of {len(ids)} tokens does not fit in {length}")
            ids += [self.PAD] * (length - len(ids))
        return ids

    def decode(self, ids: object) -> str:
        """Token ids (list, array or tensor) -> words, skipping BOS and PAD, stopping at EOS."""
        words = []
        for i in np.asarray(ids).reshape(-1).tolist():
            if i == self.EOS:
                break
            if i not in (self.PAD, self.BOS):
                words.append(self.words[i])
        return " ".join(words)


VOCAB = Vocab(("<pad>", "<bos>", "<eos>", "a", *COLOURS, *SHAPES, "left", "right", "of", "above", "below"))
MAX_TOKENS = 10  # BOS a COLOUR SHAPE left of a COLOUR SHAPE EOS


@dataclass(frozen=True)
class Scenes:
    """A batch of scenes.

    images[N, 3, H, W] float32; objects[N, 2, 4] int64 rows (colour, shape, row, col) with
    the subject first; relation[N] index into RELATIONS; captions: N strings;
    tokens[N, MAX_TOKENS] int64 (BOS caption EOS, then PAD).
    """

    images: np.ndarray
    objects: np.ndarray
    relation: np.ndarray
    captions: list[str]
    tokens: np.ndarray
    grid: int
    cell: int

    def __len__(self) -> int:
        return len(self.captions)


def object_type(colour: int, shape: int) -> int:
    """Type number 3*colour + shape: the order in which subjects are chosen."""
    return len(SHAPES) * colour + shape


def caption(subject: tuple[int, int], relation: int, other: tuple[int, int]) -> str:
    """(colour, shape) of the subject, relation index, (colour, shape) of the other -> caption."""
    return (f"a {COLOURS[subject[0]]} {SHAPES[subject[1]]} {RELATIONS[relation]} "
            f"a {COLOURS[other[0]]} {SHAPES[other[1]]}")


def relation_of(subject_cell: tuple[int, int], other_cell: tuple[int, int]) -> int:
    """Relation index from the subject's (row, col) to the other's, which share a row or a column."""
    (r1, c1), (r2, c2) = subject_cell, other_cell
    if r1 == r2 and c1 != c2:
        return 0 if c1 < c2 else 1
    if c1 == c2 and r1 != r2:
        return 2 if r1 < r2 else 3
    raise ValueError(f"cells {subject_cell} and {other_cell} share neither a row nor a column")


def pairs(split: str) -> tuple[frozenset[int], ...]:
    """The unordered type pairs that scenes of `split` ('train' or 'held_out') use."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    return tuple(p for p in ALL_PAIRS if (p in HELD_OUT_PAIRS) == (split == "held_out"))


def shape_masks(cell: int = 8) -> np.ndarray:
    """masks[shape, 3, 3, cell, cell] float32: each shape at every (dy, dx) jitter in {-1, 0, 1}."""
    if cell < 6:
        raise ValueError("cells must be at least 6 pixels wide")
    c = (cell - 1) / 2  # centre of the cell in pixel coordinates
    r = (cell - 2) / 2  # half-size of the shape's box: a one-pixel margin for the jitter
    y, x = np.mgrid[0:cell, 0:cell].astype(np.float32)
    base = np.stack([
        (y - c) ** 2 + (x - c) ** 2 <= r ** 2,  # circle
        (np.abs(y - c) <= r - 0.5) & (np.abs(x - c) <= r - 0.5),  # square
        (y >= c - r + 0.5) & (y <= c + r) & (np.abs(x - c) <= (y - (c - r)) / 2),  # triangle, apex up
    ]).astype(np.float32)
    masks = np.zeros((len(SHAPES), 3, 3, cell, cell), dtype=np.float32)
    for dy in (-1, 0, 1):
        for dx in (-1, 0, 1):
            masks[:, dy + 1, dx + 1] = np.roll(base, (dy, dx), axis=(1, 2))
    return masks


def make_scenes(n: int, seed: int = 0, split: str = "train", grid: int = 4, cell: int = 8,
                noise: float = 0.05) -> Scenes:
    """n scenes of `split`, deterministic in (n, seed, split, grid, cell, noise)."""
    if grid < 2:
        raise ValueError("the grid needs at least 2 cells per side")
    split_pairs = np.array([sorted(p) for p in pairs(split)], dtype=np.int64)  # [P, 2], subject first
    rng = np.random.default_rng([seed, SPLITS.index(split)])
    # Types: a pair, subject (the lower type) first.
    types = split_pairs[rng.integers(len(split_pairs), size=n)]  # [n, 2]
    # Cells: a line (row or column), then two distinct positions on it.
    line = rng.integers(grid, size=n)
    vertical = rng.random(n) < 0.5
    first = rng.integers(grid, size=n)
    second = (first + rng.integers(1, grid, size=n)) % grid  # != first
    along = np.stack([first, second], axis=1)  # [n, 2]: subject's and other's position on the line
    rows = np.where(vertical[:, None], along, line[:, None])
    cols = np.where(vertical[:, None], line[:, None], along)
    colour, shape = types // len(SHAPES), types % len(SHAPES)
    objects = np.stack([colour, shape, rows, cols], axis=2)  # [n, 2, 4]
    relation = np.where(vertical, np.where(rows[:, 0] < rows[:, 1], 2, 3),
                        np.where(cols[:, 0] < cols[:, 1], 0, 1))
    captions = [caption((c[0], s[0]), r, (c[1], s[1])) for c, s, r in
                zip(colour.tolist(), shape.tolist(), relation.tolist())]
    tokens = np.array([VOCAB.encode(t, MAX_TOKENS) for t in captions], dtype=np.int64)
    images = _render(rng, objects, grid, cell, noise)
    return Scenes(images=images, objects=objects, relation=relation, captions=captions,
                  tokens=tokens, grid=grid, cell=cell)


def _render(rng: np.random.Generator, objects: np.ndarray, grid: int, cell: int, noise: float) -> np.ndarray:
    """objects[n, 2, 4] -> images[n, 3, grid*cell, grid*cell] float32."""
    n = len(objects)
    masks = shape_masks(cell)
    blocks = np.zeros((n, grid, grid, 3, cell, cell), dtype=np.float32)
    jitter = rng.integers(3, size=(n, 2, 2))
    brightness = rng.uniform(0.75, 1.0, size=(n, 2)).astype(np.float32)
    idx = np.arange(n)
    for k in range(2):
        colour, shape, row, col = objects[:, k].T
        mask = masks[shape, jitter[:, k, 0], jitter[:, k, 1]]  # [n, cell, cell]
        rgb = RGB[colour] * brightness[:, k, None]  # [n, 3]
        blocks[idx, row, col] = rgb[:, :, None, None] * mask[:, None]
    images = blocks.transpose(0, 3, 1, 4, 2, 5).reshape(n, 3, grid * cell, grid * cell)
    if noise > 0:
        images += noise * rng.standard_normal(images.shape, dtype=np.float32)
    return np.clip(images, 0.0, 1.0, out=images)
