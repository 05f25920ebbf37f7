"""The engine: rule discovery, one parse and one walk per file (:mod:`.walk`), the run over a
project (:mod:`.runner`), its configuration, caches and workers.
"""
