"""The procedural shape world: scene graphs are validated, renders are exact where they can be."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icml25.data.shape_world import (
    BACKGROUNDS,
    COLOURS,
    SHAPES,
    Scene,
    ShapeObject,
    cell_name,
    describe,
    random_scene,
    render,
    render_batch,
)


def test_render_shape_dtype_and_range():
    scene = Scene((ShapeObject("circle", "red"),), background="white")
    image = render(scene, 12)
    assert image.shape == (12, 12, 3) and image.dtype == np.float32
    assert image.min() >= 0.0 and image.max() <= 1.0
    # the corner is background, the centre is the object's colour
    np.testing.assert_allclose(image[0, 0], BACKGROUNDS["white"], atol=1e-6)
    np.testing.assert_allclose(image[6, 6], COLOURS["red"], atol=1e-6)


def test_every_shape_renders_differently():
    images = [render(Scene((ShapeObject(s, "blue"),)), 16) for s in SHAPES]
    for i in range(len(images)):
        for j in range(i + 1, len(images)):
            assert np.abs(images[i] - images[j]).sum() > 1.0, (SHAPES[i], SHAPES[j])


def test_backgrounds_contrast_with_every_object_colour():
    for bg in BACKGROUNDS.values():
        for colour in COLOURS.values():
            assert max(abs(a - b) for a, b in zip(bg, colour, strict=True)) >= 0.3


def test_small_object_covers_less_than_large():
    def coverage(size: str) -> float:
        image = render(Scene((ShapeObject("square", "yellow", size),)), 32)
        return float((np.abs(image - np.array(BACKGROUNDS["black"])).sum(-1) > 0.5).mean())

    assert coverage("small") < 0.5 * coverage("large")


def test_object_is_drawn_in_its_cell():
    scene = Scene((ShapeObject("square", "green", "large", (2, 0)),), grid=3)
    image = render(scene, 30)
    differs = np.abs(image - np.array(BACKGROUNDS["black"])).sum(-1) > 0.1
    rows, cols = np.nonzero(differs)
    assert rows.min() >= 20 and cols.max() < 10


def test_render_batch_is_channels_first_and_deterministic():
    rng = np.random.default_rng(0)
    scenes = [random_scene(rng, n_objects=(1, 4), grid=3) for _ in range(5)]
    a, b = render_batch(scenes, 24), render_batch(scenes, 24)
    assert a.shape == (5, 3, 24, 24) and a.dtype.is_floating_point
    assert (a == b).all()
    np.testing.assert_array_equal(a[2].permute(1, 2, 0).numpy(), render(scenes[2], 24))


def test_relations_and_caption():
    scene = Scene(
        (ShapeObject("ring", "orange", "small", (0, 0)), ShapeObject("bar", "purple", "large", (2, 1))),
        background="gray",
        grid=3,
    )
    assert set(scene.relations()) == {(0, "left of", 1), (0, "above", 1)}
    assert (
        describe(scene)
        == "a small orange ring at the top left. a large purple bar at the bottom. gray background."
    )
    assert describe(Scene((ShapeObject("cross", "green"),), "teal")) == "a green cross on teal background"
    assert cell_name((1, 1), 3) == "centre" and cell_name((0, 3), 4) == "row 1, column 4"


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), grid=st.integers(1, 4), n=st.integers(1, 4))
def test_random_scenes_are_valid_and_seeded(seed, grid, n):
    n = min(n, grid * grid)
    a = random_scene(np.random.default_rng(seed), n_objects=n, grid=grid)
    b = random_scene(np.random.default_rng(seed), n_objects=n, grid=grid)
    assert a == b and len(a.objects) == n
    assert len({o.cell for o in a.objects}) == n
    assert all(0 <= r < grid and 0 <= c < grid for r, c in (o.cell for o in a.objects))


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: ShapeObject("hexagon", "red"), "shape"),
        (lambda: ShapeObject("circle", "pink"), "colour"),
        (lambda: ShapeObject("circle", "red", "huge"), "size"),
        (lambda: ShapeObject("circle", "red", cell=(-1, 0)), "cell"),
        (lambda: Scene((ShapeObject("circle", "red", cell=(1, 0)),), grid=1), "grid"),
        (lambda: Scene((ShapeObject("circle", "red"), ShapeObject("bar", "red"))), "distinct"),
        (lambda: Scene((), background="pink"), "background"),
        (lambda: Scene((), grid=0), "grid"),
        (lambda: render(Scene(()), 0), "size"),
        (lambda: render(Scene(()), 8, supersample=0), "supersample"),
        (lambda: render_batch([]), "scenes"),
        (lambda: random_scene(np.random.default_rng(0), n_objects=5, grid=2), "n_objects"),
        (lambda: random_scene(np.random.default_rng(0), n_objects=0), "n_objects"),
        (lambda: random_scene(np.random.default_rng(0), shapes=()), "shapes"),
        (lambda: random_scene(np.random.default_rng(0), colours=("pink",)), "colours"),
    ],
)
def test_bad_input_is_named(build, match):
    with pytest.raises(ValueError, match=match):
        build()


def test_wrong_types():
    with pytest.raises(TypeError, match="scene"):
        render("a red circle")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="rng"):
        random_scene(0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="objects"):
        Scene(["circle"])  # type: ignore[arg-type]
