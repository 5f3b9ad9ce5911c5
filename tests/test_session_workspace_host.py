"""A host's side of a workspace sync, in a real subprocess per case (its own ``sys.modules`` and
work dir): files written and deleted inside the work dir only, modules reloaded as IPython's
autoreload does (old functions run the new code), what cannot be reloaded said with why, and
hostile names refused before anything is written."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fray_jupyter.session.outputs import SessionError
from fray_jupyter.session.workspace_host import apply, target

REPO = Path(__file__).resolve().parents[1]


def _host(workdir: Path, script: str) -> dict[str, object]:
    """Run ``script`` in a fresh Python whose cwd is ``workdir`` (as a session host's is); its JSON."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], cwd=workdir, capture_output=True,
                          text=True, check=False, env={"PYTHONPATH": f"{workdir}:{REPO}", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return result


def test_a_sync_reloads_changed_modules_in_place_and_drops_deleted_ones(tmp_path: Path) -> None:
    (tmp_path / "my_exp").mkdir()
    (tmp_path / "my_exp" / "__init__.py").write_text("")
    (tmp_path / "my_exp" / "model.py").write_text("def f():\n    return 1\n")
    (tmp_path / "my_exp" / "old.py").write_text("GONE = True\n")
    (tmp_path / "my_exp" / "broken.py").write_text("X = 1\n")
    result = _host(tmp_path, """
        import json, os
        from fray_jupyter.session.host import HostEngine
        import my_exp.model, my_exp.old, my_exp.broken
        from my_exp.model import f
        engine = HostEngine(0)
        reply = engine.sync_workspace({"my_exp/model.py": b"def f():\\n    return 2\\n",
                                       "my_exp/broken.py": b"X = (\\n", "new/data.txt": b"hi"},
                                      ["my_exp/old.py"])
        try:
            import my_exp.old
            old_imports = True
        except ImportError:
            old_imports = False
        print(json.dumps({"f": f(), "reloaded": reply.reloaded, "not": reply.not_reloaded,
                          "written": reply.written, "deleted": reply.deleted, "old_imports": old_imports,
                          "data": open("new/data.txt").read(), "old_file": os.path.exists("my_exp/old.py")}))
    """)
    assert result["f"] == 2  # the function imported before the sync runs the new code
    assert result["reloaded"] == ["my_exp.model"]
    reasons = dict(result["not"])  # type: ignore[call-overload]
    assert reasons["my_exp.old"] == "its file was deleted: dropped from sys.modules"
    assert reasons["my_exp.broken"].startswith("SyntaxError") and "keeps its old code" in reasons["my_exp.broken"]
    assert (result["written"], result["deleted"], result["data"]) == (3, 1, "hi")
    assert result["old_imports"] is False and result["old_file"] is False


@pytest.mark.parametrize("name", ["../escape.py", "/etc/escape.py", "a/../../escape.py", "a//b.py", "./a.py",
                                  "", "a\0b", "link/escape.py"])
def test_a_hostile_name_refuses_the_whole_sync_and_writes_nothing(tmp_path: Path, name: str) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (workdir / "link").symlink_to(outside)  # a directory link leading out of the work dir
    with pytest.raises(SessionError) as raised:
        apply(workdir, {"fine.py": b"x", name: b"owned"}, [])
    message = str(raised.value)
    assert "refused" in message and "\n" not in message
    assert not (workdir / "fine.py").exists() and list(outside.iterdir()) == []
    assert not (tmp_path / "escape.py").exists()


def test_a_file_is_replaced_whole_and_a_symlink_is_replaced_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("keep")
    work = tmp_path / "work"
    work.mkdir()
    (work / "config.txt").symlink_to(outside)
    apply(work, {"config.txt": b"new"}, [])
    assert outside.read_text() == "keep" and not (work / "config.txt").is_symlink()
    assert (work / "config.txt").read_text() == "new"
    assert [p.name for p in work.iterdir()] == ["config.txt"]  # no temporary left behind
    assert target(work, "a/b.py") == work / "a" / "b.py"


def test_deletions_must_be_a_list_of_paths(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("kept")
    with pytest.raises(SessionError, match="list of paths, not str"):
        apply(tmp_path, {}, "a")  # type: ignore[arg-type]
    assert (tmp_path / "a").read_text() == "kept"


def test_a_file_that_cannot_be_written_is_named(tmp_path: Path) -> None:
    (tmp_path / "model.py").mkdir()  # a directory where the file goes
    with pytest.raises(SessionError) as raised:
        apply(tmp_path, {"model.py": b"x"}, [])
    assert str(raised.value).startswith("cannot write model.py: ")
