"""A do-nothing program for measuring the protocol's overhead (docs/performance.md): it only
sleeps 1 ms of virtual time, again and again — one message in, one call and `idle` out."""
import durasim

c = durasim.connect()
try:
    while True:
        c.timer.sleep(1)
except durasim.Gone:
    pass
