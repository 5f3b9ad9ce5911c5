"""The words a job's or task's state is shown with, everywhere: the status panel's badges, the
snapshot, ``%fray jobs``, ``%fray status`` and the CLI (upper-cased there, as Iris prints states),
and the sidebar's badges. They are the display vocabulary's (``vocabulary``), re-exported
here for the surfaces that only name states.
"""

from __future__ import annotations

from typing import Final

from fray_jupyter.vocabulary import STATES, state_word

STATE_WORDS: Final[dict[str, str]] = {name: state.word for name, state in STATES.items()}
"""Each state's word (``vocabulary.STATES``)."""

__all__ = ["STATE_WORDS", "state_word"]
