"""_lathe_build.py — the in-tree PEP 517 build backend of the lathe Python package (pyproject.toml names it
with backend-path = ["."]). It needs nothing from PyPI, so `pip install ./python` works offline:

  build_wheel     builds liblathe.so with CMake (cmake -S <repo> -B <repo>/build-python, target
                  lathe_shared, Release) — or takes the library named by the config setting
                  `lathe-library` or the LATHE_LIBRARY environment variable — and writes a wheel
                  holding lathe/*.py plus lathe/liblathe.so, tagged py3-none-<platform> (the library is
                  loaded with ctypes, so no Python ABI is involved).
  build_editable  (pip install -e) a wheel with a .pth file pointing at this folder; the library is
                  then found in <repo>/build or through LATHE_LIBRARY (see lathe/_capi.py).
  build_sdist     not offered: the package builds from the repository (the C sources live above it).
The version comes from CMakeLists.txt (project(lathe VERSION x.y.z)), the one place it is written.
CMAKE_BUILD_PARALLEL_LEVEL sets the build's job count (default 2).
"""
import base64
import hashlib
import os
import re
import subprocess
import sys
import sysconfig
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
NAME = "lathe"
SUMMARY = "lathe: a deep-learning compiler for ONNX models (Python binding)"


def _version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        m = re.search(r"project\(\s*lathe\s+VERSION\s+([0-9.]+)", f.read())
    if not m:
        raise RuntimeError("CMakeLists.txt: no `project(lathe VERSION x.y.z)` line")
    return m.group(1)


def _tag(pure):
    if pure:
        return "py3-none-any"
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"py3-none-{plat}"


def _metadata(version):
    return (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {version}\nSummary: {SUMMARY}\n"
            "Requires-Python: >=3.8\nRequires-Dist: numpy\n")


def _library(config_settings):
    lib = (config_settings or {}).get("lathe-library") or os.environ.get("LATHE_LIBRARY")
    if lib:
        if not os.path.isfile(lib):
            raise RuntimeError(f"lathe-library / LATHE_LIBRARY: {lib}: no such file")
        return lib
    if not os.path.isfile(os.path.join(ROOT, "CMakeLists.txt")):
        raise RuntimeError(f"{ROOT} is not the lathe source tree: set LATHE_LIBRARY to a built liblathe.so")
    build = os.path.join(ROOT, "build-python")
    jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", "2")
    for cmd in (["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release"],
                ["cmake", "--build", build, "--target", "lathe_shared", "-j", jobs]):
        print("lathe build:", " ".join(cmd), file=sys.stderr)
        r = subprocess.run(cmd, stdout=sys.stderr, stderr=sys.stderr)
        if r.returncode != 0:
            raise RuntimeError(f"`{' '.join(cmd)}` failed (exit {r.returncode}); see its output above")
    lib = os.path.join(build, "liblathe.so")
    if not os.path.isfile(lib):
        raise RuntimeError(f"the CMake build did not produce {lib}")
    return lib


class _Wheel:
    def __init__(self, path, dist_info):
        self.zf = zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED)
        self.dist_info = dist_info
        self.records = []

    def add(self, arcname, data, executable=False):
        zi = zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0))  # reproducible
        zi.compress_type = zipfile.ZIP_DEFLATED
        zi.external_attr = (0o755 if executable else 0o644) << 16
        self.zf.writestr(zi, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        self.records.append(f"{arcname},sha256={digest},{len(data)}")

    def close(self):
        record = f"{self.dist_info}/RECORD"
        self.records.append(f"{record},,")
        zi = zipfile.ZipInfo(record, date_time=(2020, 1, 1, 0, 0, 0))
        self.zf.writestr(zi, "\n".join(self.records) + "\n")
        self.zf.close()


def _write_wheel(wheel_directory, pure, files):
    version = _version()
    tag = _tag(pure)
    dist_info = f"{NAME}-{version}.dist-info"
    fname = f"{NAME}-{version}-{tag}.whl"
    w = _Wheel(os.path.join(wheel_directory, fname), dist_info)
    for arcname, data, exe in files:
        w.add(arcname, data, exe)
    w.add(f"{dist_info}/METADATA", _metadata(version).encode())
    w.add(f"{dist_info}/WHEEL", (f"Wheel-Version: 1.0\nGenerator: lathe-build\nRoot-Is-Purelib: "
                                 f"{'true' if pure else 'false'}\nTag: {tag}\n").encode())
    w.add(f"{dist_info}/top_level.txt", f"{NAME}\n".encode())
    w.close()
    return fname


def _package_files():
    pkg = os.path.join(HERE, NAME)
    out = []
    for f in sorted(os.listdir(pkg)):
        if f.endswith(".py"):
            with open(os.path.join(pkg, f), "rb") as fh:
                out.append((f"{NAME}/{f}", fh.read(), False))
    return out


# ---- PEP 517 / 660 hooks ----

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    dist_info = f"{NAME}-{_version()}.dist-info"
    os.makedirs(os.path.join(metadata_directory, dist_info), exist_ok=True)
    with open(os.path.join(metadata_directory, dist_info, "METADATA"), "w") as f:
        f.write(_metadata(_version()))
    return dist_info


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    lib = _library(config_settings)
    with open(lib, "rb") as f:
        so = f.read()
    return _write_wheel(wheel_directory, False, _package_files() + [(f"{NAME}/liblathe.so", so, True)])


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    pth = (HERE + "\n").encode()
    return _write_wheel(wheel_directory, True, [(f"_{NAME}_editable.pth", pth, False)])


if __name__ == "__main__":  # python3 python/_lathe_build.py OUTDIR: build a wheel by hand
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build-python", "dist")
    os.makedirs(out, exist_ok=True)
    print(os.path.join(out, build_wheel(out)))
