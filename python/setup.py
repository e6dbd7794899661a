"""Builds the extension `syncopate._syncopate` with the project's own CMake build, so that
`pip install ./python` gives the same module the tests run: pyproject.toml holds the metadata.

The build directory is SYNCOPATE_BUILD_DIR, or build/ at the checkout's root (configured here
the way scripts/build.sh does when it is not yet). Only the extension's target is built."""

import glob
import os
import shutil
import subprocess

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


class CMakeExtension(Extension):
    def __init__(self, name: str):
        super().__init__(name, sources=[])


class BuildWithCMake(build_ext):
    def build_extension(self, ext: Extension) -> None:
        build_dir = os.path.abspath(os.environ.get("SYNCOPATE_BUILD_DIR", os.path.join(ROOT, "build")))
        if not os.path.exists(os.path.join(ROOT, "CMakeLists.txt")):
            raise RuntimeError(f"{ROOT} is not a Syncopate checkout: install from the checkout's python/ folder")
        if not os.path.exists(os.path.join(build_dir, "build.ninja")):
            subprocess.check_call(
                ["cmake", "-S", ROOT, "-B", build_dir, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=RelWithDebInfo"]
            )
        subprocess.check_call(["cmake", "--build", build_dir, "--target", "_syncopate"])
        built = glob.glob(os.path.join(build_dir, "python", "syncopate", "_syncopate*.so"))
        if len(built) != 1:
            raise RuntimeError(f"expected one _syncopate*.so in {build_dir}/python/syncopate, found {built}")
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(built[0], target)


setup(ext_modules=[CMakeExtension("syncopate._syncopate")], cmdclass={"build_ext": BuildWithCMake})
