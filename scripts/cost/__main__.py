"""`python -m scripts.cost [--docs] [--only NAME ...]`: synthesize each documented configuration,
price it, print a table and, last, one JSON line; --docs also rewrites the cost section of the
docs' cost page (docs/cost.md) between its markers (--readme, its old name, does the same)."""

from __future__ import annotations

import argparse
import sys

from scripts.cost import prices as price_table
from scripts.cost.configurations import CONFIGURATIONS, SynthError, synthesize
from scripts.cost.estimate import Estimate, price
from scripts.cost.prices import MissingPrice
from scripts.cost.report import PAGE, ROOT, json_line, page_section, table, write_page
from scripts.cost.usage import Usage


def estimates(names: list[str] | None = None) -> list[Estimate]:
    """Every documented configuration that synthesizes, priced; the others reported on stderr."""
    prices = price_table.table()
    found = []
    for configuration in CONFIGURATIONS:
        if names and configuration.name not in names:
            continue
        try:
            template = synthesize(configuration)
            found.append(price(configuration.name, template, prices, Usage()))
        except (SynthError, MissingPrice) as error:
            print(f"skipped {configuration.name}: {error}", file=sys.stderr)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.cost", description=__doc__)
    parser.add_argument(
        "--docs",
        "--readme",
        dest="docs",
        action="store_true",
        help="rewrite the cost section of docs/cost.md",
    )
    parser.add_argument("--only", nargs="+", metavar="NAME", help="these configurations only")
    args = parser.parse_args(argv)
    if args.docs and args.only:
        parser.error("--docs needs every configuration")
    found = estimates(args.only)
    prices = price_table.table()
    print(table(found, prices))
    if args.docs:
        changed = write_page(page_section(found, prices, Usage()))
        where = PAGE.relative_to(ROOT)
        print(f"{where} cost section {'rewritten' if changed else 'unchanged'}", file=sys.stderr)
    print(json_line(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
