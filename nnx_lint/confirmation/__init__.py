"""Confirmation: back a diagnostic with a reproduction run under Tree Mode (:mod:`.oracle`), in
an isolated worker (:mod:`.sandbox`, which the gate's test runs use too).
"""
