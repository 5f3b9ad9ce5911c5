# Sourced by scripts/lab and scripts/test: sets PYTHON to a Python 3.12 (what Marin's packages, used
# by the tests, require), falling back to 3.13/3.11 for the lab alone. Works with pyenv's shims,
# whose python3.12 exists on PATH but fails unless that version is selected.
find_python() {
  local candidate version
  for version in 3.12 3.13 3.11; do
    for candidate in "python$version" "$(pyenv root 2>/dev/null)"/versions/"$version"*/bin/"python$version"; do
      if "$candidate" -c 'import sys' >/dev/null 2>&1; then PYTHON=$candidate; return 0; fi
    done
    [ "${1:-}" = "--exact" ] && break
  done
  echo "error: no Python 3.12 found${1:+ (the tests need exactly 3.12)}; install it (e.g. pyenv install 3.12)" >&2
  return 1
}

# venv_dir: the venv for $PYTHON's version, one per version: .venv for 3.12 (the tests' own),
# .venv-3.13 or .venv-3.11 for a lab on another.
venv_dir() {
  local version
  version=$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  if [ "$version" = 3.12 ]; then echo .venv; else echo ".venv-$version"; fi
}

# make_venv DIR: create DIR with $PYTHON, or reuse it when it holds the same Python version. A DIR of
# another version (or no working Python) is never removed: that is an error naming the command to run.
make_venv() {
  local want have
  want=$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  if [ -e "$1" ]; then
    have=$("$1/bin/python" -c 'import sys; print("Python %d.%d" % sys.version_info[:2])' 2>/dev/null ||
      echo "no working Python")
    if [ "Python $want" != "$have" ]; then
      echo "error: $1 holds $have, not Python $want; remove it (rm -rf $1) and run $0 again" >&2
      return 1
    fi
  else
    "$PYTHON" -m venv "$1"
  fi
  # uv resolves and downloads in parallel: the project's install takes about a minute where pip took several
  "$1/bin/python" -m pip install --quiet uv 2> >(grep -v "is ignored" >&2)
}

# install_project DIR EXTRAS: this checkout, editable, with its EXTRAS (e.g. test,docs), into the venv DIR
# that make_venv made; a failed install stops the calling script. Installed modules are compiled to
# bytecode at once (pip's default, not uv's): a machine with PYTHONDONTWRITEBYTECODE set never writes
# them later, and every process (a kernel, a controller, Marin's iris CLI) would compile what it
# imports anew, e.g. 5.7 s instead of 2.0 s to import iris.cli. scripts/uv-excludes.txt names the
# packages left out, and why.
install_project() {
  "$1/bin/python" -m uv pip install --quiet --compile-bytecode --excludes scripts/uv-excludes.txt \
    --python "$1/bin/python" -e ".[$2]"
}
