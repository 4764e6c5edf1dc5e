"""Sphinx configuration of kvmtune's documentation (tox -e docs)."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# kvmtune_cli and cli_commands: the CLI reference from kvmtune's parser.
sys.path.insert(0, os.path.join(HERE, '_ext'))

project = 'kvmtune'
copyright = 'kvmtune developers'
author = 'kvmtune developers'

extensions = [
    'myst_parser',
    'oslo_config.sphinxext',
    'oslo_config.sphinxconfiggen',
    'kvmtune_cli',
]

# The prose pages are Markdown (MyST); the reference pages reST.
source_suffix = {'.rst': 'restructuredtext', '.md': 'markdown'}
root_doc = 'index'
# Option names and shell text stay as typed: no -- to en dash, no curly
# quotes (--os-cloud in a help text must read --os-cloud).
smartquotes = False
exclude_patterns = ['_build']
# Links to a heading within a page (#section-name), as GitHub makes them.
myst_heading_anchors = 3

# The sample kvmtune.conf, made by oslo-config-generator from the same
# file tox -e genconfig uses.
config_generator_config_file = os.path.join(
    HERE, '..', '..', 'etc', 'kvmtune', 'kvmtune-config-generator.conf')
# (in _static/, not a static path: the page includes it and links it)
sample_config_basename = '_static/kvmtune'

# A theme that ships with Sphinx: the pages load nothing from the network
# (openstackdocstheme's header always loads search.openstack.org's script).
html_theme = 'alabaster'
html_theme_options = {'page_width': '1180px', 'sidebar_width': '250px'}
html_title = 'kvmtune'
html_show_sourcelink = False
# Served pages: without it a browser asks for /favicon.ico and logs a 404.
html_favicon = 'favicon.svg'
