"""Adapters: the ports implemented on AWS services, HTTP model servers and offline stand-ins."""
