"""Writers that meet: heartbeats of in-flight instants (``heartbeat.py``), table locks
(``lock.py``), conflict resolution at commit time (``conflict.py``), the concurrency
options (``settings.py``), and what a writer does first: roll back failed writes, drop
unreadable plans, remove leftovers (``recovery.py``)."""
