"""The part of a profile's plan the cloud commands need.

``flavor apply|diff|remove`` take ``--profile`` and ``--root``/``--facts``
(default: this host) as ``kvmtune plan`` does. ``build_plan`` checks every
extra spec against Nova's rules (kvmtune.extra_specs), so a wrong value
stops here, before any request leaves.
"""

import dataclasses


@dataclasses.dataclass(frozen=True)
class FlavorPlan:
    profile: str
    extra_specs: dict
    owned_extra_specs: tuple


def plan_for(args):
    """The flavor side of args.profile's plan for the host args name."""
    from kvmtune import facts
    from kvmtune import plan
    from kvmtune import profiles

    profile = profiles.load(
        args.profile, profiles.configured_dirs(args.config_file))
    host = facts.resolve(root=getattr(args, 'root', None),
                         facts_file=getattr(args, 'facts', None))
    built = plan.build_plan(profile, host)
    return FlavorPlan(built.profile,
                      {k: str(v) for k, v in built.extra_specs.items()},
                      tuple(built.owned_extra_specs))
