"""Runs the Mooncake wheel's member service (mc_store_rest_server) with its REST server bound to
MOONCAKE_LOCAL_HOSTNAME instead of 0.0.0.0, so members sharing one host network each own their port.

Usage: python3 member_bootstrap.py [mc_store_rest_server arguments]
"""

import os
import sys

from aiohttp import web

from mooncake import mooncake_store_service


def _bind_to_local_hostname():
    address = os.environ.get("MOONCAKE_LOCAL_HOSTNAME", "").strip()
    if not address:
        return
    plain_site = web.TCPSite

    class LocalHostnameSite(plain_site):
        def __init__(self, runner, host=None, *args, **kwargs):
            if host == "0.0.0.0":
                host = address
            super().__init__(runner, host, *args, **kwargs)

    # The service builds its site as web.TCPSite(runner, "0.0.0.0", port) when the segment is mounted.
    web.TCPSite = LocalHostnameSite


def main():
    _bind_to_local_hostname()
    sys.argv[0] = "mc_store_rest_server"
    return mooncake_store_service.sync_main()


if __name__ == "__main__":
    sys.exit(main())
