"""kvmtune's [testcloud] options: the single-host test cloud.

Read by ``kvmtune cloud install|up|down|status|env|restart-compute`` and by
the library behind it (kvmtune/testcloud/api.py), which the main job and the
functional tests call. doc/testcloud.md describes the cloud.
"""

from typing import Any

from oslo_config import cfg

testcloud_group = cfg.OptGroup(
    'testcloud', title='The single-host test cloud',
    help='Used by "kvmtune cloud", the main job and the functional tests.')

_PORT_HELP = """
TCP port on 127.0.0.1 of the test cloud's %(what)s.

Changing it lets the test cloud run beside a service that already holds the
port; the catalog, clouds.yaml and every service's configuration follow.
Takes effect at the next ``kvmtune cloud up``.

Possible values:

* A free TCP port number (1-65535), different from the other
  ``*_port`` options of this group.

Related options:

* ``state_dir``: ``kvmtune cloud status`` lists the ports in use.
"""

testcloud_opts = [
    cfg.StrOpt(
        'venv',
        default='/opt/kvmtune-cloud/venv',
        help="""
The virtualenv that holds the test cloud's services (Keystone, Placement,
Glance, Nova, Neutron, gunicorn, libvirt-python), created and filled by
``kvmtune cloud install``; never kvmtune's own environment.

The environment variable ``KVMTUNE_CLOUD_VENV`` takes precedence over this
option.

Possible values:

* An absolute directory path; it is created when missing. Its
  ``bin/python3`` is the Python that can import nova.

Related options:

* ``state_dir``
"""),
    cfg.StrOpt(
        'state_dir',
        default='/var/lib/kvmtune-cloud',
        help="""
Where the running test cloud keeps its state: configuration files
(``etc/``), databases' files and images (``data/``), logs (``log/``), the
processes it started (``run/``), ``clouds.yaml`` (clouds ``kvmtune-admin``
and ``kvmtune-member``) and its generated passwords. ``kvmtune cloud up``
empties and refills it; it is made mode 0700.

The environment variable ``KVMTUNE_CLOUD_DIR`` takes precedence over this
option.

Possible values:

* An absolute directory path on a local file system.

Related options:

* ``venv``
"""),
    cfg.PortOpt('keystone_port', default=5000, min=1,
                help=_PORT_HELP % {'what': 'Keystone (identity API)'}),
    cfg.PortOpt('placement_port', default=8778, min=1,
                help=_PORT_HELP % {'what': 'Placement API'}),
    cfg.PortOpt('glance_port', default=9292, min=1,
                help=_PORT_HELP % {'what': 'Glance (image API)'}),
    cfg.PortOpt('nova_api_port', default=8774, min=1,
                help=_PORT_HELP % {'what': 'Nova API (compute)'}),
    cfg.PortOpt('network_port', default=9696, min=1,
                help=_PORT_HELP % {
                    'what': 'network API (Neutron, or the read-only stub '
                            'of fake mode)'}),
]

# option name -> the service name kvmtune/testcloud/config.py uses
PORT_OPTS = {'keystone_port': 'keystone', 'placement_port': 'placement',
             'glance_port': 'glance', 'nova_api_port': 'nova-api',
             'network_port': 'network'}


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_group(testcloud_group)
    conf.register_opts(testcloud_opts, group=testcloud_group)


def list_opts() -> list[tuple[Any, list[cfg.Opt]]]:
    return [(testcloud_group, testcloud_opts)]
