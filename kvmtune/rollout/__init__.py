"""Moving a tuning profile across a running cloud, batch by batch."""
