#!/usr/bin/python3
"""The README's commands, run as a user pastes them: every code block of README.md (fenced or
indented) that is a shell block runs, in order, in a bash session of its own environment.

- The environment is a copy of this one without what the test harness or an earlier build set
  (GST_PLUGIN_PATH*, GST_PLUGIN_SYSTEM_PATH*, GST_REGISTRY*, GST_VAE_MODEL_PATH, VAE_*), with a
  fresh HOME and XDG_CACHE_HOME, so that GStreamer builds a registry of its own and finds the
  plugin only as the README tells the user to. What a block exports carries on to the blocks after
  it, as in one shell; each block starts in the repository root, with `bash -e -o pipefail`.
- The repository root is a temporary copy made of symlinks: every top-level entry of the source
  tree links to the real one, except `build`, which links to this test's build directory (the
  README says `build/`), and `out/`, a fresh empty folder as bootstrap.sh leaves it; `../shared`
  beside it links to the shared material. So what the blocks write (out/..., files in the root)
  lands in the temporary folder, which is removed at the end.
- Skipped: the setup blocks, by name (`./bootstrap.sh`, `meson test`, `meson setup`,
  `meson install`, `ninja`: they are what builds and runs this test), and the blocks that need a
  file the user downloads: a line `# needs your model file` inside the block, or a line
  `<!-- needs: user model -->` just before it. Blocks of another language (```text...) are not
  commands.
- Fails: a block that exits non-zero, or prints an error of GStreamer's tools even with status 0
  (gst-play-1.0 and gst-discoverer-1.0 exit 0 after "ERROR ..." or "Missing plugins"), or runs
  past its limit (BLOCK_LIMIT seconds, VAE_README_BLOCK_LIMIT overrides it); a path into the
  shipped files (`../shared/...`, `tests/...`, `pipelines/...`, `docs/...`) named in any block,
  skipped ones included, that does not exist; a relative link of README.md or docs/*.md to a file
  or heading that does not exist; README.md whose first command lines are not the two of
  bootstrap (.ci/run and the fresh-machine check rely on them).

    tests/test-readme.py [BUILD_DIR]          (default: build/ of the source tree)

Only the Python standard library."""

import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time

BLOCK_LIMIT = float(os.environ.get("VAE_README_BLOCK_LIMIT", 150))  # seconds per block
FIRST_LINES = ["./bootstrap.sh", "meson test -C build --print-errorlogs"]
SETUP = re.compile(r"^(sudo\s+)?(\./bootstrap\.sh|meson\s+(test|setup|install)|ninja)(\s|$)")
NEEDS_MODEL_LINE = re.compile(r"^\s*#\s*needs your model file", re.M)
NEEDS_MODEL_COMMENT = re.compile(r"<!--\s*needs:\s*user model\s*-->")
SHELL_LANGS = {"", "sh", "bash", "shell", "console"}
# what GStreamer's tools print on a failure after which some of them still exit 0
TOOL_ERROR = re.compile(r"^(ERROR[: ]|WARNING: erroneous pipeline)|Missing plugins|An error was encountered while "
                        r"discovering|^Traceback \(most recent call last\)", re.M)
SHIPPED = ("../shared/", "tests/", "pipelines/", "docs/")
DROP_ENV = re.compile(r"^(GST_PLUGIN_PATH.*|GST_PLUGIN_SYSTEM_PATH.*|GST_REGISTRY.*|GST_VAE_MODEL_PATH|VAE_.*"
                      r"|PWD|OLDPWD|SHLVL|_)$")

src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
shared = os.path.realpath(os.environ.get("VAE_SHARED_DIR", os.path.join(src, "..", "shared")))
build = os.path.realpath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(src, "build"))
failed = 0


def check(ok, what, detail=""):
    global failed
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok and detail:
        print(detail.rstrip())
    failed += not ok


def code_blocks(text):
    """(line number, language or None for an indented block, the block's text, the line before)"""
    lines = text.split("\n")
    out, i, prev, prev_text = [], 0, "", ""  # prev: the last non-blank line outside code
    while i < len(lines):
        line = lines[i]
        fence = re.match(r"^ {0,3}(`{3,}|~{3,})\s*([\w+-]*)", line)
        if fence:
            mark, lang, start, body = fence.group(1), fence.group(2).lower(), i + 1, []
            i += 1
            while i < len(lines) and not lines[i].lstrip().startswith(mark):
                body.append(lines[i])
                i += 1
            out.append((start, lang, "\n".join(body), prev))
            i += 1
            continue
        # an indented block: after a blank line, outside a list (whose continuations are indented)
        if line.startswith("    ") and line.strip() and (i == 0 or not lines[i - 1].strip()) \
                and not re.match(r"^\s*([-*+]|\d+\.)\s|^\s", prev_text):
            start, body = i + 1, []
            while i < len(lines) and (lines[i].startswith("    ") or not lines[i].strip()):
                body.append(lines[i][4:])
                i += 1
            out.append((start, None, "\n".join(body).rstrip("\n"), prev))
            continue
        if line.strip():
            prev = line
            prev_text = line
        i += 1
    return out


def command_lines(script):
    """the block's commands: continuation lines joined, comments and blank lines left out"""
    joined = re.sub(r"\\\n", " ", script)
    return [ln.strip() for ln in joined.split("\n") if ln.strip() and not ln.strip().startswith("#")]


def shipped_paths(script):
    """paths into the repository or ../shared that a block names (outputs under out/ excluded)"""
    paths = []
    for ln in command_lines(script):
        try:
            tokens = shlex.split(ln, comments=True)
        except ValueError:
            tokens = ln.split()
        for tok in tokens:
            for part in re.split(r"[=:]", tok):
                if part.startswith(SHIPPED) and not re.search(r"[%$*?]", part):
                    paths.append(part)
    return paths


def real_path(p):
    return os.path.join(shared, p[len("../shared/"):]) if p.startswith("../shared/") else os.path.join(src, p)


def slug(heading):
    s = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return s.replace(" ", "-")


def check_links(md):
    """relative links of a markdown file: the file exists, and a #heading in it (only failures
    are printed); the number of links checked"""
    n = 0
    text = open(md).read()
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"^[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(md), path)) if path else md
        name = os.path.relpath(md, src)
        n += 1
        if not os.path.exists(dest):
            check(False, f"{name}: the link ({target}) names a file that does not exist")
            continue
        if anchor and dest.endswith(".md"):
            heads = {slug(h) for h in re.findall(r"^#+\s+(.*)$", re.sub(r"```.*?```", "", open(dest).read(),
                                                                        flags=re.S), re.M)}
            if anchor not in heads:
                check(False, f"{name}: the link ({target}) names a heading that does not exist")
    return n


def fresh_root(tmp):
    """tmp/repo: the source tree by symlinks, build -> this test's build, out/ empty; tmp/shared"""
    root = os.path.join(tmp, "repo")
    os.mkdir(root)
    for name in os.listdir(src):
        if name not in ("build", "out"):
            os.symlink(os.path.join(src, name), os.path.join(root, name))
    os.symlink(build, os.path.join(root, "build"))
    os.mkdir(os.path.join(root, "out"))
    os.symlink(shared, os.path.join(tmp, "shared"))
    return root


def fresh_env(tmp):
    env = {k: v for k, v in os.environ.items() if not DROP_ENV.match(k)}
    home = os.path.join(tmp, "home")
    os.makedirs(os.path.join(home, ".cache"))
    env.update(HOME=home, XDG_CACHE_HOME=os.path.join(home, ".cache"))
    return env


def run_block(script, root, env, tmp):
    """(exit status or 'timeout', output, seconds, the environment the block leaves)"""
    env_out = os.path.join(tmp, "env-after")
    body = f"set -e -o pipefail\n{script}\nenv -0 > '{env_out}'\n"
    t0 = time.monotonic()
    p = subprocess.Popen(["bash", "-c", body], cwd=root, env=env, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
                         start_new_session=True)
    try:
        output, _ = p.communicate(timeout=BLOCK_LIMIT)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        output, _ = p.communicate()
        rc = "timeout"
    seconds = time.monotonic() - t0
    after = env
    if rc == 0 and os.path.exists(env_out):
        after = {}
        for item in open(env_out, "rb").read().decode(errors="replace").split("\0"):
            k, sep, v = item.partition("=")
            if sep and k not in ("PWD", "OLDPWD", "SHLVL", "_"):
                after[k] = v  # (what the block exported, GST_PLUGIN_PATH included)
        os.unlink(env_out)
    return rc, output, seconds, after


def main():
    readme = os.path.join(src, "README.md")
    blocks = code_blocks(open(readme).read())
    print(f"README.md: {len(blocks)} code blocks; build directory {build}; shared {shared}")

    first = [ln for b in blocks if b[1] is None or b[1] in SHELL_LANGS for ln in command_lines(b[2])][:2]
    first = [re.sub(r"\s+#.*$", "", ln).strip() for ln in first]
    check(first == FIRST_LINES, f"the README's first command lines are {FIRST_LINES} (found {first})")

    docs = sorted(os.path.join(src, "docs", f) for f in os.listdir(os.path.join(src, "docs")) if f.endswith(".md"))
    failed_before = failed
    links = sum(check_links(md) for md in [readme] + docs)
    check(failed == failed_before, f"{links} relative links of README.md and docs/*.md: files and headings exist")

    with tempfile.TemporaryDirectory(prefix="test-readme-") as tmp:
        root = fresh_root(tmp)
        env = fresh_env(tmp)
        ran = skipped = 0
        for line, lang, script, before in blocks:
            where = f"README.md:{line}"
            head = next(iter(command_lines(script)), "(empty)")[:90]
            if lang is not None and lang not in SHELL_LANGS:
                print(f"-- {where}: a {lang} block, not a command")
                continue
            for p in shipped_paths(script):
                if not os.path.exists(real_path(p)):
                    check(False, f"{where}: names {p}, which does not exist")
            cmds = command_lines(script)
            if not cmds:
                continue
            if all(SETUP.match(c) for c in cmds):
                print(f"-- {where}: skipped, a setup block (what builds and runs this test): {head}")
                skipped += 1
                continue
            if NEEDS_MODEL_LINE.search(script) or NEEDS_MODEL_COMMENT.search(before):
                print(f"-- {where}: skipped, needs the user's model file: {head}")
                skipped += 1
                continue
            rc, output, seconds, env_after = run_block(script, root, env, tmp)
            ran += 1
            if rc == 0:
                env = env_after
            tail = "\n".join(output.rstrip().split("\n")[-25:])
            error = TOOL_ERROR.search(output)
            if rc == 0 and error:
                rc = f"0 but printed '{error.group(0)}'"
            check(rc == 0, f"{where} ({seconds:.1f} s{', exit ' + str(rc) if rc else ''}): {head}",
                  f"--- the block:\n{script}\n--- its output (last lines):\n{tail}")
        print(f"{ran} blocks ran, {skipped} skipped; out/ holds: "
              f"{' '.join(sorted(os.listdir(os.path.join(root, 'out')))) or 'nothing'}")
        check(ran > 0, "some block ran")
    print(f"{failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
