"""The status panel's endpoints table (``views.endpoints``): every value escaped, a name with a link
through the cluster's proxy opens there in a new tab, one without is text."""

from __future__ import annotations

from fray_jupyter.views.endpoints import endpoints_html


def test_a_name_with_a_link_opens_it_and_every_value_is_escaped() -> None:
    html = endpoints_html((("/a/j/xprof", "10.0.0.1:8000", "/a/j/0", "https://d/proxy/a.j.xprof/"),
                           ("/a/j/<b>", "127.0.0.1:9", "/a/j/1", "")))
    assert '<a href="https://d/proxy/a.j.xprof/" target="_blank" rel="noopener noreferrer"' in html
    assert html.count("<a ") == 1 and "&lt;b&gt;" in html and "<b>" not in html
    assert endpoints_html(()) == ""
