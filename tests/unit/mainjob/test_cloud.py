"""kvmtune.mainjob.cloud: what the main job does in any cloud (the image
upload, the base flavor, the compute node list, to a stand-in openstacksdk
connection; the real cloud: tests/functional/test_mainjob.py), and an
operator's cloud as its target (--os-cloud: test_job.py and
test_compute.py run the job on one)."""

import hashlib
import types

import pytest

from kvmtune.errors import CloudError
from kvmtune import image as bench_image
from kvmtune import mainjob
from kvmtune.mainjob import cloud


class Images:
    def __init__(self, old):
        self.old = old
        self.deleted = []

    def images(self, name):
        return [i for i in self.old if i.name == name]

    def delete_image(self, image):
        self.deleted.append(image)


class Conn:
    """The openstacksdk calls the main job makes, recorded."""

    def __init__(self, old_images=(), flavors=(), hypervisors=None):
        self.image = Images(list(old_images))
        self.created = []
        self.flavors = set(flavors)
        made = self.created

        class Compute:
            def find_flavor(self, name):
                return name if name in flavors else None

            def create_flavor(self, **kwargs):
                made.append(('flavor', kwargs))

            def hypervisors(self):
                from openstack import exceptions as sdk_exc

                if hypervisors is None:
                    raise sdk_exc.ForbiddenException(
                        message='Policy does not allow it')
                if isinstance(hypervisors, Exception):
                    raise hypervisors
                return [types.SimpleNamespace(name=n) for n in hypervisors]
        self.compute = Compute()

    def create_image(self, name, **kwargs):
        self.created.append(('image', name, kwargs))


@pytest.fixture
def image_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(mainjob, 'IMAGE_DIR', str(tmp_path))
    return tmp_path


def test_the_qcow2_is_preferred_and_no_image_is_one_line(image_dir):
    with pytest.raises(CloudError, match='no benchmark image after the '
                                         'build'):
        cloud.image_file()
    (image_dir / 'kvmtune-bench.raw').write_bytes(b'raw')
    assert cloud.image_file() == (str(image_dir / 'kvmtune-bench.raw'),
                                  'raw')
    (image_dir / 'kvmtune-bench.qcow2').write_bytes(b'qcow2')
    assert cloud.image_file() == (str(image_dir / 'kvmtune-bench.qcow2'),
                                  'qcow2')


def test_an_unchanged_image_is_not_uploaded_again(image_dir):
    (image_dir / 'kvmtune-bench.qcow2').write_bytes(b'the image')
    same = types.SimpleNamespace(
        name=bench_image.GLANCE_NAME,
        hash_value=hashlib.sha512(b'the image').hexdigest())
    conn = Conn([same])
    assert cloud.upload_image(conn) == 'image kvmtune-bench unchanged'
    assert conn.created == [] and conn.image.deleted == []


def test_a_changed_image_replaces_the_old_one(image_dir):
    (image_dir / 'kvmtune-bench.qcow2').write_bytes(b'new image')
    old = types.SimpleNamespace(name=bench_image.GLANCE_NAME, hash_value='0')
    conn = Conn([old])
    assert cloud.upload_image(conn) == 'image kvmtune-bench uploaded'
    [(kind, name, kwargs)] = conn.created
    assert (kind, name) == ('image', bench_image.GLANCE_NAME)
    assert kwargs['disk_format'] == 'qcow2'
    assert kwargs['filename'] == str(image_dir / 'kvmtune-bench.qcow2')
    assert conn.image.deleted == [old]


def test_base_flavor_made_once():
    conn = Conn()
    assert cloud.base_flavor(conn) == 'flavor m1.bench created'
    assert conn.created == [('flavor', dict(mainjob.BASE_FLAVOR,
                                            is_public=True))]
    assert cloud.base_flavor(Conn(flavors=['m1.bench'])) == \
        'flavor m1.bench exists'


def test_compute_node_names_or_none_when_hidden():
    assert cloud.compute_node_names(Conn(hypervisors=['a', 'b'])) == {
        'a', 'b'}
    assert cloud.compute_node_names(Conn(hypervisors=None)) == set()


def test_a_cloud_that_fails_the_node_list_is_no_hidden_list():
    # A 503 left after the retries is an error: read as "hidden", the
    # job went on without tagging the compute, saying nothing.
    from openstack import exceptions as sdk_exc

    failed = sdk_exc.HttpException(message='Service Unavailable')
    failed.status_code = 503
    with pytest.raises(sdk_exc.HttpException):
        cloud.compute_node_names(Conn(hypervisors=failed))
