"""Tuning profiles: YAML files naming tuners and their parameters.

A profile (design.md section 3) has a ``description``, a ``source`` citing
the experiment it reproduces, and ``tuners``: a list of tuner names or
``{name, params}`` mappings, and optionally ``measure``: what the
rollout's canary gate measures and the band it judges
(kvmtune.tuning.measure). Profiles are found in the packaged directory
(package data: ``kvmtune/data/profiles``), then in ``[DEFAULT]
profile_dirs``; a later directory wins on equal names.
"""

from collections.abc import Iterable
import dataclasses
import os
import pathlib
from typing import Any
from typing import TYPE_CHECKING

from kvmtune.errors import InputError
from kvmtune.facts.types import Facts
from kvmtune.tuning import measure as _measure
from kvmtune.tuning.measure import Measure
from kvmtune import yamlinput

if TYPE_CHECKING:
    from kvmtune.tuning.tuners.base import Tuner

SUFFIXES = ('.yaml', '.yml')
TOP_LEVEL_KEYS = ('name', 'description', 'source', 'tuners', 'measure')
TUNER_KEYS = ('name', 'params')


def packaged_dir() -> str | None:
    """The profiles shipped with kvmtune (package data)."""
    package = pathlib.Path(__file__).resolve().parent.parent
    candidate = package / 'data' / 'profiles'
    # os.path.isdir, not Path.is_dir: False (not PermissionError) for a
    # user who cannot reach the installation, who may still name a file
    return str(candidate) if os.path.isdir(candidate) else None


def search_dirs(extra_dirs: Iterable[str] | None = ()) -> list[str]:
    dirs = [packaged_dir()] + list(extra_dirs or ())
    return [d for d in dirs if d]


def available(dirs: Iterable[str]) -> dict[str, str]:
    """{profile name: path}; later directories win on equal names."""
    found = {}
    for directory in dirs:
        try:
            entries = sorted(os.listdir(directory))
        except OSError as exc:
            raise InputError(f'cannot read the profile directory: '
                             f'{exc.strerror}', source=directory,
                             fix='fix [DEFAULT] profile_dirs in '
                                 'kvmtune.conf') from None
        for entry in entries:
            stem, suffix = os.path.splitext(entry)
            path = os.path.join(directory, entry)
            # A directory, FIFO or device named *.yaml is not a profile
            # (reading a FIFO would hang): only regular files count.
            if suffix in SUFFIXES and os.path.isfile(path):
                found[stem] = path
    return found


@dataclasses.dataclass
class TunerRef:
    name: str
    params: dict[str, Any]          # as written in the profile
    tuner_class: type['Tuner']


@dataclasses.dataclass
class Profile:
    name: str
    description: str
    source: str           # the experiment it reproduces (a citation)
    path: str             # the YAML file
    tuner_refs: list[TunerRef]
    # the rollout's canary gate (kvmtune.tuning.measure), when stated
    measure: Measure | None = None

    def tuners(self, facts: Facts) -> list['Tuner']:
        """The profile's tuners, instantiated on a host's facts."""
        return [ref.tuner_class(ref.params, facts, source=self.path)
                for ref in self.tuner_refs]

    def to_dict(self) -> dict[str, Any]:
        return {
            'name': self.name,
            'description': self.description,
            'source': self.source,
            'tuners': [dict(name=ref.name, **({'params': ref.params}
                                              if ref.params else {}))
                       for ref in self.tuner_refs],
            **({'measure': self.measure.to_dict()} if self.measure else {}),
        }


MAX_BYTES = 1 << 20     # a profile is a few hundred bytes


def _read_yaml(path: str) -> Any:
    # Duplicate keys, non-string keys, nesting, non-UTF-8: kvmtune.yamlinput.
    return yamlinput.load_yaml(path, max_bytes=MAX_BYTES)


def _kind(value: object) -> str:
    if value is None:
        return 'missing or empty'
    if isinstance(value, dict):
        return 'a mapping'
    return f'a {type(value).__name__}'


def _text(data: dict[str, Any], key: str, path: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value.strip():
        raise InputError(f'{key} must be a non-empty string', source=path,
                         key=key, fix=f'add a {key} line')
    return ' '.join(value.split())


def _tuner_ref(item: Any, index: int, path: str, seen: set[str]) -> TunerRef:
    from kvmtune.tuning import tuners

    key = f'tuners[{index}]'
    if isinstance(item, str):
        item = {'name': item}
    if not isinstance(item, dict):
        raise InputError('a tuner is a name or a mapping with name and '
                         'params', source=path, key=key,
                         fix='write "- name: TUNER" (kvmtune profile list '
                             'shows profiles that work)')
    unknown = sorted(set(item) - set(TUNER_KEYS))
    if unknown:
        raise InputError(f'unknown key {unknown[0]!r}', source=path,
                         key=key, fix='a tuner has: ' + ', '.join(
                             TUNER_KEYS))
    name = item.get('name')
    if not isinstance(name, str):
        raise InputError('missing tuner name', source=path, key=key,
                         fix='add "name: TUNER", one of: ' + ', '.join(
                             tuners.names()))
    if name in seen:
        raise InputError(f'tuner {name!r} is listed twice', source=path,
                         key=key, fix='merge its params into one entry')
    seen.add(name)
    tuner_class = tuners.get(name, source=path, key=key)
    params = item.get('params', {})
    if not isinstance(params, dict) or ('params' in item and not params):
        raise InputError('params is empty or not a mapping of parameter '
                         'names to values', source=path,
                         key=f'{key}.params', fix='give the parameters as '
                         'name: value lines, or leave params out for the '
                         "tuner's defaults")
    tuner_class.parse_params(params, source=path)
    return TunerRef(name, params, tuner_class)


def load_file(path: str) -> Profile:
    """Read and check one profile file; InputError names what is wrong."""
    data = _read_yaml(path)
    if not isinstance(data, dict):
        raise InputError('a profile is a mapping with description, source '
                         'and tuners', source=path,
                         fix='start from a packaged one: kvmtune profile '
                             'show pinned-hugepages')
    unknown = sorted(set(data) - set(TOP_LEVEL_KEYS))
    if unknown:
        raise InputError(f'unknown key {unknown[0]!r}', source=path,
                         fix='a profile has: ' + ', '.join(TOP_LEVEL_KEYS))
    stem = os.path.splitext(os.path.basename(path))[0]
    name = data.get('name', stem)
    if name != stem:
        raise InputError(f'name {name!r} differs from the file name',
                         source=path, key='name',
                         fix=f'name it {stem!r} or rename the file')
    tuner_items = data.get('tuners')
    if not isinstance(tuner_items, list):
        raise InputError('tuners must be a list of tuners (it is '
                         f'{_kind(tuner_items)})', source=path, key='tuners',
                         fix="list the tuners; write 'tuners: []' for a "
                         'profile that tunes nothing (as baseline does)')
    seen: set[str] = set()
    refs = [_tuner_ref(item, index, path, seen)
            for index, item in enumerate(tuner_items)]
    measure = (_measure.parse(data['measure'], path)
               if 'measure' in data else None)
    return Profile(name=name, description=_text(data, 'description', path),
                   source=_text(data, 'source', path), path=path,
                   tuner_refs=refs, measure=measure)


def is_file_reference(text: str) -> bool:
    return os.sep in text or text.endswith(SUFFIXES)


def load(name_or_path: str, dirs: Iterable[str]) -> Profile:
    """A profile by name (searched in ``dirs``) or by file path."""
    if is_file_reference(name_or_path):
        return load_file(name_or_path)
    found = available(dirs)
    if name_or_path not in found:
        raise InputError(f'unknown profile {name_or_path!r}',
                         fix='available: ' + (', '.join(sorted(found))
                                              or 'none'))
    return load_file(found[name_or_path])


def configured_dirs(config_files: list[str]) -> list[str]:
    """The search path from kvmtune.conf's [DEFAULT] profile_dirs."""
    from kvmtune import conf

    loaded = conf.load(config_files)
    return search_dirs(loaded.profile_dirs)
