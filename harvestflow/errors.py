"""The project's exception base: every error the platform raises on purpose derives from it.

Why one base: the CLI, the DAG tasks and the curator pages can tell "the platform refused or
could not do this, and says why" (show the message, exit non-zero) from a bug (a stack trace).
Each package has its own base below this one (``crawler.errors.CrawlerError``,
``harvest.errors.HarvestError``, ``indexing.errors.IndexingError``,
``preservation.errors.PreservationError``, ``qa.errors.QaError``, ``access.errors.AccessError``,
``search.errors.SearchError``) so a caller can catch one stage's failures.

The message of an error says what failed, where (file, line, job, URL) and what to do about it;
the existing classes keep their names and their old built-in bases (``ValueError``,
``RuntimeError``...) so that code catching those still does.
"""

from __future__ import annotations


class HarvestflowError(Exception):
    """Base of the platform's own errors; ``str()`` says what failed and what to do."""


class NotFoundError(HarvestflowError, LookupError):
    """What a request names does not exist (a job, a record): a web page answers 404 to it, not
    400, without reading the message. Stages derive their own from it and their base."""


class RetriesExhausted(HarvestflowError, RuntimeError):
    """A transient failure outlasted the retries of :func:`harvestflow.retry.with_backoff`."""
