"""Make Ray's wheel small enough for the trip to the GPU machine (issue 21, docs/ray.md).

Ray 2.60's cp312 wheel is 79 MB; what `--executor ray` uses is about a third of it. This rewrites
the wheel that `../shared/tools/device-wheels.sh 'ray==2.60.0'` put in .whl/ without the Java
workers (ray/jars/, 30 MB) and the dashboard's web client (ray/dashboard/client/build/), with
_raylet.so's symbols stripped, as an uncompressed zip inside an .xz file (binaries compress much
better under xz than deflate): about 27 MB. The original wheel is removed from .whl/.

    python3 tools/ray_wheel_for_device.py            # here, after device-wheels.sh (takes minutes)
    python3 tools/ray_wheel_for_device.py --unpack   # on the GPU machine, before tools/device_setup.sh
"""

from __future__ import annotations

import argparse
import lzma
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

WHEELS = Path(".whl")
DROP = ("ray/jars/", "ray/dashboard/client/build/")
STRIP = ("ray/_raylet.so",)


def pack(wheel: Path) -> Path:
    target = wheel.with_name(wheel.name + ".xz")
    with tempfile.TemporaryDirectory() as tmp, zipfile.ZipFile(wheel) as source:
        trimmed = Path(tmp) / wheel.name
        with zipfile.ZipFile(trimmed, "w", zipfile.ZIP_STORED) as out:
            for info in source.infolist():
                if info.filename.startswith(DROP):
                    continue
                data = source.read(info)
                if info.filename in STRIP and shutil.which("strip"):
                    binary = Path(tmp) / "binary"
                    binary.write_bytes(data)
                    subprocess.run(["strip", "--strip-unneeded", str(binary)], check=True)
                    data = binary.read_bytes()
                if info.filename.endswith(".dist-info/RECORD"):   # pip installs what RECORD lists
                    kept = [line for line in data.decode().splitlines() if not line.startswith(DROP)]
                    data = ("\n".join(kept) + "\n").encode()
                entry = zipfile.ZipInfo(info.filename, info.date_time)
                entry.external_attr = info.external_attr
                out.writestr(entry, data)
        with open(trimmed, "rb") as plain, lzma.open(target, "wb", preset=6) as packed:
            shutil.copyfileobj(plain, packed)
    wheel.unlink()
    return target


def unpack(packed: Path) -> Path:
    wheel = packed.with_suffix("")
    with lzma.open(packed) as source, open(wheel, "wb") as out:
        shutil.copyfileobj(source, out)
    packed.unlink()
    return wheel


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--unpack", action="store_true", help="on the GPU machine: .whl/ray-*.whl.xz -> .whl")
    args = parser.parse_args()
    found = sorted(WHEELS.glob("ray-*.whl.xz" if args.unpack else "ray-*.whl"))
    if not found:
        print(f"no {'ray-*.whl.xz' if args.unpack else 'ray-*.whl'} in {WHEELS}/ (run from the repository root)",
              file=sys.stderr)
        return 2
    for path in found:
        made = unpack(path) if args.unpack else pack(path)
        print(f"{made} ({made.stat().st_size / 2**20:.1f} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
