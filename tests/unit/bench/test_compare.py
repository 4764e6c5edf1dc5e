"""bench local --compare: the settings grammar, the columns it runs and
what this host cannot give (pure logic; the runs themselves boot QEMU)."""

import pytest

from kvmtune.bench import compare
from kvmtune.errors import InputError
from kvmtune import workloads


@pytest.fixture(scope='module')
def defs():
    return workloads.load_all()


def test_axis_grammar():
    assert compare.parse_axis('cache=none,writeback,writethrough') == \
        ('cache', ['none', 'writeback', 'writethrough'])
    assert compare.parse_axis('vcpus=1,2') == ('vcpus', [1, 2])
    assert compare.parse_axis(' iothread = on, off ') == \
        ('iothread', ['on', 'off'])


@pytest.mark.parametrize('text,match', [
    ('cache', 'not SETTING=V1,V2'),
    ('colour=red', 'not SETTING=V1,V2'),
    ('cache=none,none', 'distinct'),
    ('cache=', 'distinct'),
    ('cache=fast', "unknown value 'fast'"),
    ('vcpus=0,2', 'whole numbers'),
    ('bus=ide', "unknown value 'ide'"),
])
def test_bad_axes_are_one_line_errors(text, match):
    with pytest.raises(InputError, match=match) as exc:
        compare.parse_axis(text)
    assert exc.value.key == '--compare'


def test_settings_the_workload_does_not_exercise_are_refused(defs):
    cpu, fio, net = (defs['sysbench-cpu'], defs['fio-randread-4k'],
                     defs['iperf3-tcp-stream'])
    compare.check_axes([('cache', ['none']), ('pinning', ['on'])], fio)
    compare.check_axes([('vhost', ['on', 'off'])], net)
    compare.check_axes([('hugepages', ['on', 'off'])], cpu)
    with pytest.raises(InputError, match='data disk setting'):
        compare.check_axes([('iothread', ['on', 'off'])], cpu)
    with pytest.raises(InputError, match='NIC setting'):
        compare.check_axes([('vhost', ['on', 'off'])], fio)
    with pytest.raises(InputError, match='given twice'):
        compare.check_axes([('cache', ['none']), ('cache', ['unsafe'])],
                           fio)


def test_one_setting_at_a_time_from_the_base():
    base = dict(compare.DEFAULTS)
    cols = compare.runs(base, [('cache', ['none', 'writeback']),
                               ('iothread', ['on', 'off'])])
    assert [label for label, _ in cols] == [
        'cache=none', 'cache=writeback', 'iothread=on', 'iothread=off']
    settings = dict(cols)
    assert settings['cache=writeback']['iothread'] == 'on'
    assert settings['iothread=off']['cache'] == 'none'
    # the base values of both axes are one and the same run
    keys = [compare.key(s) for _, s in cols]
    assert keys[0] == keys[2] and len(set(keys)) == 3


MEMINFO = {'Hugepagesize': 2048, 'HugePages_Free': 0,
           'HugePages_Total': 0}


def test_hugepages_skipped_with_the_fix_when_no_pages():
    why = compare.skip_reason(dict(compare.DEFAULTS, hugepages='on'),
                              vms=2, ram_mb=256, host_cpus=2,
                              meminfo=MEMINFO, mount='/dev/hugepages')
    assert why.startswith('hugepages=on skipped: 0 free 2048 kB')
    assert 'need 256' in why and 'nr_hugepages' in why
    enough = dict(MEMINFO, HugePages_Free=256)
    assert compare.skip_reason(dict(compare.DEFAULTS, hugepages='on'),
                               2, 256, 2, meminfo=enough,
                               mount='/dev/hugepages') is None
    assert 'no hugetlbfs mount' in compare.skip_reason(
        dict(compare.DEFAULTS, hugepages='on'), 2, 256, 2, meminfo=enough,
        mount='')


def test_vhost_on_skipped_where_the_device_is_missing(tmp_path):
    on = dict(compare.DEFAULTS, vhost='on')
    why = compare.skip_reason(on, 2, 256, 2, meminfo=MEMINFO,
                              vhost_device=str(tmp_path / 'vhost-net'))
    assert why.startswith('vhost=on skipped:') and 'missing' in why
    device = tmp_path / 'vhost-net'
    device.write_text('')
    assert compare.skip_reason(on, 2, 256, 2, meminfo=MEMINFO,
                               vhost_device=str(device)) is None
    assert compare.skip_reason(dict(compare.DEFAULTS), 2, 256, 2,
                               meminfo=MEMINFO,
                               vhost_device=str(tmp_path / 'x')) is None


def test_pinning_needs_a_cpu_per_vcpu():
    pinned = dict(compare.DEFAULTS, pinning='on', vcpus=2)
    assert 'need 4 host CPUs' in compare.skip_reason(
        pinned, 2, 256, 2, meminfo=MEMINFO)
    assert compare.skip_reason(pinned, 1, 256, 2, meminfo=MEMINFO) is None


def test_hugetlbfs_mount_of_2m_pages(tmp_path):
    mounts = tmp_path / 'mounts'
    mounts.write_text(
        'proc /proc proc rw 0 0\n'
        'none /dev/hugepages1G hugetlbfs rw,relatime,pagesize=1024M 0 0\n'
        'none /dev/hugepages hugetlbfs rw,relatime,pagesize=2M 0 0\n')
    assert compare.hugetlbfs_mount(str(mounts)) == '/dev/hugepages'
    mounts.write_text('none /mnt/huge hugetlbfs rw,relatime 0 0\n')
    assert compare.hugetlbfs_mount(str(mounts)) == '/mnt/huge'
    mounts.write_text('proc /proc proc rw 0 0\n')
    assert compare.hugetlbfs_mount(str(mounts)) is None


def test_every_column_measured_once_skipped_ones_said():
    from kvmtune.bench.local import Measured
    from kvmtune.results import row as rows

    said, measured = [], []

    def measure(settings, log):
        log('booting')
        measured.append(settings['cache'])
        return [Measured(0, rows.Row('i-0', iops=100.0)),
                Measured(1, rows.failed('i-1', 'client', 'late', 'why'))]

    base = dict(compare.DEFAULTS, vcpus=1)
    columns = compare.runs(base, [('cache', ['none', 'writeback']),
                                  ('iothread', ['on']),
                                  ('pinning', ['on'])])
    out = compare.run_columns(columns, 2, 256, 1, 'fio-randread-4k',
                              measure, log=said.append)
    assert measured == ['none', 'writeback']    # iothread=on: the base
    assert [c.label for c in out] == ['cache=none', 'cache=writeback',
                                      'iothread=on', 'pinning=on']
    assert out[2].guests is out[0].guests
    assert out[3].skipped.startswith('pinning=on skipped: 2 guest(s)')
    assert '    booting' in said and '    1/2 guest(s) valid' in said
    assert '--- iothread=on: same settings as an earlier column, its run ' \
        'reused' in said
    assert out[3].doc() == {'label': 'pinning=on',
                            'settings': out[3].settings,
                            'skipped': out[3].skipped}
    row, _ = out[0].doc()['rows']
    assert (row['vm'], row['iops'], row['signal_s']) == (0, 100.0, None)


def test_the_record_keeps_only_the_settings_the_workload_uses(
        monkeypatch):
    from kvmtune import facts

    monkeypatch.setattr(facts, 'gather', lambda: None)
    settings = {'cache': 'none', 'format': 'raw', 'bus': 'virtio-blk',
                'iothread': 'on', 'vhost': 'off', 'vcpus': 2}
    cpu = compare.record('bench-local', workloads.get('sysbench-cpu'),
                         'tcg', 'asked', settings, {}, 10)
    assert cpu['settings'] == {'vcpus': 2}
    disk = compare.record('bench-compare', workloads.get('fio-randread-4k'),
                          'tcg', 'asked', settings, {}, 10)
    assert disk['settings'] == {k: v for k, v in settings.items()
                                if k != 'vhost'}
    assert (disk['kind'], disk['accel'], disk['workload']['runtime']) == (
        'bench-compare', 'tcg', 10)
