"""The users' side of the controller's store: the ``user_budgets`` table (``engine.budgets`` holds its rules)
and the counts per user and per job that budgets and ``ListUsers`` read, every SQL statement of them here."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable


class UserTables:
    """The store's user and budget methods (``Store`` has them)."""

    _db: sqlite3.Connection

    def user_budgets(self) -> dict[str, tuple[int, int]]:
        """``user → (budget_limit, max_band)`` of every user with a budget row."""
        return {user: (limit, band) for user, limit, band in self._db.execute(
            "SELECT user_id, budget_limit, max_band FROM user_budgets ORDER BY user_id")}

    def set_user_budget(self, user: str, limit: int, max_band: int, ts_ms: int) -> None:
        """Create or replace one user's budget row."""
        self._db.execute("INSERT OR REPLACE INTO user_budgets (user_id, budget_limit, max_band, updated_ms) "
                         "VALUES (?, ?, ?, ?)", (user, limit, max_band, ts_ms))

    def task_counts(self, states: Iterable[int]) -> list[tuple[str, int, int, int]]:
        """``(job id, job row id, band the tasks were placed at, tasks)`` of the tasks in ``states``,
        per job and band, in job row order."""
        marks = ", ".join("?" * len(states := list(states)))
        return [tuple(row) for row in self._db.execute(
            f"SELECT t.job_id, j.id, t.priority_band, count(*) FROM tasks t JOIN jobs j ON j.job_id = t.job_id "
            f"WHERE t.state IN ({marks}) GROUP BY t.job_id, t.priority_band ORDER BY j.id", states)]

    def users(self) -> list[str]:
        """Every user who has a stored job, sorted."""
        return [row[0] for row in self._db.execute("SELECT DISTINCT user FROM jobs ORDER BY user")]

    def counts_by_user(self, job_states: Iterable[int]) -> tuple[dict[str, dict[int, int]], dict[str, dict[int, int]]]:
        """For the jobs in ``job_states``: ``user → {job state → jobs}`` and ``user → {task state → tasks}``."""
        marks = ", ".join("?" * len(states := list(job_states)))
        jobs: dict[str, dict[int, int]] = {}
        tasks: dict[str, dict[int, int]] = {}
        for user, state, count in self._db.execute(
                f"SELECT user, state, count(*) FROM jobs WHERE state IN ({marks}) GROUP BY user, state", states):
            jobs.setdefault(user, {})[state] = count
        for user, state, count in self._db.execute(
                f"SELECT j.user, t.state, count(*) FROM tasks t JOIN jobs j ON j.job_id = t.job_id "
                f"WHERE j.state IN ({marks}) GROUP BY j.user, t.state", states):
            tasks.setdefault(user, {})[state] = count
        return jobs, tasks
