"""The part of a profile's plan the cloud commands need.

``flavor apply|diff|remove``, the main job and the Tempest plugin name a
profile and a host (``root``/``facts_file``, default: this host) as
``kvmtune plan`` does. ``build_plan`` checks every
extra spec against Nova's rules (kvmtune.tuning.extra_specs), so a wrong value
stops here, before any request leaves.
"""

from collections.abc import Callable
from collections.abc import Iterable
import dataclasses
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kvmtune.tuning.plan import Plan


@dataclasses.dataclass(frozen=True)
class FlavorPlan:
    profile: str
    extra_specs: dict[str, str]
    owned_extra_specs: tuple[str, ...]


def plan_for(profile_name: str, root: str | None = None,
             facts_file: str | None = None,
             config_files: Iterable[str] | None = None,
             check: 'Callable[[Plan], object] | None' = None) -> FlavorPlan:
    """The flavor side of a profile's plan for a host.

    :param profile_name: a profile name or YAML file
    :param root: a tree made by ``kvmtune host capture`` (else this host)
    :param facts_file: a facts JSON (``kvmtune host inspect --format json``)
    :param config_files: kvmtune.conf files naming more profile dirs
    :param check: called with the whole plan before anything else (``kvmtune
        flavor apply`` refuses a plan with FAIL checks there)
    """
    from kvmtune.tuning import plan

    # the front door: loads, resolves, plans and refuses a withheld plan
    built, = plan.for_host([profile_name], root=root, facts_file=facts_file,
                           config_files=config_files or ())
    if check is not None:
        check(built)
    return FlavorPlan(built.profile,
                      {k: str(v) for k, v in built.extra_specs.items()},
                      tuple(built.owned_extra_specs))
