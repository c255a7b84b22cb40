"""Stopping and restarting the suite's embedded Redis, for broker-outage tests."""

import redis as redis_lib
from django.conf import settings

from hindsight_site import embedded
from tests.support.waiting import wait_until


class RedisControl:
    """Stops and restarts the suite's embedded Redis (same socket), for broker-outage tests."""

    def __init__(self) -> None:
        self.directory = embedded.data_dir()
        self.socket = embedded.redis_socket(self.directory)
        assert settings.REDIS_URL == embedded.redis_url_for_socket(self.socket)

    def stop(self) -> None:
        try:
            redis_lib.from_url(settings.REDIS_URL).shutdown(nosave=True)
        except redis_lib.ConnectionError:
            pass  # shutdown closes the connection under us
        wait_until(lambda: not embedded.redis_answers(self.socket))

    def start(self) -> None:
        if embedded.redis_answers(self.socket):
            return
        server = embedded.RedisServer(self.directory)
        server.start()
        import atexit

        atexit.register(server.stop)
