"""`make cost`: what each documented configuration bills while idle and per 1,000 chat turns,
priced from the dated price table in prices.toml and each configuration's synthesized template."""
