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

# make_venv DIR: create DIR with $PYTHON unless it exists with the same Python version.
make_venv() {
  local want have
  want=$("$PYTHON" -c 'import sys; print(sys.version_info[:2])')
  have=$("$1/bin/python" -c 'import sys; print(sys.version_info[:2])' 2>/dev/null || true)
  if [ "$want" != "$have" ]; then rm -rf "$1"; "$PYTHON" -m venv "$1"; fi
  "$1/bin/python" -m pip install --quiet --upgrade pip 2>&1 | grep -v "is ignored" || true
}
