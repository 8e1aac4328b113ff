"""The CI workflow ``git st ci-template github`` prints, with gitst installed from where the
user pinned it (docs/hooks.md, "The CI template").

There is no gitst release on a package index, and a bare ``pip install gitst`` would install
whatever anyone publishes under that name, so the template never names one. The source is,
first found: ``--install SPEC``; the setting ``ci_install`` (``ST_CI_INSTALL``, git config
``st.ci.install``); the source the running gitst was installed from, when CI can reach it
(a git URL pinned to the commit pip recorded, or a remote archive with its hash). Otherwise
nothing is printed: exit 2, saying how to name one.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
from importlib.resources import files

from gitst.core.errors import UsageError
from gitst.settings import SETTINGS, optional_str_setting

TEMPLATES = {"github": "templates/github-sync.yml"}
PLACEHOLDER = "@GITST_INSTALL@"
EXAMPLE = "git+https://github.com/OWNER/gitst@<commit>"


def render(host: str, spec: str) -> str:
    """The workflow for ``host`` installing gitst from ``spec`` (already checked)."""
    text = files("gitst.plan").joinpath(TEMPLATES[host]).read_text(encoding="utf-8")
    # a YAML double-quoted scalar (JSON's escapes are YAML's); the shell reads it from $GITST_INSTALL
    return text.replace(PLACEHOLDER, json.dumps(spec))


def install_spec(option: str | None, cwd: str | os.PathLike[str] | None = None) -> tuple[str, str]:
    """(the pip requirement to install gitst from in CI, where it came from)."""
    if option is not None:
        return check_spec(option, "--install"), "--install"
    configured = optional_str_setting("ci_install", cwd)
    if configured:
        setting = SETTINGS["ci_install"]
        source = setting.env if os.environ.get(setting.env or "", "").strip() else f"git config {setting.git}"
        return check_spec(configured, source or "st.ci.install"), source or "st.ci.install"
    running = running_install_spec()
    if running:
        return running, "the running gitst's install source"
    raise UsageError(
        "ci-template needs to know where CI should install gitst from: there is no gitst release on a "
        "package index, and this gitst was not installed from a URL CI can reach",
        fix=f"git st ci-template github --install '{EXAMPLE}' (a commit or tag you trust), "
        f"or once for this repository: git config st.ci.install '{EXAMPLE}'",
    )


def check_spec(spec: str, source: str) -> str:
    """``spec`` when it can go into the workflow and pins something; else exit 2."""
    spec = spec.strip()
    if not spec or any(ord(ch) < 32 or ord(ch) == 127 for ch in spec) or "${{" in spec:
        raise UsageError(
            f"{source} {spec!r} cannot go into a workflow (control characters, or a `${{{{` expression)",
            fix=f"pass one pip requirement, e.g. --install '{EXAMPLE}'",
        )
    if spec.startswith(("/", ".", "~", "file:", "git+file:")):
        raise UsageError(
            f"{source} {spec!r} is a path on this machine: the CI runner cannot see it",
            fix=f"pass a URL the runner can reach, e.g. --install '{EXAMPLE}'",
        )
    if "://" not in spec and "@" not in spec and "==" not in spec:
        raise UsageError(
            f"{source} {spec!r} names a package, not a pinned source: a package index would install "
            "whatever anyone publishes under that name",
            fix=f"pass a URL pinned to a commit, e.g. --install '{EXAMPLE}' (or NAME==VERSION from an index you trust)",
        )
    return spec


def running_install_spec() -> str | None:
    """The pip requirement that reinstalls the running gitst, when pip recorded a source CI
    can reach (PEP 610 ``direct_url.json``): ``git+URL@COMMIT``, or ``URL#sha256=…``."""
    try:
        raw = importlib.metadata.distribution("gitst").read_text("direct_url.json")
    except (importlib.metadata.PackageNotFoundError, OSError):
        return None
    if not raw:
        return None
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    url = data.get("url") if isinstance(data, dict) else None
    if not isinstance(url, str) or not url.startswith(("https://", "http://", "ssh://", "git@")):
        return None  # file:// (a local checkout or wheel) and anything odd: CI cannot reach it
    vcs = data.get("vcs_info")
    if isinstance(vcs, dict):
        commit = vcs.get("commit_id")
        if vcs.get("vcs") != "git" or not isinstance(commit, str) or not commit:
            return None
        spec = f"git+{url}@{commit}"
    else:
        archive = data.get("archive_info")
        hashes = archive.get("hashes") if isinstance(archive, dict) else None
        if not isinstance(hashes, dict) or "sha256" not in hashes:
            return None
        spec = f"{url}#sha256={hashes['sha256']}"
    try:
        return check_spec(spec, "the running gitst's install source")
    except UsageError:
        return None
