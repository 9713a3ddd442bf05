"""Screenshots of a report.html in headless Chromium at 1400 px (what docs/screenshots/ holds).

    python tools/report_screenshots.py gpuweave-out/demo/report.html docs/screenshots --prefix report-after

Writes PREFIX-top.png (the first screen) and one PNG per figure (PREFIX-figure-NN.png, or the figure's id when
it has one), so a reader sees the report as a person at a 1400 px window does.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from chromium import chromium, screenshot_element  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--prefix", default="report")
    parser.add_argument("--width", type=int, default=1400)
    parser.add_argument("--only", nargs="*", help="figure ids or numbers to keep (default: all)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    with chromium(args.width, 1000) as driver:
        driver.get(args.report.resolve().as_uri())
        driver.save_screenshot(str(args.out / f"{args.prefix}-top.png"))
        figures = driver.find_elements("css selector", "figure")
        for n, figure in enumerate(figures, 1):
            name = re.sub(r"[^a-z0-9-]+", "-", (figure.get_attribute("id") or f"figure-{n:02d}").lower())
            if args.only and name not in args.only and str(n) not in args.only:
                continue
            screenshot_element(driver, figure, args.out / f"{args.prefix}-{name}.png")
            print(args.out / f"{args.prefix}-{name}.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
