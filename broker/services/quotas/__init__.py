"""Client quotas: the configured rates and the windows they are measured in."""
