"""Sphinx configuration of kvmtune's release notes (tox -e releasenotes)."""

project = 'kvmtune Release Notes'
copyright = 'kvmtune developers'
author = 'kvmtune developers'

extensions = ['reno.sphinxext']

root_doc = 'index'
exclude_patterns = ['_build']

html_theme = 'alabaster'
html_title = 'kvmtune release notes'
html_show_sourcelink = False
