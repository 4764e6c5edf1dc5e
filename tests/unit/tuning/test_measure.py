"""A profile's measure section: the bands, their verdicts and every bad
input as one line naming the file and key."""

import re
import textwrap

import pytest

from kvmtune.errors import InputError
from kvmtune.tuning import measure
from kvmtune.tuning import profiles
from tests.profilefiles import GOOD as _GOOD
from tests.profilefiles import write

GOOD = textwrap.dedent(_GOOD)
SECTION = """\
measure:
  workloads: [fio-randread]
  band:
    iops: ">= -5%"
    lat_ns.p99: "<= +5%"
  samples: 10
"""


@pytest.mark.parametrize('text, op, limit', [
    ('>= -5%', '>=', 0.95), ('>= +10%', '>=', 1.10), ('<=5%', '<=', 1.05),
    (' >= 2.5 % ', '>=', 1.025)])
def test_bands(text, op, limit):
    band = measure.parse_band(text)
    assert band.op == op
    assert band.limit == pytest.approx(limit)


@pytest.mark.parametrize('band, low, high, verdict', [
    ('>= -5%', 0.96, 1.20, 'pass'),
    ('>= -5%', 0.80, 0.94, 'fail'),
    ('>= -5%', 0.90, 1.10, 'inconclusive'),
    ('>= +10%', 1.02, 1.30, 'inconclusive'),
    ('>= +10%', 1.11, 1.30, 'pass'),
    ('<= +5%', 0.90, 1.04, 'pass'),
    ('<= +5%', 1.06, 1.20, 'fail'),
    ('<= +5%', 1.00, 1.08, 'inconclusive')])
def test_a_band_judges_the_whole_interval(band, low, high, verdict):
    assert measure.parse_band(band).judge(low, high) == verdict


def test_a_profile_with_a_measure_section(tmp_path):
    path = write(tmp_path, 'mine.yaml', GOOD + SECTION)
    profile = profiles.load_file(path)
    assert profile.measure.samples == 10
    assert profile.measure.max_samples == 30
    assert profile.measure.confidence == 0.95
    assert profile.to_dict()['measure'] == {
        'workloads': ['fio-randread'],
        'band': {'iops': '>= -5%', 'lat_ns.p99': '<= +5%'},
        'samples': 10, 'max_samples': 30, 'confidence': 0.95}
    # without the section: no measure, and to_dict unchanged
    assert profiles.load_file(write(tmp_path, 'plain.yaml', GOOD)).measure \
        is None


@pytest.mark.parametrize('section, key, words', [
    ('measure: 3\n', 'measure', 'mapping'),
    (SECTION + '  bogus: 1\n', 'measure', "unknown key 'bogus'"),
    (SECTION.replace('[fio-randread]', '[]'), 'measure.workloads', 'list'),
    (SECTION.replace('">= -5%"', '"better"'), 'measure.band.iops',
     'not a band'),
    (SECTION.replace('">= -5%"', '5'), 'measure.band.iops', 'quoted'),
    (SECTION.replace('">= -5%"', '">= -120%"'), 'measure.band.iops',
     '-100'),
    (SECTION.replace('iops:', 'speed:'), 'measure.band', "'speed'"),
    (SECTION.replace('samples: 10', 'samples: 3'), 'measure.samples',
     'at least 6 values'),
    (SECTION.replace('samples: 10', 'samples: 0'), 'measure.samples',
     'positive'),
    (SECTION + '  confidence: 1.5\n', 'measure.confidence', '[0.5, 1)'),
    (SECTION + '  max_samples: 5\n', 'measure.max_samples', 'below'),
])
def test_bad_sections_are_one_line(tmp_path, section, key, words):
    path = write(tmp_path, 'bad.yaml', GOOD + section)
    with pytest.raises(InputError, match=f'^{re.escape(path)}: ') as err:
        profiles.load_file(path)
    line = err.value.line()
    assert '\n' not in line
    assert f'[{key}]' in line or f'{key}:' in line or key in line
    assert words in line


def test_three_per_side_is_refused_naming_the_floor(tmp_path):
    path = write(tmp_path, 'bad.yaml',
                 GOOD + SECTION.replace('samples: 10', 'samples: 3'))
    with pytest.raises(InputError) as err:
        profiles.load_file(path)
    assert 'smallest p with 3 a side is 0.1' in err.value.line()


def test_a_higher_confidence_needs_more_samples():
    data = {'workloads': ['fio'], 'band': {'iops': '>= -5%'},
            'samples': 6, 'confidence': 0.98}
    with pytest.raises(InputError, match='at least 7'):
        measure.parse(data, 'p.yaml')
    data['samples'] = 7
    assert measure.parse(data, 'p.yaml').samples == 7
    del data['samples']
    assert measure.parse(data, 'p.yaml').samples == 7
