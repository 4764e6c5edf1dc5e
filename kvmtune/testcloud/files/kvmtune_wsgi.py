"""WSGI entry for the test cloud's API services under gunicorn.

The service wheels ship no WSGI launcher. Their ``wsgi`` modules build the
application at import time and oslo.config parses ``sys.argv`` then, which
under gunicorn holds gunicorn's own arguments: the import fails and workers
restart forever. So argv is reset before the import. The service and its
configuration directory come from the environment that ``cloud up`` sets:

KVMTUNE_WSGI_TARGET   ``module:attribute``; ``module:callable()`` calls it
OS_*_CONFIG_DIR/FILES  read by the service itself
"""

import importlib
import os
import sys

_target = os.environ['KVMTUNE_WSGI_TARGET']
sys.argv = [os.environ.get('KVMTUNE_WSGI_PROG', _target.split('.')[0])]

_module, _, _attribute = _target.partition(':')
_call = _attribute.endswith('()')
_obj = getattr(importlib.import_module(_module), _attribute.rstrip('()'))
application = _obj() if _call else _obj
