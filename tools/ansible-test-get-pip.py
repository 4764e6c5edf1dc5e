"""Stands in for ansible-test's pip bootstrap script where
ci-files.testing.ansible.com cannot be reached (tox -e ansible-sanity).

ansible-test makes each sanity test's virtualenv without pip, then runs
get-pip (ansible_test/_util/target/setup/requirements.py, bootstrap():
``GET_PIP=~/.ansible/test/cache/get_pip_<version>.py``), which it
downloads from ci-files.testing.ansible.com. This does what get-pip does
(https://github.com/pypa/get-pip: ``pip install --upgrade
--force-reinstall`` of the arguments, its own options dropped), with the
pip wheel CPython bundles (ensurepip) instead of one embedded in the
script. The packages come from the package index pip is configured for,
as get-pip's would.
"""

import glob
import os
import runpy
import sys

import ensurepip

WHEEL, = glob.glob(os.path.join(os.path.dirname(ensurepip.__file__),
                                '_bundled', 'pip-*.whl'))
sys.path.insert(0, WHEEL)
ARGS = [a for a in sys.argv[1:] if a not in ('--no-setuptools',
                                             '--no-wheel')]
sys.argv = ['pip', 'install', '--upgrade', '--force-reinstall'] + ARGS
runpy.run_module('pip', run_name='__main__', alter_sys=True)
