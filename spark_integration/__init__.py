"""Apache Spark Structured Streaming against a Kafka-compatible broker (Odradek or Apache Kafka).

A website-activity pipeline built only from stock parts (Spark's own Kafka connector, a stock
producer), so that running it proves a broker serves real Spark workloads. See README.md.
"""
