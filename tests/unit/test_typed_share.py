"""tools/typed-share: what counts as an annotated public function, and
the report it prints for this tree."""

import ast
import importlib.machinery
import importlib.util
import os
import subprocess
import sys

from tests import paths

SCRIPT = os.path.join(paths.REPO, 'tools', 'typed-share')


def load():
    loader = importlib.machinery.SourceFileLoader('typed_share', SCRIPT)
    spec = importlib.util.spec_from_loader('typed_share', loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


SOURCE = '''
def typed(a: int, *rest: str, key: bool = False, **more: int) -> None: ...
def untyped(a): ...
def no_return(a: int): ...
def _private(a: int) -> int: ...
class Public:
    def method(self, a: int) -> int: ...
    def bare(self, a): ...
    @staticmethod
    def static(a: int) -> int: ...
    @classmethod
    def made(cls) -> 'Public': ...
    def _hidden(self) -> None: ...
class _Private:
    def method(self) -> None: ...
if True:
    def guarded() -> None:
        def nested(x): ...
'''


def test_functions_counts_public_and_annotated():
    found = {name: (public, done) for name, public, done
             in load().functions(ast.parse(SOURCE))}
    assert found == {
        'typed': (True, True), 'untyped': (True, False),
        'no_return': (True, False), '_private': (False, True),
        'method': (False, True),    # _Private's, the last of the name
        'bare': (True, False), 'static': (True, True),
        'made': (True, True), '_hidden': (False, True),
        'guarded': (True, True),
    }


def test_a_static_method_counts_its_first_parameter():
    tree = ast.parse('class C:\n    @staticmethod\n    def f(a) -> int: ...')
    [(_, public, done)] = list(load().functions(tree))
    assert (public, done) == (True, False)


def test_private_modules_are_not_public():
    share = load()
    assert share.public_module('kvmtune.facts.cpu')
    assert share.public_module('kvmtune.devstack.__main__')
    assert not share.public_module('kvmtune._internal.thing')


def test_report_on_this_tree_names_the_tiers_and_a_total():
    done = subprocess.run([sys.executable, SCRIPT], capture_output=True,
                          text=True, check=True)
    lines = done.stdout.splitlines()
    assert lines[0].split()[:2] == ['package', 'tier']
    facts = next(line.split() for line in lines
                 if line.startswith('kvmtune.facts '))
    assert any(line.startswith('total ') for line in lines)
    if sys.version_info < (3, 11):      # no tomllib: figures only
        assert facts[1] == '?'
        return
    assert facts[1] == 'strict'
    assert any(line.startswith('mypy strict tier (disallow_untyped_defs')
               for line in lines)
