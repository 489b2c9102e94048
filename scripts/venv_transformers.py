"""scripts/venv_transformers.py: the virtual environment the fixture and parity scripts run in.

Each script that needs PyPI's torch / transformers calls ensure_venv() before importing them:
if the running python lacks one of `modules`, the script is run again (os.execv) by the
python of a virtual environment, made the first time with every package those scripts use
(a few minutes). The environment is /tmp/venv-gpt2 unless the command line says
`--venv DIR`. A build of attn never needs any of this.
"""
import os
import subprocess
import sys

PACKAGES = ["torch", "transformers", "tokenizers", "safetensors", "numpy", "regex"]


def ensure_venv(modules=("torch", "transformers")):
    try:
        for m in modules:
            __import__(m)
        return
    except ImportError:
        pass
    venv = "/tmp/venv-gpt2"
    if "--venv" in sys.argv:
        venv = sys.argv[sys.argv.index("--venv") + 1]
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(py):
        subprocess.check_call([sys.executable, "-m", "venv", venv])
        subprocess.check_call([py, "-m", "pip", "install", "--progress-bar", "off"] + PACKAGES)
    os.execv(py, [py] + sys.argv)
