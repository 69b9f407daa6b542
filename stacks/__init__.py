"""CDK constructs, one per concern. No runtime logic: names and keys come from chatmemory.schema."""
