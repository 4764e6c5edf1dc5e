"""A fake installed distribution for the plugin tests: a directory with a
``<name>-<version>.dist-info`` (METADATA, entry_points.txt) and the
module its entry points name, as pip would leave them in site-packages.

Nothing is installed: ``install`` puts the directory on sys.path for one
test (monkeypatch undoes it), and importlib.metadata finds the
distribution there as it finds any other.
"""

import uuid

# A plugin command: ``kvmtune ... --disk sda`` prints "wiped sda". It
# appends a line to MARK when imported, if MARK is a path.
COMMAND = '''\
"""A kvmtune plugin of the tests."""

MARK = {mark!r}
if MARK:
    with open(MARK, 'a') as f:
        f.write('imported\\n')


class Command:
    """Wipe a disk (a test plugin).

    Longer text of its --help.
    """

    def add_arguments(self, parser):
        parser.add_argument('--disk', required=True)

    def run(self, args):
        print(f'wiped {{args.disk}}')
        return 0


command = Command()
nothing = 42
'''


def install(tmp_path, monkeypatch, entry_points, group='kvmtune.cli',
            mark=None, name='fakeplug', version='1.0'):
    """A distribution ``name`` whose ``group`` entry points are
    ``entry_points`` ({name: value}, ``{module}`` in a value is the
    plugin module's name), on sys.path for this test; the module name.

    Each call makes a module name no other test imports (sys.modules
    keeps modules between tests).
    """
    module = f'kvmtune_test_plugin_{uuid.uuid4().hex[:12]}'
    site = tmp_path / f'site-{module}'
    info = site / f'{name}-{version}.dist-info'
    info.mkdir(parents=True)
    (info / 'METADATA').write_text(
        f'Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n')
    (info / 'entry_points.txt').write_text(f'[{group}]\n' + ''.join(
        f'{key} = {value.format(module=module)}\n'
        for key, value in entry_points.items()))
    (site / f'{module}.py').write_text(COMMAND.format(
        mark=str(mark) if mark else None))
    monkeypatch.syspath_prepend(str(site))
    return module
