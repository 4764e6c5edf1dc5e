"""``kvmtune host capture`` into places it cannot write."""

import multiprocessing
import os
import shutil
import tempfile

import pytest

from kvmtune import cli


def _capture_as_nobody(target, answers):
    import contextlib
    import io
    if os.geteuid() == 0:
        os.setgid(65534)
        os.setuid(65534)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), \
            contextlib.redirect_stdout(io.StringIO()):
        answers.put((cli.main(['host', 'capture', target]), err.getvalue()))


def _run(target):
    context = multiprocessing.get_context('fork')
    answers = context.Queue()
    child = context.Process(target=_capture_as_nobody,
                            args=(target, answers))
    child.start()
    child.join(300)
    return answers.get(timeout=5)


@pytest.fixture
def public_dir(request):
    top = tempfile.mkdtemp(prefix='kvmtune-capture-')
    request.addfinalizer(lambda: shutil.rmtree(top))
    os.chmod(top, 0o755)
    return top


def test_capture_into_a_read_only_directory_is_one_line(public_dir):
    locked = os.path.join(public_dir, 'locked')
    os.mkdir(locked, 0o555)
    code, err = _run(os.path.join(locked, 'compute-1'))
    assert code == 2, err
    assert err.count('\n') == 1 and 'Traceback' not in err
    assert 'compute-1' in err and 'nothing was written' in err
    assert os.listdir(locked) == []


def test_capture_into_an_unreadable_directory_is_one_line(public_dir):
    hidden = os.path.join(public_dir, 'hidden')
    os.mkdir(hidden, 0o000)
    code, err = _run(os.path.join(hidden, 'compute-1'))
    assert code == 2, err
    assert err.count('\n') == 1 and 'Traceback' not in err


def test_capture_into_proc_is_one_line(capsys):
    assert cli.main(['host', 'capture', '/proc/kvmtune-capture']) == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and '/proc/kvmtune-capture' in err


@pytest.mark.parametrize('target', ['', '  '])
def test_an_empty_directory_argument_is_named(target, capsys, tmp_path,
                                              monkeypatch):
    # Before: the error named a temporary directory kvmtune had
    # tried to make in the parent of the current directory.
    monkeypatch.chdir(tmp_path)
    assert cli.main(['host', 'capture', target]) == 2
    err = capsys.readouterr().err
    assert err == ("kvmtune: error: '': DIR: an empty path (fix: give a new "
                   "directory)\n")
    assert os.listdir(tmp_path) == []


# -- a capture stands for its host: the boot side and nova.conf ------------

NOVA_CONF = """\
[DEFAULT]
transport_url = rabbit://nova:RabbitPass1@ctl:5672/
my_ip = 10.0.0.5
# connection = mysql+pymysql://nova:OldDbPass2@db/nova
[database]
connection = mysql+pymysql://nova:DbPass3@db/nova
[keystone_authtoken]
password = KsPass4
username = nova
[compute]
cpu_shared_set = 0
[libvirt]
virt_type = kvm
"""
PASSWORDS = ('RabbitPass1', 'OldDbPass2', 'DbPass3', 'KsPass4')


def _host_tree(tmp_path, distro):
    """A real capture with ``distro``'s boot files laid over it, a boot
    apply of pinned-hugepages-ept made on it before (its grub file or
    block and modprobe.d file), tuned's files and a nova.conf."""
    from kvmtune.boot import apply as boot_apply
    from tests import hosttrees

    root = hosttrees.make(str(tmp_path / 'host'), distro)
    boot_apply.apply('pinned-hugepages-ept', root)
    os.makedirs(os.path.join(root, 'etc', 'tuned'))
    with open(os.path.join(root, 'etc', 'tuned', 'active_profile'),
              'w') as f:
        f.write('cpu-partitioning\n')
    with open(os.path.join(root, 'etc', 'tuned',
                           'cpu-partitioning-variables.conf'), 'w') as f:
        f.write('isolated_cores=2-19\n')
    os.makedirs(os.path.join(root, 'etc', 'nova'))
    with open(os.path.join(root, 'etc', 'nova', 'nova.conf'), 'w') as f:
        f.write(NOVA_CONF)
    return root


def _answers(root, capsys):
    """boot apply --dry-run, verify's host layer, rollout --check: JSON
    documents, the tree's own path taken out."""
    import json

    from kvmtune.rollout import check
    from kvmtune.rollout import inventory

    out = []
    for argv in (['boot', 'apply', '--root', root, '--profile',
                  'cpu-pinning', '--dry-run', '-f', 'json'],
                 ['verify', '--root', root, '--layer', 'host', '--profile',
                  'pinned-hugepages-ept', '-f', 'json']):
        code = cli.main(argv)
        text = capsys.readouterr().out
        out.append((code, json.loads(text.replace(root, 'ROOT'))))
    host = inventory.Host('c1', {'kvmtune_root': root,
                                 'ansible_connection': 'local'})
    for profile in ('cpu-pinning', 'pinned-hugepages-ept'):
        found = check.plan([host], profile, path='inv').to_dict()
        out.append(json.loads(json.dumps(found).replace(root, 'ROOT')))
    return out


@pytest.mark.parametrize('distro', ['debian-12', 'rhel-9-bls', 'rhel-7'])
def test_a_capture_answers_as_its_host(distro, tmp_path, capsys):
    root = _host_tree(tmp_path, distro)
    target = str(tmp_path / 'capture')
    assert cli.main(['host', 'capture', '--root', root, target]) == 0
    err = capsys.readouterr().err
    assert err.startswith(f'{target}: ') and 'usable: unknown' in err
    on_host = _answers(root, capsys)
    on_capture = _answers(target, capsys)
    assert on_capture == on_host
    # what the answers stand on: the loader found, the nova.conf read
    assert on_capture[0][1]['loader'] in ('grub-debian', 'grubby-bls',
                                          'grub-rhel')
    pinned = on_capture[2]['hosts'][0]
    assert not any('no nova.conf' in note for note in pinned['notes'])
    assert any(change['kind'] == 'nova.conf' for change in
               pinned['changes'])
    # the capture holds no secret of the host's
    with open(os.path.join(target, 'etc', 'nova', 'nova.conf')) as f:
        conf = f.read()
    assert 'my_ip = 10.0.0.5' in conf and 'cpu_shared_set = 0' in conf
    for dirpath, _, names in os.walk(target):
        for name in names:
            with open(os.path.join(dirpath, name), 'rb') as f:
                data = f.read()
            assert not any(p.encode() in data for p in PASSWORDS), name


def test_without_the_boot_side_the_capture_would_not_stand(tmp_path,
                                                           capsys):
    """The check above can fail: a tree of /proc and /sys only (what a
    capture held before) has no boot loader kvmtune knows."""
    from tests import hosttrees

    root = _host_tree(tmp_path, 'debian-12')
    bare = hosttrees.make(str(tmp_path / 'bare'), 'debian-12')
    for gone in ('etc', 'boot'):
        shutil.rmtree(os.path.join(bare, gone), ignore_errors=True)
    assert cli.main(['boot', 'apply', '--root', bare, '--profile',
                     'cpu-pinning', '--dry-run']) == 2
    assert 'unknown bootloader' in capsys.readouterr().err
    assert cli.main(['boot', 'apply', '--root', root, '--profile',
                     'cpu-pinning', '--dry-run']) == 0


def test_a_root_that_is_no_directory_is_one_line(tmp_path, capsys):
    missing = str(tmp_path / 'nowhere')
    assert cli.main(['host', 'capture', '--root', missing,
                     str(tmp_path / 'c')]) == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and '--root' in err and missing in err
    assert not os.path.exists(tmp_path / 'c')
