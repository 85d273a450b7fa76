"""The Elasticsearch side: client, embedded engine, templates, indexing, retrieval and audit.

Every function here takes a ``Store`` (see ``connection.open_store``); no
module holds a client of its own. This package is the only one that imports
the Elasticsearch client: its failures become esbubble errors in ``errors``
and every ``search_after`` read goes through ``paging``.
"""
