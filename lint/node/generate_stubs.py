"""Regenerate the PodResources gRPC stubs from `podresources/api.proto` (grpcio-tools).

    python -m numaguard.lint.node.generate_stubs [OUT_DIR]

Writes `api_pb2.py` and `api_pb2_grpc.py` into OUT_DIR (default: the `podresources` folder
beside this file). The proto is copied into a temporary tree at
`numaguard/lint/node/podresources/api.proto` first, so the generated gRPC module imports its
messages as `numaguard.lint.node.podresources.api_pb2` (protoc derives import paths from the
proto's path). `tests/test_podresources_stubs.py` regenerates into a temporary directory and
compares, so the committed modules cannot drift from the proto. grpcio-tools is a test/dev
dependency only; at run time the committed modules need grpcio and protobuf.
"""
from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent / "podresources"
PACKAGE_PATH = Path("numaguard/lint/node/podresources")
OUTPUTS = ("api_pb2.py", "api_pb2_grpc.py")


def generate(out_dir: Path) -> list[Path]:
    """Run protoc (grpc_tools) on api.proto; return the written files."""
    from grpc_tools import protoc

    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "src"
        (tree / PACKAGE_PATH).mkdir(parents=True)
        shutil.copy(HERE / "api.proto", tree / PACKAGE_PATH / "api.proto")
        gen = Path(tmp) / "gen"
        gen.mkdir()
        code = protoc.main(["grpc_tools.protoc", f"-I{tree}", f"--python_out={gen}", f"--grpc_python_out={gen}",
                            str(PACKAGE_PATH / "api.proto")])
        if code != 0:
            raise RuntimeError(f"protoc failed with exit code {code}")
        out_dir.mkdir(parents=True, exist_ok=True)
        written = []
        for name in OUTPUTS:
            target = out_dir / name
            shutil.copy(gen / PACKAGE_PATH / name, target)
            written.append(target)
        return written


def main(argv: list[str]) -> int:
    out = Path(argv[1]) if len(argv) > 1 else HERE
    for path in generate(out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
