"""kvmtune.jsonout, the one JSON encoder: strict JSON or one error naming
where the number that is not finite sits."""

import json
import math

import pytest

from kvmtune.errors import InputError
from kvmtune import jsonout


def strict_loads(text):
    """Python's json with every non-standard constant refused: what jq,
    JSON.parse and RFC 8259 accept."""
    def refuse(name):
        raise ValueError(f'{name} is not JSON')
    return json.loads(text, parse_constant=refuse)


def test_finite_documents_are_what_json_writes():
    doc = {'b': [1, 2.5, None, 'x'], 'a': {'c': True}}
    assert jsonout.dumps(doc) == json.dumps(doc, indent=2)
    assert jsonout.dumps(doc, sort_keys=True, indent=None) == json.dumps(
        doc, sort_keys=True)
    assert strict_loads(jsonout.dumps(doc)) == doc


@pytest.mark.parametrize('bad', [math.inf, -math.inf, math.nan,
                                 1.7e308 * 2])
def test_a_number_that_is_not_finite_is_refused_by_its_path(bad):
    doc = {'runs': [{'points': [{'aggregate': 1.0}, {'aggregate': bad}]}]}
    with pytest.raises(InputError) as exc:
        jsonout.dumps(doc, source='-f json')
    line = exc.value.line()
    assert line.startswith('-f json: runs[0].points[1].aggregate: ')
    assert 'not a finite number' in line and '(fix: ' in line
    with pytest.raises(InputError):
        jsonout.check_finite(doc)


def test_the_first_bad_number_in_document_order_is_named():
    doc = {'a': [1.0, {'b': math.nan}], 'c': math.inf}
    with pytest.raises(InputError) as exc:
        jsonout.check_finite(doc, source='x')
    assert exc.value.key == 'a[1].b'
    with pytest.raises(InputError) as exc:
        jsonout.check_finite(math.inf)
    assert exc.value.key == '(the document)'


def test_check_finite_gives_back_what_it_checked():
    doc = {'a': (1, 2.0), 'b': 'inf'}      # the text 'inf' is no number
    assert jsonout.check_finite(doc) is doc


def test_what_is_not_json_stays_a_bug_not_an_input_error():
    with pytest.raises(TypeError):
        jsonout.dumps({'a': {1, 2}})
