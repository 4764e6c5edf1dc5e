"""What the test cloud's services are started with."""

import re

from kvmtune.testcloud import services


def test_secrets_are_never_read_as_options():
    # keystone-manage bootstrap --bootstrap-password <secret>: a secret
    # starting with '-' failed cloud up; hex ones cannot.
    for _ in range(200):
        for name, secret in services.new_secrets().items():
            assert re.fullmatch(r'[0-9a-f]{36}', secret), (name, secret)
