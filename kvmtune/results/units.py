"""How a figure prints: its unit, its scale, and the emulated label.

Figures are kept in one unit set (kvmtune.results.row: bytes/s,
nanoseconds) from the parser to the report; only the renderer
(kvmtune.report.render) scales them for print, by the factors here. Every
table, chart and summary line takes its units from this module (the
hacking check K101 refuses their table's literals elsewhere).
"""

MIB = 1048576.0             # bytes in a MiB: throughput prints in MiB/s
US_PER_NS = 1e-3            # latency prints in microseconds

# The throughput figures by preference: the first one the valid rows have
# is the runs' figure. (Row column, unit as printed, factor to print it)
THROUGHPUT = (('iops', 'IOPS', 1.0), ('events_s', 'events/s', 1.0),
              ('gbit_s', 'Gbit/s', 1.0), ('tps', 'transactions/s', 1.0),
              ('bw_bytes_s', 'MiB/s', 1.0 / MIB))

# How every Row figure prints: {Row column: (unit, scale)}
UNITS = {**{k: (unit, scale) for k, unit, scale in THROUGHPUT},
         'lat_mean_ns': ('lat mean us', US_PER_NS),
         'lat_p99_ns': ('lat p99 us', US_PER_NS),
         'lat_max_ns': ('lat max us', US_PER_NS), 'cpu_pct': ('CPU%', 1.0),
         'seconds': ('time s', 1.0)}

# The label of every figure measured under QEMU TCG (no KVM): titles,
# pages, plots, charts and summary lines say it, in these words.
EMULATED = 'emulated: QEMU TCG, not KVM speed'


def throughput(*keys: str) -> tuple[tuple[str, str, float], ...]:
    """The THROUGHPUT entries of ``keys``, in ``keys``' order."""
    table = {entry[0]: entry for entry in THROUGHPUT}
    return tuple(table[key] for key in keys)
