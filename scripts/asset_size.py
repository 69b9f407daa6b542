"""Size of the Lambda asset that `make synth` bundled (`python -m scripts.asset_size`).

Reads cdk.out/*.assets.json for the directory assets of the current synth (stale asset.*
folders of earlier synths are ignored), zips each in memory as CDK does, and reports the
unzipped and zipped bytes and the biggest top-level entries.
"""

from __future__ import annotations

import io
import json
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class AssetSize:
    path: Path
    unzipped: int
    zipped: int
    largest: list[tuple[str, int]]


def measure(directory: Path) -> AssetSize:
    buffer = io.BytesIO()
    unzipped = 0
    per_entry: dict[str, int] = {}
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for file in sorted(p for p in directory.rglob("*") if p.is_file()):
            relative = file.relative_to(directory)
            size = file.stat().st_size
            unzipped += size
            per_entry[relative.parts[0]] = per_entry.get(relative.parts[0], 0) + size
            archive.write(file, relative.as_posix())
    largest = sorted(per_entry.items(), key=lambda item: -item[1])[:6]
    return AssetSize(directory, unzipped, len(buffer.getvalue()), largest)


def synthesized_assets(cdk_out: Path = ROOT / "cdk.out") -> list[Path]:
    """Directory assets named by the manifests of the last synth."""
    found: list[Path] = []
    for manifest in sorted(cdk_out.glob("*.assets.json")):
        for entry in json.loads(manifest.read_text())["files"].values():
            source = entry["source"]
            if source.get("packaging") == "zip" and "path" in source:
                path = cdk_out / source["path"]
                if path.is_dir() and path not in found:
                    found.append(path)
    return found


def main() -> int:
    assets = synthesized_assets()
    if not assets:
        print("no bundled asset in cdk.out/: run `make synth` first", file=sys.stderr)
        return 1
    for asset in assets:
        size = measure(asset)
        print(f"{asset.name}: unzipped {size.unzipped:,} bytes, zipped {size.zipped:,} bytes")
        for name, bytes_ in size.largest:
            print(f"  {name:<40} {bytes_:>12,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
