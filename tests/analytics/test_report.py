"""`switchboard report` writes one self-contained HTML file: every chart embedded as a PNG, nothing fetched."""

from __future__ import annotations

import base64
import re

from api.cli.main import main


def test_report_is_self_contained_html_with_charts(seeded, tmp_path, capsys):
    out = tmp_path / "report.html"
    assert main(["report", "--out", str(out), "--data-dir", str(seeded.data_dir)]) == 0
    assert str(out) in capsys.readouterr().out
    page = out.read_text(encoding="utf-8")
    images = re.findall(r'<img alt="[^"]*" src="data:image/png;base64,([A-Za-z0-9+/=]+)">', page)
    assert len(images) == 9 and all(base64.b64decode(i).startswith(b"\x89PNG") for i in images)
    assert not re.search(r'(src|href)="(https?:)?//', page)  # no external resources
    # The summary and tables carry the seeded activity.
    assert f'<div class="k">{seeded.decisions}</div>routing decisions' in page
    assert f'<div class="k">{len(seeded.feedback)}</div>feedback reports' in page
    assert seeded.training_job_id in page and seeded.optimization_run_id in page
    assert "no routing decisions recorded yet" not in page  # placeholders are drawn into PNGs; tables say so


def test_report_on_an_empty_data_dir(tmp_path):
    out = tmp_path / "empty.html"
    assert main(["report", "--out", str(out), "--data-dir", str(tmp_path / "data")]) == 0
    page = out.read_text(encoding="utf-8")
    assert page.count("<em>nothing recorded yet</em>") == 7 and page.count("data:image/png;base64,") == 9
