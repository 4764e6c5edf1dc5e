"""The one JSON encoder: every ``-f json`` output and every JSON file
kvmtune writes for another tool or for itself to read back.

Strict (tests/unit/test_jsonout.py): ``allow_nan=False``, so a NaN or an
infinity is never written as the ``NaN`` / ``Infinity`` that Python's json
module accepts and that no strict parser (RFC 8259 section 6, jq, a browser's
JSON.parse) reads. Such a value is refused as the project's one error, naming
where in the document it sits, before anything is printed or written.
``check_finite`` is the same walk for the YAML outputs, where PyYAML would
write ``.inf``.
"""

import json
import math
from typing import Any

from kvmtune.errors import InputError

FIX = ('a figure overflowed: check the input files for values beyond any '
       'real measurement')


def _first_not_finite(value: Any) -> tuple[str, float] | None:
    """(path, value) of the first float that is not finite, depth first
    in document order; None when every number is finite."""
    stack: list[tuple[str, Any]] = [('', value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return path or '(the document)', item
        if isinstance(item, dict):
            stack.extend((f'{path}.{k}' if path else str(k), v)
                         for k, v in reversed(list(item.items())))
        elif isinstance(item, (list, tuple)):
            stack.extend((f'{path}[{i}]', v)
                         for i, v in reversed(list(enumerate(item))))
    return None


def check_finite(value: Any, *, source: object = None,
                 fix: str | None = None) -> Any:
    """``value`` when every float in it is finite; else InputError naming
    the first that is not (its path: ``runs[0].points[1].aggregate``)."""
    found = _first_not_finite(value)
    if found is not None:
        path, number = found
        raise InputError(f'{number!r} is not a finite number: no strict '
                         'JSON or YAML parser takes it', source=source,
                         key=path, fix=fix or FIX)
    return value


def dumps(value: Any, *, source: object = None, indent: int | None = 2,
          sort_keys: bool = False, fix: str | None = None) -> str:
    """``value`` as strict JSON text (RFC 8259: no NaN, no Infinity).

    :param source: what the document is (a command, a file), named by the
        error when a number is not finite
    """
    try:
        return json.dumps(value, indent=indent, sort_keys=sort_keys,
                          allow_nan=False)
    except ValueError:
        check_finite(value, source=source, fix=fix)
        raise           # not a number's fault: a bug, shown as one
