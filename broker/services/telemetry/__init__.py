"""Client telemetry (KIP-714) and what clients say they are (KIP-511)."""
