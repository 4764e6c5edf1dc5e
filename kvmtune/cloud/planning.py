"""The part of a profile's plan the cloud commands need.

``flavor apply|diff|remove`` take ``--profile`` and ``--root``/``--facts``
(default: this host) like ``kvmtune plan`` does; the plan's extra specs
are checked against Nova's rules here, before any request leaves.
"""

import dataclasses


@dataclasses.dataclass(frozen=True)
class FlavorPlan:
    profile: str
    extra_specs: dict
    owned_extra_specs: tuple


def plan_for(args):
    """Build and check the plan for args.profile on the host args name."""
    from kvmtune import conf
    from kvmtune import extra_specs
    from kvmtune import facts
    from kvmtune import plan
    from kvmtune import profiles

    config = conf.load(getattr(args, 'config_file', None))
    profile = profiles.load(args.profile, conf=config)
    host = facts.resolve(root=getattr(args, 'root', None),
                         facts_file=getattr(args, 'facts', None))
    built = plan.build_plan(profile, host).to_dict()
    for key, value in built['extra_specs'].items():
        extra_specs.validate(key, value, source=f'profile {args.profile}',
                             key=key)
    return FlavorPlan(built['profile'],
                      {k: str(v) for k, v in built['extra_specs'].items()},
                      tuple(built['owned_extra_specs']))
