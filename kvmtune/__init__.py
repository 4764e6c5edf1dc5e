"""kvmtune: tune KVM compute hosts for near bare-metal guests, measure it."""


def __getattr__(name: str) -> str:
    """``kvmtune.__version__``: the installed distribution's version (pbr
    wrote it at build time; importlib.metadata reads it), looked up on
    first use only, so importing kvmtune stays free of it."""
    if name == '__version__':
        from importlib import metadata

        try:
            version = metadata.version('kvmtune')
        except metadata.PackageNotFoundError:
            version = 'unknown (kvmtune is not installed)'
        globals()[name] = version
        return version
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
