"""Declarations of the records Kafka keeps in its internal topics, generated from Kafka's specs.

One module per topic (``consumer_offsets``); :mod:`wire.stored_records` encodes and decodes them.
"""
