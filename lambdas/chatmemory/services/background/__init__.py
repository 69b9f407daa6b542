"""Off the request path: consolidation, maintenance, purges (forget) and ingestion."""
