"""Protocols the services are written against (history store, event log, ...).

One module per port; adapters implement them, services and tests depend only on these.
"""
