"""kvmtune.tuning.novaconf.dropin: where a drop-in stands in oslo.config's
order (the order itself is proven against oslo.config in test_effective.py and,
with the files export writes, in
tests/unit/tuning/export/test_oslo_dropin.py)."""

import pytest

from kvmtune.errors import InputError
from kvmtune.tuning.novaconf import dropin
from kvmtune.tuning.novaconf import effective

NOVA = '/usr/bin/nova-compute'
FILES = ['--config-file', '/etc/nova/nova.conf',
         '--config-file', '/etc/nova/nova-compute.conf']
CONF = {'compute': {'cpu_dedicated_set': '2-3'},
        'DEFAULT': {'reserved_huge_pages': ['node:0,size:2048,count:1']}}
DROPIN = ('[compute]\ncpu_dedicated_set = 2-3\n[DEFAULT]\n'
          'reserved_huge_pages = node:0,size:2048,count:1\n')
BASE = '[compute]\ncpu_dedicated_set = 4-7\n'


def _files(base=BASE):
    return {dropin.dropin_path('compute'): DROPIN,
            '/etc/nova/nova.conf': base}


def test_no_config_file_reads_the_drop_in_last():
    got = dropin.place('compute', [NOVA], CONF, _files())
    assert got.lost == {}


def test_config_file_loses_and_a_trailing_config_dir_fixes_it():
    got = dropin.place('compute', [NOVA, *FILES], CONF, _files())
    assert got.lost == {('compute', 'cpu_dedicated_set'):
                        ('4-7', '/etc/nova/nova.conf')}
    assert got.fixable
    assert got.added == ['/etc/nova/nova-compute.conf.d']
    assert got.fixed_argv == [NOVA, *FILES, '--config-dir',
                              '/etc/nova/nova-compute.conf.d']


def test_the_host_default_dirs_are_kept_when_config_dir_is_added(tmp_path):
    shared = tmp_path / 'etc' / 'nova' / 'nova.conf.d'
    shared.mkdir(parents=True)
    (shared / '10-site.conf').write_text('[DEFAULT]\ndebug = true\n')
    got = dropin.place('compute', [NOVA, *FILES], CONF, _files(),
                       under=effective.Reader(str(tmp_path)))
    assert got.added == ['/etc/nova/nova.conf.d',
                         '/etc/nova/nova-compute.conf.d']


def test_an_early_config_dir_moves_to_the_end_not_twice():
    argv = [NOVA, '--config-dir=/etc/nova/nova-compute.conf.d', *FILES]
    got = dropin.place('compute', argv, CONF, _files())
    assert got.fixable
    assert got.fixed_argv == [NOVA, *FILES, '--config-dir',
                              '/etc/nova/nova-compute.conf.d']
    # a multi-valued option read twice would count twice
    eff = effective.effective(got.fixed_argv, effective.Overlay(_files()))
    assert eff.get('DEFAULT', 'reserved_huge_pages', multi=True)[0] == [
        'node:0,size:2048,count:1']


def test_a_later_file_on_the_host_is_not_fixable(tmp_path):
    late = tmp_path / 'etc' / 'nova' / 'nova-compute.conf.d'
    late.mkdir(parents=True)
    (late / '90-late.conf').write_text('[compute]\ncpu_dedicated_set = 8\n')
    got = dropin.place('compute', [NOVA, *FILES], CONF, _files(),
                       under=effective.Reader(str(tmp_path)))
    assert not got.fixable
    assert got.fixed_lost[('compute', 'cpu_dedicated_set')] == (
        '8', '/etc/nova/nova-compute.conf.d/90-late.conf')


def test_the_environment_beats_the_drop_in():
    got = dropin.place('compute', [NOVA], CONF, _files(),
                       environ={'OS_COMPUTE__CPU_DEDICATED_SET': '9'})
    assert got.lost[('compute', 'cpu_dedicated_set')] == ('9', 'environment')
    assert not got.fixable


def test_multi_values_in_base_add_up():
    base = BASE + '[DEFAULT]\nreserved_huge_pages = node:1,size:2048,count:1\n'
    got = dropin.place('compute', [NOVA], CONF, _files(base))
    assert ('DEFAULT', 'reserved_huge_pages') in got.lost


def test_base_place():
    assert dropin.base_place([NOVA]) == '/etc/nova/nova.conf'
    assert dropin.base_place([NOVA, '--config-file=/etc/nova/nova-cpu.conf'
                              ]) == '/etc/nova/nova-cpu.conf'
    assert dropin.base_place([NOVA, '--config-file', '/usr/share/nova/'
                              'nova-dist.conf', *FILES]) == \
        '/etc/nova/nova.conf'
    assert dropin.base_place([NOVA, *FILES], '/etc/nova/nova-compute.conf'
                             ) == '/etc/nova/nova-compute.conf'


def test_exec_argv_keeps_the_interpreter_not_the_title():
    fixed = [NOVA, '--config-dir', '/d']
    assert dropin.exec_argv(['/opt/v/bin/python3', '-u', NOVA], fixed) == [
        '/opt/v/bin/python3', '-u', *fixed]
    assert dropin.exec_argv([f'nova-compute: master process [{NOVA}]'],
                            fixed) == fixed


@pytest.mark.parametrize('word,spelled', [
    ('/usr/bin/nova-compute', '/usr/bin/nova-compute'),
    ('--config-file=/etc/nova/nova.conf', '--config-file=/etc/nova/nova.conf'),
    ('a b', '"a b"'),
    ('50%', '50%%'),
    ('$HOME', '$$HOME'),
    ('say "hi"\\', '"say \\"hi\\"\\\\"'),
    ('', '""'),
])
def test_systemd_words(word, spelled):
    assert dropin.systemd_word(word) == spelled


def test_systemd_dropin_resets_exec_start_first():
    text = dropin.systemd_dropin([NOVA, '--config-dir', '/d'], ['why'])
    assert text.splitlines()[1:] == [
        '[Service]', 'ExecStart=', f'ExecStart={NOVA} --config-dir /d']
    with pytest.raises(InputError,
                       match="the command 'nova-compute' is not an absolute "
                             "path") as caught:
        dropin.systemd_dropin(['nova-compute'], [])
    assert 'absolute path' in caught.value.line()


def test_running_services_and_their_units(tmp_path):
    proc = tmp_path / 'proc'
    for pid, argv, cgroup in [
            (10, [f'nova-compute: master process [{NOVA} '
                  '--config-file /etc/nova/nova.conf]'],
             '0::/system.slice/nova-compute.service\n'),
            (11, ['/usr/bin/python3', NOVA], '0::/system.slice/x.service\n'),
            (12, ['journalctl', '-u', 'nova-compute'], '0::/user.slice\n'),
            (20, ['/usr/bin/python3', '/usr/bin/nova-scheduler'],
             '1:name=systemd:/system.slice/'
             'openstack-nova-scheduler.service\n')]:
        (proc / str(pid)).mkdir(parents=True)
        (proc / str(pid) / 'cmdline').write_bytes(
            b'\0'.join(word.encode() for word in argv) + b'\0')
        (proc / str(pid) / 'cgroup').write_text(cgroup)
    assert dropin.running_cmdlines(str(proc)) == {
        'compute': ([NOVA, '--config-file', '/etc/nova/nova.conf'],
                    'nova-compute.service'),
        'scheduler': (['/usr/bin/nova-scheduler'],
                      'openstack-nova-scheduler.service')}
    assert dropin.unit_of(99, str(proc)) is None


def test_after_edit_notices_and_strict(tmp_path):
    nova = tmp_path / 'nova.conf'
    later = tmp_path / 'nova-compute.conf'
    later.write_text('[compute]\ncpu_dedicated_set = 4-7\n')
    argv = [NOVA, '--config-file', str(nova), '--config-file', str(later)]
    text = '[compute]\ncpu_dedicated_set = 2-3\ncpu_shared_set = 0\n'
    conf = {'compute': {'cpu_dedicated_set': '2-3', 'cpu_shared_set': '0'}}
    assert dropin.after_edit(str(nova), text, 'compute', argv, conf,
                             pid=42) == [
        f'nova-compute (pid 42) started as "{" ".join(argv)}" will not '
        f'read [compute] cpu_dedicated_set as written: 4-7 from {later} '
        f'wins in oslo.config\'s order']
    with pytest.raises(InputError) as caught:
        dropin.after_edit(str(nova), text, 'compute', argv, conf,
                          strict=True)
    assert caught.value.key == '[compute] cpu_dedicated_set'
    # read last, nothing to say
    assert dropin.after_edit(str(nova), text, 'compute', argv[:3],
                             conf) == []
