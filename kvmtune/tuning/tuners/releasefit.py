"""A tuner's wants fitted to the Nova release a plan is for (the release
table, kvmtune.nova_releases): Tuner.fit_release and Tuner.fit_specs
call these with the tuner's release."""

from collections.abc import Mapping
from typing import Any
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kvmtune.nova_releases import Release


def fit_options(release: 'Release', wanted: dict[tuple[str, str], Any],
                optional: Mapping[tuple[str, str], str]
                ) -> tuple[dict[tuple[str, str], Any], list[str], list[str]]:
    """(nova.conf values, notes, what is unavailable) for the release.

    Per option, from the release table (kvmtune.nova_releases): an old
    name is planned under the release's name for it; an option the
    release lacks or never reads is left out with a note when the tuner
    can do without it (``optional``: the tuner's OPTIONAL_NOVA_CONF),
    else it is unavailable, as is a value outside the release's choices;
    an option deprecated for removal is planned under its non-deprecated
    equivalent when the release has one, else with a note.
    """
    fitted: dict[tuple[str, str], Any] = {}
    notes: list[str] = []
    missing: list[str] = []
    for (section, option), value in wanted.items():
        where = f'[{section}] {option}'
        info = release.option(section, option)
        if info is None:    # not in the table: nothing to fit
            fitted[(section, option)] = value
            continue
        new = _equivalent(release, info)
        if new is not None:
            notes.append(f'{release.label}: {where} is '
                         + ('deprecated' if info['exists'] else
                            'an old name') + f'; planned as {new[2]}')
            (section, option), info = new[:2], new[3]
            where = new[2]
        if not info['exists'] or not info.get('read'):
            why = optional.get((section, option))
            lack = ('has no' if not info['exists']
                    else 'defines but never reads')
            if why is None:
                missing.append(f'{release.label} {lack} {where}')
            else:
                notes.append(f'{release.label} {lack} {where}; not '
                             f'planned ({why})')
            continue
        choices = info.get('choices')
        if choices and value not in choices:
            missing.append(f'{release.label} does not accept {where} '
                           f'= {value} (only {", ".join(choices)})')
            continue
        if info.get('deprecated_for_removal'):
            notes.append(
                f'{release.label}: {where} is deprecated for removal '
                f'since {info.get("deprecated_since")}, and the '
                'release has no non-deprecated equivalent; planned '
                'because it still reads it ('
                + ', '.join(info.get('read_in', ())) + ')')
        fitted[(section, option)] = value
    for section_option, value in fitted.items():
        if section_option == ('filter_scheduler', 'enabled_filters'):
            for name in value.split(','):
                if not release.has_filter(name):
                    missing.append(f'{release.label} has no scheduler '
                                   f'filter {name}')
    return fitted, notes, missing


def fit_specs(release: 'Release', specs: dict[str, str]) -> list[str]:
    """What of ``specs`` the release's validators refuse (list)."""
    missing = []
    for name, value in specs.items():
        info = release.spec(name)
        if info is None:
            continue
        if not info['validated']:
            missing.append(f'{release.label} does not validate the '
                           f'extra spec {name} (it has no {name})')
        elif info.get('enum') and value not in info['enum']:
            missing.append(f'{release.label} does not accept {name}='
                           f'{value} (only {", ".join(info["enum"])})')
    return missing


def _parse_option(text: str) -> tuple[str, str]:
    """('section', 'option') of '[section] option'."""
    section, _, option = text.partition('] ')
    return section.lstrip('['), option


def _equivalent(release: 'Release', info: dict[str, Any]
                ) -> tuple[str, str, str, dict[str, Any]] | None:
    """(section, option, '[s] o', info) of the release's non-deprecated
    equivalent named by the table, or None."""
    name = info.get('replaced_by')
    if not name or (info['exists']
                    and not info.get('deprecated_for_removal')):
        return None
    section, option = _parse_option(name)
    new = release.option(section, option)
    if not new or not new['exists'] or new.get('deprecated_for_removal'):
        return None
    return section, option, name, new
