"""The scenes data set of Chapter 5: determinism, captions that match the pixels, disjoint splits."""
from __future__ import annotations

import time
from itertools import combinations

import numpy as np
import pytest

from attnlab.data import scenes
from attnlab.data.scenes import VOCAB, make_scenes

COLOUR_NAMES = ("red", "green", "blue")
SHAPE_BY_AREA = {32: "circle", 36: "square", 18: "triangle"}  # pixels of each 8x8-cell shape


def read_scene(image: np.ndarray, cell: int) -> list[tuple[str, str, int, int]]:
    """A noise-free image -> (colour, shape, row, col) of every non-empty cell, from the pixels alone."""
    _, height, width = image.shape
    found = []
    for row in range(height // cell):
        for col in range(width // cell):
            block = image[:, row * cell:(row + 1) * cell, col * cell:(col + 1) * cell]
            lit = block.max(axis=0) > 0
            if lit.any():
                colour = COLOUR_NAMES[int(block[:, lit].mean(axis=1).argmax())]
                found.append((colour, SHAPE_BY_AREA[int(lit.sum())], row, col))
    return found


def expected_caption(objects: list[tuple[str, str, int, int]]) -> str:
    """The documented rule, written independently: subject first in (colour, shape) order."""
    a, b = sorted(objects, key=lambda o: (COLOUR_NAMES.index(o[0]), ("circle", "square", "triangle").index(o[1])))
    if a[2] == b[2]:
        relation = "left of" if a[3] < b[3] else "right of"
    else:
        assert a[3] == b[3], "the two objects must share a row or a column"
        relation = "above" if a[2] < b[2] else "below"
    return f"a {a[0]} {a[1]} {relation} a {b[0]} {b[1]}"


@pytest.mark.parametrize("split", scenes.SPLITS)
def test_deterministic_in_the_seed(split: str) -> None:
    one, two = make_scenes(300, seed=7, split=split), make_scenes(300, seed=7, split=split)
    assert np.array_equal(one.images, two.images) and one.captions == two.captions
    assert np.array_equal(one.tokens, two.tokens) and np.array_equal(one.objects, two.objects)
    other = make_scenes(300, seed=8, split=split)
    assert not np.array_equal(one.images, other.images) and one.captions != other.captions


@pytest.mark.parametrize("split", scenes.SPLITS)
@pytest.mark.parametrize("grid,cell", [(4, 8), (3, 8), (5, 10)])
def test_caption_matches_the_pixels(split: str, grid: int, cell: int) -> None:
    s = make_scenes(400, seed=1, split=split, grid=grid, cell=cell, noise=0.0)
    assert s.images.shape == (400, 3, grid * cell, grid * cell) and s.images.dtype == np.float32
    for image, text, objects in zip(s.images, s.captions, s.objects):
        if cell == 8:  # the areas in SHAPE_BY_AREA are those of 8-pixel cells
            seen = read_scene(image, cell)
            assert len(seen) == 2
            assert text == expected_caption(seen)
        subject, other = objects.tolist()
        assert sorted(((r, c) for *_, r, c in (subject, other))) == \
            sorted((r, c) for r in range(grid) for c in range(grid)
                   if image[:, r * cell:(r + 1) * cell, c * cell:(c + 1) * cell].max() > 0)
        assert text.startswith(f"a {scenes.COLOURS[subject[0]]} {scenes.SHAPES[subject[1]]} ")


def test_noise_keeps_images_in_range_and_objects_visible() -> None:
    s = make_scenes(200, seed=2)
    assert s.images.min() >= 0.0 and s.images.max() <= 1.0
    clean = make_scenes(200, seed=2, noise=0.0)
    assert np.array_equal(clean.objects, s.objects) and clean.captions == s.captions
    assert 0.0 < np.abs(s.images - clean.images).mean() < 0.06


def test_splits_are_disjoint_novel_pair_combinations() -> None:
    train, held = set(scenes.pairs("train")), set(scenes.pairs("held_out"))
    assert not train & held
    assert train | held == {frozenset(p) for p in combinations(range(9), 2)}
    assert len(held) == 9
    for t in range(9):  # every type is seen in training and appears in held-out scenes
        assert sum(t in p for p in train) == 6 and sum(t in p for p in held) == 2

    def pairs_in(split: str) -> set[frozenset[int]]:
        s = make_scenes(3000, seed=0, split=split)
        types = 3 * s.objects[:, :, 0] + s.objects[:, :, 1]
        assert (types[:, 0] < types[:, 1]).all(), "the subject must be the lower type"
        return {frozenset(p) for p in types.tolist()}

    assert pairs_in("train") == train
    assert pairs_in("held_out") == held
    with pytest.raises(ValueError):
        make_scenes(3, split="test")


def test_every_relation_and_cell_occurs() -> None:
    s = make_scenes(2000, seed=3)
    counts = np.bincount(s.relation, minlength=4)
    assert (counts > 350).all(), counts
    cells = {(r, c) for r, c in s.objects[:, :, 2:].reshape(-1, 2).tolist()}
    assert len(cells) == 16


def test_vocab_round_trip_and_padding() -> None:
    s = make_scenes(500, seed=4)
    assert s.tokens.shape == (500, scenes.MAX_TOKENS) and s.tokens.dtype == np.int64
    assert (s.tokens[:, 0] == VOCAB.BOS).all()
    for text, ids in zip(s.captions, s.tokens):
        assert VOCAB.decode(ids) == text
        n = len(text.split()) + 2
        assert ids[n - 1] == VOCAB.EOS and (ids[n:] == VOCAB.PAD).all()
        assert VOCAB.encode(text) == ids[:n].tolist()
    assert {len(t.split()) for t in s.captions} == {7, 8}
    assert VOCAB.decode([VOCAB.BOS, VOCAB.index["a"], VOCAB.EOS, VOCAB.index["red"]]) == "a"
    with pytest.raises(ValueError):
        VOCAB.encode("a red circle left of a blue square", length=5)
    assert len(VOCAB) == len(set(VOCAB.words)) == 15


def test_thousands_of_scenes_in_under_a_second() -> None:
    make_scenes(10)  # warm up
    start = time.process_time()
    make_scenes(2000, seed=5)
    assert time.process_time() - start < 1.0
