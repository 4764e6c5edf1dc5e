"""Starting the test cloud: what up() refuses before it touches anything
(start.py's checks). No cloud is started here."""

import os

import pytest

from kvmtune.errors import CloudError
from kvmtune.testcloud import api
from kvmtune.testcloud import config


def test_up_refuses_a_port_something_listens_on(tmp_path):
    import socket

    with socket.socket() as listener:
        listener.bind(('127.0.0.1', 0))
        listener.listen()
        port = listener.getsockname()[1]
        lay = config.Layout(str(tmp_path / 'state'), str(tmp_path / 'venv'),
                            {'glance': port})
        with pytest.raises(CloudError,
                           match=r'\[testcloud\] \*_port: port in use on '
                                 r'127\.0\.0\.1: glance ') as exc:
            api.up(layout=lay)
    assert f'port in use on 127.0.0.1: glance {port}' in exc.value.line()
    assert not os.path.exists(lay.root)
