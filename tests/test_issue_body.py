"""The one issue form (harness/report/issue_body.py), rendered through markdown-it-py (CommonMark)
and checked by its structure: what a maintainer's browser would show, not the raw text."""

from __future__ import annotations

from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from harness.paths import REPO
from harness.report.issue_body import demote_headings, issue_body, scrub_paths, title
from harness.report.repro import repro_markdown

CASE = "suites/shard_map/test_linearize_transpose.py::test_linearize_transpose[base]"
CELL = {"cell": "jax060-cpu", "device": "cpu", "pins": {"jax": "0.6.0"}, "versions": {"jax": "0.6.0", "jaxlib": "0.6.0"},
        "install_line": "pip install jax==0.6.0 jaxlib==0.6.0", "python": "3.11.7",
        "env": {"XLA_FLAGS": "--xla_force_host_platform_device_count=8"}, "source": f"{REPO}/matrices/default.yaml:14"}
HOME = str(Path.home())
MESSAGE = (f"ValueError: linearized function called on tangent values inconsistent\n"
           f'  File "{HOME}/.cache/xla-seams/envs/jax060-cpu-e41a2f6f612a/lib/python3.11/site-packages/jax/_src/x.py"'
           f", line 3\n  File \"{REPO}/suites/shard_map/cores.py\", line 9")
RESULT = {"raw": "fail", "verdict": "known-bug", "message": MESSAGE,
          "expectation": {"id": "jax-28260", "link": "https://github.com/jax-ml/jax/issues/28260", "reason": "vma check"}}
BISECTION = ("# Bisection: x\n\nfirst bad: jax 0.6.0; last good: jax 0.5.3\n\n## versions tested\n\n"
             "| version | answer |\n|---|---|\n| 0.6.0 | bad |\n\n```\n# not a heading\n```\n")


def _tokens(md: str):
    return MarkdownIt("commonmark").enable("table").parse(md)


def _headings(tokens) -> list[tuple[str, str]]:
    return [(t.tag, tokens[i + 1].content) for i, t in enumerate(tokens) if t.type == "heading_open"]


def _body(**kw) -> str:
    return repro_markdown(CASE, CELL, RESULT, "print('repro')\nraise AssertionError('x')\n", "jax060-cpu__x.py",
                          moved=["jax 0.5.3 -> 0.6.0"], bisection=BISECTION, marker="<!-- xla-seams-news:abc -->",
                          verdict_line="verdict ok -> known-bug", appendix=False, **kw)


def test_sections_in_order_and_the_bisection_nested_under_its_own():
    heads = _headings(_tokens(_body()))
    assert [h for h in heads if h[0] == "h3"] == [("h3", "What happened"), ("h3", "Versions"), ("h3", "Bisection"),
                                                    ("h3", "Reproduce"), ("h3", "Links")]
    assert [h[0] for h in heads if h[0] not in ("h3",)] == ["h4", "h5"]  # the bisection's own, demoted
    assert not [h for h in heads if h[0] in ("h1", "h2")]


def test_the_message_once_in_a_fence_and_the_script_in_a_details_block():
    md = _body()
    tokens = _tokens(md)
    fences = [t for t in tokens if t.type == "fence"]
    assert sum("linearized function called" in t.content for t in fences) == 1
    assert md.count("linearized function called") == 1
    assert any(t.info == "python" and "raise AssertionError" in t.content for t in fences)
    html = "".join(t.content for t in tokens if t.type == "html_block")
    assert "<details><summary>jax060-cpu__x.py</summary>" in html and "</details>" in html
    assert any(t.info == "sh" and "pip install jax==0.6.0 jaxlib==0.6.0 numpy" in t.content for t in fences)
    assert any(t.info == "sh" and "--matrix matrices/default.yaml --cell jax060-cpu" in t.content
               and "pytest-reportlog" in t.content for t in fences)
    assert md.splitlines()[0] == "<!-- xla-seams-news:abc -->"


def test_no_machine_paths():
    md = _body()
    assert HOME + "/" not in md and str(REPO) not in md
    assert "site-packages/jax/_src/x.py" in md and "suites/shard_map/cores.py" in md
    assert scrub_paths(f"{HOME}/work/x") == "~/work/x"


@pytest.mark.parametrize("hostile", ["test_x[a\n# injected heading]", "test_x[`` <script>alert(1)</script> ``]",
                                     "test_x[\x1b[31mred\r\n\u2028</details>]"])
def test_hostile_ids_and_messages_stay_text(hostile):
    case = f"suites/a/test_a.py::{hostile}"
    result = {**RESULT, "message": f"boom\n```\n# fake heading\n<details>\n\x00\x07{hostile}"}
    md = issue_body(case, CELL, result, bisection=None)
    tokens = _tokens(md)
    heads = _headings(tokens)
    assert [h[1] for h in heads] == ["What happened", "Versions", "Reproduce", "Links"]
    assert not [t for t in tokens if t.type in ("html_block", "html_inline")]
    assert "\x1b" not in md and "\x00" not in md and "\x07" not in md and "\u2028" not in md
    inline = "".join(t.content for t in tokens if t.type == "inline")
    assert "<script>" not in inline.replace("`", "") or "code_inline" in {c.type for t in tokens if t.children for c in t.children}
    assert "\n" not in title(case, CELL, result)


def test_title_says_what_broke_and_since_when():
    """The known issue's own words first, then the case and where, then since when (where known)."""
    assert title(CASE, CELL, RESULT) == "vma check: test_linearize_transpose[base] fails on jax 0.6.0 (cpu)"
    assert title(CASE, CELL, {**RESULT, "expectation": None}, since="jax 0.6.0 (last good 0.5.3)") == \
        "test_linearize_transpose[base] fails on jax 0.6.0 (cpu) since jax 0.6.0 (last good 0.5.3)"
    reason = "call_jax keys its trace cache by ==: 1 and 1.0 share a program; found by the parity cases"
    assert title(CASE, CELL, {**RESULT, "expectation": {"reason": reason}}).startswith(
        "call_jax keys its trace cache by ==: test_linearize_transpose[base] fails")


def test_the_known_issues_reason_is_near_the_top():
    body = _body()
    assert body.index("vma check") < body.index("### What happened")
    assert title(None, {**CELL, "pins": {}}, {"raw": "env-error"}) == "cell jax060-cpu does not install on jax060-cpu (cpu)"


def test_demote_leaves_fenced_hashes_alone():
    out = demote_headings("# A\n```\n# code\n```\n###### deep", 3)
    assert out.splitlines() == ["#### A", "```", "# code", "```", "###### deep"]
