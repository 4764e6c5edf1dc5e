"""What capacity knows of each compute node besides the cloud: a
directory of HOST.json facts files ("kvmtune host inspect --format json"
on each node) and HOST.conf, the node's own nova.conf, for its
``[compute] cpu_dedicated_set``. Read once, by capacity.for_hosts."""

from kvmtune.facts.types import Facts


def read_dir(directory: str) -> tuple[dict[str, Facts], dict[str, set[int]]]:
    """({host name: facts} from DIR/*.json, {host name: dedicated CPUs}
    from the ``[compute] cpu_dedicated_set`` of DIR/*.conf)."""
    from kvmtune import facts
    from kvmtune import inputs

    fix = 'give a directory of HOST.json facts files'
    jsons = inputs.names_in(directory, '.json', key='--facts-dir', fix=fix)
    confs = inputs.names_in(directory, '.conf', key='--facts-dir', fix=fix)
    return ({host: facts.load(path) for host, path in jsons.items()},
            {host: dedicated_set(path) for host, path in confs.items()})


def dedicated_set(path: str, text: str | None = None) -> set[int]:
    """The CPUs of ``[compute] cpu_dedicated_set`` in a nova.conf (an empty
    set when it sets none); ``text`` its text when the caller has read it
    (kvmtune rollout --check), else ``path`` is read."""
    from kvmtune.errors import InputError
    from kvmtune.facts.cpulist import parse_cpu_spec
    from kvmtune.tuning.novaconf import update

    ini = update.parse_config(
        path, update.read_config(path) if text is None else text)
    value = ini.get('compute', 'cpu_dedicated_set')
    try:
        return set(parse_cpu_spec(value or ''))
    except ValueError as exc:
        raise InputError(str(exc), source=path,
                         key='[compute] cpu_dedicated_set',
                         fix='give a CPU list as Nova reads it (1-7,^4)'
                         ) from None
