"""Tempest's entry point for kvmtune (setup.cfg: tempest.test_plugins)."""

import os
from typing import Any

from tempest import config
from tempest.test_discover import plugins

from kvmtune.tempest_plugin import config as kvmtune_config


class KvmtuneTempestPlugin(plugins.TempestPlugin):

    def load_tests(self) -> tuple[str, str]:
        base_path = os.path.split(os.path.dirname(
            os.path.dirname(os.path.abspath(__file__))))[0]
        test_dir = 'kvmtune/tempest_plugin/tests'
        return os.path.join(base_path, test_dir), base_path

    def register_opts(self, conf: Any) -> None:
        config.register_opt_group(conf, kvmtune_config.kvmtune_group,
                                  kvmtune_config.KvmtuneGroup)

    def get_opt_lists(self) -> list[tuple[str, list[Any]]]:
        return [(kvmtune_config.kvmtune_group.name,
                 kvmtune_config.KvmtuneGroup)]
