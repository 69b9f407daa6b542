"""Pure services: they take ports as arguments and return results; no boto3, no os."""
