"""Per-key rate limit: GCRA (generic cell rate algorithm) in one atomic Redis script.

A limit of N per minute admits a burst of N, then one request every 60/N seconds; there is no
window edge at which 2N requests pass. Redis keeps one number per key, the theoretical arrival
time (TAT) of the next request, and the script reads Redis's own clock, so every web worker
agrees. Retry-After is exact: when the next request will be admitted.
"""

from functools import lru_cache

import redis
from django.conf import settings

PERIOD_SECONDS = 60.0

# KEYS[1]: the key's TAT. ARGV: period, limit. Returns {1, "0"} when admitted, else
# {0, seconds until a request would be}.
GCRA_SCRIPT = """
redis.replicate_commands()
local period = tonumber(ARGV[1])
local interval = period / tonumber(ARGV[2])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
local tat = tonumber(redis.call('GET', KEYS[1])) or now
if tat < now then tat = now end
local next_tat = tat + interval
local admit_at = next_tat - period
if admit_at > now then
    return {0, tostring(admit_at - now)}
end
redis.call('SET', KEYS[1], tostring(next_tat), 'PX', math.ceil((next_tat - now) * 1000))
return {1, '0'}
"""


@lru_cache(maxsize=1)
def _script():
    # A short wait: the check fails open, and a hung Redis must not hold every request up.
    client = redis.Redis.from_url(
        settings.REDIS_URL, socket_connect_timeout=0.3, socket_timeout=0.3
    )
    return client.register_script(GCRA_SCRIPT)


def rate_limit_check(*, subject: str, limit: int) -> float:
    """0 when a request of `subject` is admitted now, else the seconds to wait.

    Raises redis.RedisError when Redis cannot be reached; the caller decides to fail open.
    """
    admitted, wait = _script()(keys=[f"hindsight:rate:{subject}"], args=[PERIOD_SECONDS, limit])
    return 0.0 if int(admitted) else float(wait)
