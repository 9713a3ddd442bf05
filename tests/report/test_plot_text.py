"""User text reaches every plot through ``plotting.plot_text``: safe for matplotlib and never wider than a plot."""

from __future__ import annotations

import pytest

from gpuweave.plotting import TEXT_CHARS, TITLE_LINES, plot_text, plot_title


def test_dollar_signs_are_text_and_a_leading_underscore_keeps_the_legend_entry():
    assert plot_text(r"$x\frac$") == r"\$x\frac\$"
    assert plot_text("_hidden") == " _hidden"
    assert plot_text(3) == "3"


def test_long_text_is_cut_with_an_ellipsis_before_escaping():
    assert plot_text("x" * TEXT_CHARS) == "x" * TEXT_CHARS
    cut = plot_text("x" * 400)
    assert len(cut) == TEXT_CHARS and cut.endswith("\u2026")
    # a dollar sign at the cut is escaped whole, not split from its backslash
    assert plot_text("y" * (TEXT_CHARS - 2) + "$$$") == "y" * (TEXT_CHARS - 2) + "\\$\u2026"


def test_a_long_title_wraps_at_words_instead_of_being_cut():
    """Issue 40: a figure title with its clip note was cut ("... runs last unt…"); titles wrap instead."""
    title = "Cluster power, mean per 5 min round (time axis clipped at 123.4 h; runs last until 4567.8 h)"
    assert len(title) > TEXT_CHARS
    wrapped = plot_title(title)
    assert "\u2026" not in wrapped and wrapped.replace("\n", " ") == title
    assert all(len(line) <= TEXT_CHARS for line in wrapped.split("\n")) and wrapped.count("\n") == 1
    assert plot_title("Busy GPUs over time") == "Busy GPUs over time"
    # still safe: dollars escaped, control characters shown, and a fuzzed name longer than the lines hold is cut
    assert plot_title("$x$ \x00y") == "\\$x\\$ \ufffdy"
    cut = plot_title("word " * 400)
    assert cut.count("\n") == TITLE_LINES - 1 and cut.endswith("\u2026")


def test_a_clipped_time_plot_keeps_its_whole_title():
    from gpuweave.plotting import figure
    from gpuweave.report.plots import _suptitle
    from gpuweave.units import duration_text

    fig, _ = figure()
    _suptitle(fig, "Cluster power, mean per 5 min round", 125.5 * 3600, 45678.9 * 3600)  # seconds
    text = fig.get_suptitle()
    assert text.replace("\n", " ").endswith(f"runs last until {duration_text(45678.9 * 3600)})"), text
    assert "\u2026" not in text and "1,903 d" in text, text


def test_control_characters_are_shown_as_replacement_characters():
    # a NUL in a fuzzed task name: matplotlib warned "Glyph 0 missing from font(s)" on stderr
    assert plot_text("\x00big\nname\x7f") == "\ufffdbig\ufffdname\ufffd"


def test_a_cjk_name_is_drawn_from_the_fallback_font(tmp_path):
    """With a fallback font installed (.ci/run installs Debian's fonts-droid-fallback), every glyph of a CJK task
    name is found: matplotlib warns once per glyph it cannot draw, so no warning means no empty box."""
    import warnings

    from gpuweave.plotting import figure, save, use_fallback_font

    fig, axes = figure()
    if use_fallback_font() is None:
        pytest.skip("no CJK fallback font installed (apt-get install fonts-droid-fallback)")
    axes[0, 0].set_title(plot_text("训练任务 job-中"))
    axes[0, 0].legend(handles=axes[0, 0].plot([0, 1], [0, 1], label=plot_text("推理服务")))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        save(fig, tmp_path / "cjk.png")
    assert [str(w.message) for w in caught if "missing from" in str(w.message)] == []
