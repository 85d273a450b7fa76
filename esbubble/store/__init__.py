"""The Elasticsearch side: client, embedded engine, templates, indexing, retrieval and audit.

Every function here takes a ``Store`` (see ``connection.open_store``); no
module holds a client of its own.
"""
