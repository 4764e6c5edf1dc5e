"""The single-host test cloud, run as ``kvmtune cloud``.

A real Keystone, Placement, Glance, Nova and Neutron on 127.0.0.1 in their
own virtualenv, for trying profiles, the main job's default cloud and the
functional tests. ``api`` is the library (plain arguments, results as
data); ``files/`` holds what the services' own venv loads (the fake NUMA
driver, the WSGI entry, the pinned requirements), found from this installed
package. doc/testcloud.md describes what runs and why.
"""
