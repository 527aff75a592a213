"""The document step of the indexing stage: official publications of watched targets.

In the WARCs of the jobs that harvested watched selection records
(:mod:`harvest.selection.watched`), documents — PDF, Word, ODF, EPUB by MIME type and
signature, within the target's document URL scheme when it has one — are stored once per
payload digest with their captures (:mod:`.store`), their landing page (the target's HTML page
linking to them) and their metadata (:mod:`.metadata`); :mod:`.scan` is the per-file module the
``indexing_chain`` DAG maps over.
"""

# a document's states, in their order (new -> available -> catalogued, or rejected); here, not in
# .store, so that the command line lists them without importing the store (and SQLAlchemy)
STATES = ("new", "available", "catalogued", "rejected")
