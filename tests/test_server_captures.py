"""The profile history's rules (``fray_jupyter.server.captures``): an empty capture says why in the
stub's own words (Iris's stubs and the embedded controller's alike) while a real profile says
nothing; the server keeps its newest captures within its bounds, per controller; and a controller's
``iris.profile`` row is listed once when this server made the same capture, twice when it did not."""

from __future__ import annotations

from fray_jupyter.server.captures import Capture, CaptureStore, controller_capture, empty_reason, merged


def test_stubs_say_why_and_profiles_do_not() -> None:
    iris_stub = (b'<svg xmlns="http://www.w3.org/2000/svg" width="400" height="50">'
                 b'<text x="10" y="30" font-size="14">py-spy unavailable in local mode</text></svg>')
    assert empty_reason("cpu", "flamegraph", iris_stub) == "py-spy unavailable in local mode"
    assert empty_reason("memory", "flamegraph", b"<html><body><p>no memory profile: memray attach failed &amp; "
                                                b"gave up</p></body></html>") == "no memory profile: memray attach failed & gave up"
    assert empty_reason("memory", "stats", b'{"error": "memray unavailable in local mode"}') == \
        "memray unavailable in local mode"
    assert empty_reason("cpu", "speedscope", b'{"profiles": [], "shared": {"frames": []}}') == "the profile holds no samples"
    assert empty_reason("cpu", "raw", b"no CPU profile: py-spy missing\n") == "no CPU profile: py-spy missing"
    assert empty_reason("cpu", "raw", b"main;busy_loop 12\n") == ""
    assert empty_reason("memory", "raw", b"") == "the capture is empty"
    assert empty_reason("cpu", "flamegraph", b'<svg><g id="frames"></g></svg>') == ""
    assert empty_reason("memory", "flamegraph", b"<html><script>draw()</script></html>") == ""


def test_the_server_keeps_its_newest_captures_within_its_bounds() -> None:
    store = CaptureStore(most=3, most_bytes=10)
    for number in range(5):
        store.add(url="u", job_id="/a/j", index=0, attempt=None, kind="threads", fmt="text", seconds=1,
                  requested_ms=number, captured_ms=number, data=b"1234")
    assert [c.capture_id for c in store.of_job("u", "/a/j")] == ["s-5", "s-4"]  # 3 would hold 12 bytes > 10
    assert store.of_job("other-controller", "/a/j") == [] and store.get("u", "/a/j", "s-1") is None


def test_a_controller_row_of_this_server_s_capture_is_listed_once() -> None:
    store = CaptureStore()
    held = store.add(url="u", job_id="/a/j", index=0, attempt=None, kind="threads", fmt="text", seconds=0,
                     requested_ms=10_000, captured_ms=11_000, data=b"Thread 1 (idle)")
    row = {"source": "/a/j/0", "attempt_id": 0, "captured_at": 10_900, "duration_seconds": 0, "type": "thread",
           "format": "raw", "trigger": "on_demand", "digest": held.digest}
    same = controller_capture("u", "/a/j", row)
    later = controller_capture("u", "/a/j", {**row, "captured_at": 500_000})  # the same bytes, another dump
    other = controller_capture("u", "/a/j", {**row, "digest": "0" * 32})
    assert isinstance(same, Capture) and same.capture_id == "c-0-10900-thread" and same.kind == "threads"
    assert later is not None and other is not None
    listed = merged([held], [same, later, other])  # newest first; ``same`` is ``held``, ``other`` other bytes
    assert [(c.capture_id, c.origin) for c in listed] == [
        ("c-0-500000-thread", "controller"), (held.capture_id, "server"), ("c-0-10900-thread", "controller")]
    assert listed[2].digest == "0" * 32
    assert controller_capture("u", "/a/j", {**row, "type": "gpu"}) is None  # a type the client does not know
