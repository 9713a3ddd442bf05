"""The MIG Gantt chart labels every task, and no two of its texts overlap (issue 40 item 10).

Checked on the drawn figure: the extents the Agg renderer gives the texts (with the frames of the number tags),
the boxes the patches cover, and the leader lines from the tags to their boxes.
"""

from __future__ import annotations

import random
import re

import pytest

from gpuweave.mig.far import far
from gpuweave.mig.gantt import gantt_figure, plot_gantt
from gpuweave.mig.problem import bundled_dataset, make_problem
from gpuweave.plotting import plot_text

from .helpers import random_problem

TOLERANCE = 0.5  # pixels: extents that share no more than this much do not overlap


def _tiny_tail_problem():
    """A batch of a few long kernels and many very short ones: FAR packs the short ones into slivers."""
    rng = random.Random(5)
    names, rows = [], []
    for i in range(48):
        base = rng.uniform(10, 30) if i % 4 == 0 else rng.choice([0.02, 0.05, 0.1, 0.3, 1.0])
        names.append(f"kernel_{i:02d}")
        rows.append([base * s**-0.7 for s in (1, 2, 3, 4, 7)])
    return make_problem(names, rows, "A100")


SCHEDULES = {
    "rodinia": lambda: far(bundled_dataset("rodinia-a100")).schedule,
    "random-2gpus": lambda: far(random_problem(random.Random(3), n=90, gpus=2)).schedule,
    "tiny-tail": lambda: far(_tiny_tail_problem()).schedule,
    "a30": lambda: far(random_problem(random.Random(7), gpu="A30", n=30)).schedule,
}


@pytest.fixture(scope="module", params=sorted(SCHEDULES))
def drawn(request):
    schedule = SCHEDULES[request.param]()
    fig = gantt_figure(schedule)
    fig.canvas.draw()
    return schedule, fig, fig.canvas.get_renderer()


def _extent(text, renderer):
    """The pixels a text covers, its frame included."""
    box = text.get_window_extent(renderer)
    patch = text.get_bbox_patch()
    if patch is not None:
        frame = patch.get_window_extent(renderer)
        box = type(box).union([box, frame])
    return box


def _overlap(a, b) -> bool:
    return min(a.x1, b.x1) - max(a.x0, b.x0) > TOLERANCE and min(a.y1, b.y1) - max(a.y0, b.y0) > TOLERANCE


def _box_pixels(ax, schedule, task):
    """The pixels of a task's main box (over the slices it computes on)."""
    from gpuweave.hardware.catalog import get_mig_geometry

    geom = get_mig_geometry(schedule.gpu)
    rows = [task.gpu_index * geom.num_slices + s for s in geom.placement(task.size, task.start_slice).slices]
    (a, b), (c, d) = ax.transData.transform([(task.start, min(rows) - 0.4), (task.end, max(rows) + 0.4)])
    return min(a, c), max(a, c), min(b, d), max(b, d)


def _drawn_texts(fig, ax):
    """Every text the figure shows: title, axis labels, tick labels in view, labels on the chart, legends."""
    texts = [ax.title, ax.xaxis.label, *[t for t in ax.texts if t.get_visible()]]
    lo, hi = sorted(ax.get_xlim())
    texts += [t for t in ax.get_xticklabels() if lo <= t.get_position()[0] <= hi]
    lo, hi = sorted(ax.get_ylim())
    texts += [t for t in ax.get_yticklabels() if lo <= t.get_position()[1] <= hi]
    legends = list(fig.legends) + [a.get_legend() for a in fig.axes if a.get_legend() is not None]
    for legend in legends:
        texts += [legend.get_title(), *legend.get_texts()]
    return [t for t in texts if t.get_visible() and t.get_text().strip()]


def _key(fig) -> dict[int, str]:
    """Number -> task name, from the key of numbered tasks ("12  name: S4, 1.00–2.00 s")."""
    entries = {}
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is None:
            continue
        for text in legend.get_texts():
            number, rest = text.get_text().split("  ", 1)
            entries[int(number)] = rest.rsplit(": ", 1)[0]
    return entries


def test_no_two_texts_overlap_and_none_leaves_the_figure(drawn):
    _, fig, renderer = drawn
    ax = fig.axes[0]
    texts = _drawn_texts(fig, ax)
    extents = [_extent(t, renderer) for t in texts]
    page = fig.bbox
    for t, e in zip(texts, extents):
        assert page.x0 <= e.x0 and e.x1 <= page.x1 and page.y0 <= e.y0 and e.y1 <= page.y1, t.get_text()
    for i in range(len(texts)):
        for j in range(i + 1, len(texts)):
            assert not _overlap(extents[i], extents[j]), (texts[i].get_text(), texts[j].get_text())


def test_every_task_has_a_label_in_its_box_or_a_numbered_tag_that_points_at_it(drawn):
    schedule, fig, renderer = drawn
    ax = fig.axes[0]
    frame = ax.get_window_extent(renderer)
    key = _key(fig)
    assert sorted(key) == list(range(1, len(key) + 1))
    assert len(set(key.values())) == len(key)
    shown = [t for t in ax.texts if t.get_visible()]
    tags = {}
    for t in shown:
        match = re.fullmatch(r"(\d+)(?:\u2013(\d+))?", t.get_text())
        framed = t.get_bbox_patch() is not None and t.get_bbox_patch().get_edgecolor()[3] > 0  # not a backing
        if match and framed:
            first = int(match.group(1))
            for n in range(first, int(match.group(2) or first) + 1):
                tags[n] = t
    number = {name: n for n, name in key.items()}
    tagged_boxes: dict[int, list] = {}
    for task in schedule.tasks:
        x0, x1, y0, y1 = _box_pixels(ax, schedule, task)
        name = plot_text(task.task)
        label = str(number[name]) if name in number else name
        inside = [
            t
            for t in shown
            if t.get_text() == label
            and x0 <= t.get_window_extent(renderer).x0
            and t.get_window_extent(renderer).x1 <= x1
            and y0 <= t.get_window_extent(renderer).y0
            and t.get_window_extent(renderer).y1 <= y1
        ]
        if inside:
            continue
        assert name in number, f"{name} has neither its name in its box nor a number in the key"
        tag = tags.get(number[name])
        assert tag is not None, f"{name} (number {number[name]}) has no tag"
        tag_extent = _extent(tag, renderer)
        assert frame.x0 <= tag_extent.x0 and tag_extent.x1 <= frame.x1, name
        assert frame.y0 <= tag_extent.y0 and tag_extent.y1 <= frame.y1, name
        tagged_boxes.setdefault(id(tag), []).append((x0, x1, y0, y1))
    # each tag's leader runs from inside the tag to the boxes of the tasks it stands for
    for t in {id(t): t for t in tags.values()}.values():
        boxes = tagged_boxes.get(id(t))
        if not boxes:
            continue
        hull = (min(b[0] for b in boxes), max(b[1] for b in boxes), min(b[2] for b in boxes), max(b[3] for b in boxes))
        extent = _extent(t, renderer)
        leaders = []
        for line in ax.lines:
            xy = ax.transData.transform(line.get_xydata())
            if len(xy) != 2:
                continue
            (ax0, ay0), (ax1, ay1) = xy
            if extent.x0 <= ax0 <= extent.x1 and extent.y0 <= ay0 <= extent.y1:
                leaders.append((ax1, ay1))
        assert any(hull[0] - 1 <= x <= hull[1] + 1 and hull[2] - 1 <= y <= hull[3] + 1 for x, y in leaders), (
            t.get_text()
        )


def test_a_chart_whose_names_all_fit_has_no_key(tmp_path):
    problem = make_problem(["alpha", "beta"], [[40.0, 22.0, 16.0, 13.0, 9.0], [30.0, 18.0, 12.0, 10.0, 7.0]])
    fig = gantt_figure(far(problem).schedule)
    fig.canvas.draw()
    assert _key(fig) == {}
    assert {t.get_text() for t in fig.axes[0].texts if t.get_visible()} == {"alpha", "beta"}


def test_label_tasks_off_draws_no_labels():
    fig = gantt_figure(far(bundled_dataset("rodinia-a100")).schedule, label_tasks=False)
    assert not fig.axes[0].texts and len(fig.axes) == 1


def test_the_chart_is_the_same_bytes_every_time(tmp_path):
    schedule = far(_tiny_tail_problem()).schedule
    first = plot_gantt(schedule, tmp_path / "a.png").read_bytes()
    assert plot_gantt(schedule, tmp_path / "b.png").read_bytes() == first
    assert plot_gantt(schedule, tmp_path / "c.svg").stat().st_size > 0
