"""Loaded by schemathesis (SCHEMATHESIS_HOOKS) in CI, before it generates any data.

CPython 3.11.7's `ast` module can raise `SystemError: AST constructor recursion depth mismatch`
(cpython#106905, fixed in 3.11.8) while Hypothesis parses a lambda's source only to describe it in a
report. That is a description, not a test: on that error Hypothesis now describes the lambda the
way it already does when it cannot find the source, and the fuzzing goes on.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from hypothesis.internal import lambda_sources

_describe: Callable[..., str] = lambda_sources._lambda_description


@functools.wraps(_describe)
def _lambda_description(f: Any, *args: Any, **kwargs: Any) -> str:
    try:
        return _describe(f, *args, **kwargs)
    except SystemError:
        return "lambda: <unknown>"


lambda_sources._lambda_description = _lambda_description
