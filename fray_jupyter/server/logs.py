"""REST handlers for a job's log under ``<base_url>/fray/jobs/<id>/logs``: one page of lines (with
the controller-side filters), and the whole log as a streamed download. The rules of
``server.handlers`` hold (authenticated verbs, JSON errors, one percent-encoded job id segment)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Final

import tornado.iostream
import tornado.web

from fray_jupyter.client import FrayError
from fray_jupyter.client.logs import LogPage, log_text
from fray_jupyter.iris.loglines import LEVELS
from fray_jupyter.server import contract, serialize
from fray_jupyter.server.handlers import FrayHandler, api_error
from fray_jupyter.views.logtail import log_file_name

MAX_LOG_LINES: Final[int] = 5000
DEFAULT_LOG_LINES: Final[int] = 1000
LEVEL_CHOICES: Final[tuple[str, ...]] = tuple(name.lower() for name in LEVELS)
"""``min_level`` values: Iris's level names, lower case."""


class LogsHandler(FrayHandler):
    """``GET /fray/jobs/<id>/logs?cursor=&before=&tail=&max_lines=&substring=&min_level=``: log lines
    of every task after ``cursor`` (the newest ``max_lines`` with ``tail=1``), and the cursor for
    the next call. ``before`` (a line's ``seq``): only lines before it, so ``tail=1&before=S`` is
    the page just before line ``S``; ``substring``: only lines containing it; ``min_level``: only
    lines of that level or above (Iris's levels, ``LEVEL_CHOICES``; unknown-level lines always
    pass). Both filters run on the controller."""

    @tornado.web.authenticated
    async def get(self, job_id: str) -> None:
        cursor = self.int_arg("cursor", 0, most=2**62)
        before = self.int_arg("before", 0, most=2**62)
        tail = self.choice_arg("tail", "0", ("0", "1", "false", "true")) in ("1", "true")
        max_lines = self.int_arg("max_lines", DEFAULT_LOG_LINES, most=MAX_LOG_LINES) or DEFAULT_LOG_LINES
        substring = self.get_query_argument("substring", "")
        min_level = self.choice_arg("min_level", "", ("", *LEVEL_CHOICES))
        page = await self.call(lambda client: client.logs(job_id, cursor=cursor, tail=tail, max_lines=max_lines,
                                                          substring=substring, min_level=min_level, before=before))
        self.reply(contract.LogPage(entries=[serialize.log_json(entry) for entry in page.entries], cursor=page.cursor))


class LogDownloadHandler(FrayHandler):
    """``GET /fray/jobs/<id>/logs/download``: the job's whole log as a ``text/plain`` attachment
    named ``views.logtail.log_file_name`` (``alice-train.log``), one ``[task] text`` line per row
    (``client.logs.log_text``, as "Save full log" writes it), oldest first, streamed page by page
    (``FrayClient.log_pages``: one page in memory at a time, up to the last row there is when the
    download reaches it). A controller error before the first page is the usual JSON error; one
    after it ends the file with a line saying so."""

    @tornado.web.authenticated
    async def get(self, job_id: str) -> None:
        client = await self.call(lambda linked: linked)
        pages = client.log_pages(job_id)
        page = await self._next(pages, first=True)
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        self.set_header("Content-Disposition", f'attachment; filename="{log_file_name(job_id)}"')
        self.set_header("X-Content-Type-Options", "nosniff")
        try:
            while page is not None:
                self.write(log_text(page.entries))
                await self.flush()
                page = await self._next(pages, first=False)
        except tornado.iostream.StreamClosedError:
            return
        except FrayError as error:
            self.write(f"… the download stopped here: {error}\n")
        self.finish()

    async def _next(self, pages: Iterator[LogPage], *, first: bool) -> LogPage | None:
        """The next page (in a worker thread: the client blocks); a client error before the first
        page is answered as JSON, a later one is raised as is."""
        try:
            return await asyncio.to_thread(next, pages, None)
        except FrayError as error:
            if first:
                raise api_error(error) from None
            raise
