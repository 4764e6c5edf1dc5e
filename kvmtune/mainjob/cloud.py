"""The cloud side of the main job: the local test cloud (up, its `cloud
env`, whether it emulates), the cloud's compute node names, the benchmark
image upload and the base flavor the tuned flavors start from."""
import os
import subprocess

from kvmtune import mainjob
from kvmtune.errors import CloudError
from kvmtune.mainjob import steps


def local_cloud():
    """Bring up the test cloud (libvirt compute) unless it already runs."""
    status = subprocess.run([mainjob.CLOUD_CTL, 'status'],
                            capture_output=True, text=True)
    if status.returncode == 0 and 'libvirt compute' in status.stdout:
        steps.say('test cloud already up with libvirt compute: using it')
    elif status.returncode == 0:
        raise CloudError('a test cloud without libvirt compute is up',
                         source=mainjob.CLOUD_DIR,
                         fix='guests need libvirt: when nobody uses it, '
                             f'{mainjob.CLOUD_CTL} down, then run again')
    else:
        steps.run([mainjob.CLOUD_CTL, 'install'])
        steps.run([mainjob.CLOUD_CTL, 'up', '--compute', 'libvirt'])
    os.environ['OS_CLIENT_CONFIG_FILE'] = os.path.join(mainjob.CLOUD_DIR,
                                                       'clouds.yaml')
    return 'kvmtune-admin'


def cloud_env():
    """The local test cloud's `cloud env` as a dict."""
    out = steps.run([mainjob.CLOUD_CTL, 'env'], capture=True)
    return dict(line[len('export '):].split('=', 1)
                for line in out.splitlines() if line.startswith('export '))


def local_cloud_emulated():
    """True when the local test cloud runs guests under QEMU TCG."""
    import configparser

    conf = configparser.ConfigParser(strict=False, interpolation=None)
    # nova-compute reads nova.conf, then nova-compute.conf (later wins)
    conf.read([os.path.join(mainjob.CLOUD_DIR, 'etc', 'nova', name)
               for name in ('nova.conf', 'nova-compute.conf')])
    return conf.get('libvirt', 'virt_type', fallback='kvm') == 'qemu'


def compute_node_names(conn):
    """Hypervisor hostnames of the cloud (admin); empty when hidden."""
    try:
        return {h.name for h in conn.compute.hypervisors()}
    except Exception as exc:  # a non-admin account may not list them
        steps.say(f'compute nodes: not listed ({type(exc).__name__}): '
                  'tagging needs --compute-facts')
        return set()


def image_file():
    for name, fmt in (('kvmtune-bench.qcow2', 'qcow2'),
                      ('kvmtune-bench.raw', 'raw')):
        path = os.path.join(mainjob.IMAGE_DIR, name)
        if os.path.exists(path):
            return path, fmt
    raise CloudError('no benchmark image after the build',
                     source=mainjob.IMAGE_DIR,
                     fix='run kvmtune image build and read its error')


def upload_image(conn):
    """Upload the image once; a changed file replaces the old one."""
    import hashlib

    path, fmt = image_file()
    sha = hashlib.sha512()
    with open(path, 'rb') as f:
        for block in iter(lambda: f.read(1 << 20), b''):
            sha.update(block)
    old = [i for i in conn.image.images(name=mainjob.IMAGE_NAME)]
    if any(i.hash_value == sha.hexdigest() for i in old):
        steps.say(f'image {mainjob.IMAGE_NAME}: unchanged')
        return
    conn.create_image(mainjob.IMAGE_NAME, filename=path, disk_format=fmt,
                      container_format='bare', visibility='public',
                      wait=True)
    for i in old:
        conn.image.delete_image(i)
    steps.say(f'image {mainjob.IMAGE_NAME}: uploaded {path}')


def base_flavor(conn):
    name = mainjob.BASE_FLAVOR['name']
    if conn.compute.find_flavor(name):
        steps.say(f'flavor {name}: exists')
        return
    conn.compute.create_flavor(is_public=True, **mainjob.BASE_FLAVOR)
    steps.say(f'flavor {name}: created')
