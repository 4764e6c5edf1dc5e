"""The smallest network endpoint Nova needs when servers have no ports.

Nova calls Neutron even for servers booted with ``networks='none'``
(microversion >= 2.37): every server GET lists the server's ports to report
security groups, and a build or delete lists ports by device id. This
server answers those reads on 127.0.0.1 with empty collections, so the test
cloud works without a real neutron-server. It is NOT Neutron: it creates
nothing, checks no token, and answers writes with 501 so that anything
needing real networking fails loudly. Each request is logged.

Answered (GET, with or without ``.json``): ``/``, ``/v2.0``,
``/v2.0/<collection>`` for the collections below -> ``{"<name>": []}``,
``/v2.0/extensions`` -> ``{"extensions": []}``; a single resource -> 404.
"""

import argparse
from http import server
import json
import sys
from typing import Any

COLLECTIONS = {
    'ports': 'ports', 'networks': 'networks', 'subnets': 'subnets',
    'security-groups': 'security_groups', 'floatingips': 'floatingips',
    'extensions': 'extensions', 'trunks': 'trunks', 'qos/policies':
    'policies', 'segments': 'segments', 'routers': 'routers',
}
VERSION = {'id': 'v2.0', 'status': 'CURRENT',
           'links': [{'rel': 'self', 'href': 'http://127.0.0.1:9696/v2.0/'}]}


class Handler(server.BaseHTTPRequestHandler):
    server_version = 'kvmtune-netstub/1'

    def _reply(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        path = self.path.split('?', 1)[0].rstrip('/')
        if path.endswith('.json'):
            path = path[:-len('.json')]
        if path in ('', '/v2.0'):
            return self._reply(200, {'versions': [VERSION]}
                               if not path else {'resources': []})
        if path.startswith('/v2.0/'):
            name = path[len('/v2.0/'):]
            if name in COLLECTIONS:
                return self._reply(200, {COLLECTIONS[name]: []})
        return self._reply(404, {'NeutronError': {
            'type': 'NotFound', 'message': 'kvmtune netstub: %s' % path,
            'detail': ''}})

    def _unsupported(self) -> None:
        self._reply(501, {'NeutronError': {
            'type': 'NotImplemented', 'detail': '',
            'message': 'kvmtune netstub serves reads for port-less '
                       'servers only'}})

    do_POST = do_PUT = do_DELETE = do_PATCH = _unsupported

    def log_message(self, fmt: str, *args: Any) -> None:
        sys.stdout.write('%s %s\n' % (self.log_date_time_string(),
                                      fmt % args))
        sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--port', type=int, default=9696)
    args = parser.parse_args()
    server.ThreadingHTTPServer(('127.0.0.1', args.port),
                               Handler).serve_forever()


if __name__ == '__main__':
    main()
